// Package decode is the yaz-decode command: files, stream and serve modes
// around an asr.Model.
package decode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/asr"
	"github.com/yazses/yazses/lib/cli"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/modelfile"
	"github.com/yazses/yazses/lib/vad"
)

const name = "yaz-decode"

// CLI is yaz-decode's command line.
type CLI struct {
	Files []string `arg:"" optional:"" name:"file" help:"WAV files to transcribe; none: read a PCM or WAV stream on stdin."`

	Model             string   `short:"m" help:"ggml model file: whisper or Parakeet TDT (the engine is read from the file)." default:"${model}" env:"YAZ_MODEL"`
	Language          string   `short:"l" help:"Spoken language code; other than en needs a multilingual whisper model (auto: detect it). Parakeet: en or auto only." default:"en" env:"YAZ_LANGUAGE"`
	Threads           int      `short:"t" help:"CPU threads for whisper.cpp (0: up to 4)." default:"0" env:"YAZ_THREADS"`
	Device            string   `help:"Where the model runs: auto (the best GPU, discrete before integrated, never a software one; else the CPU), cpu, gpu (the best GPU, a software one too) or gpu:N (N from --list-devices)." default:"auto" env:"YAZ_DEVICE"`
	ListDevices       bool     `help:"List every device ggml finds (index, backend, name, kind, memory), which one auto takes and which one --device takes, then exit (-f json: one JSON object)."`
	Prompt            string   `help:"Vocabulary hint: words or names whisper should expect (whisper only)." env:"YAZ_PROMPT"`
	PromptStdin       bool     `name:"prompt-stdin" help:"Files: read the vocabulary hint as one 'P' frame on stdin (as --serve takes one), so that it is on no command line that other users can read; replaces --prompt."`
	BeamSize          int      `help:"1 is greedy decoding (fastest); 5 is beam search as whisper-cli does by default (whisper only)." default:"1" env:"YAZ_BEAM_SIZE"`
	AudioCtx          string   `help:"Encoder audio context: auto trims it to short utterances, full always uses 1500, or a number of positions (50 a second) (whisper only)." default:"auto"`
	NoFallback        bool     `help:"Disable whisper's temperature fallback (fully deterministic output; Parakeet always is)."`
	NoSpeechThreshold float32  `help:"Drop segments whisper rates as no-speech above this probability (1 keeps all; whisper only)." default:"0.6"`
	VADGate           bool     `help:"Skip decoding audio that holds no speech (files: decode only the speech spans)." default:"true" negatable:""`
	VAD               string   `help:"Voice-activity detector: auto (Silero when its model file exists, else energy), silero (its model is required) or energy." default:"auto" enum:"auto,silero,energy" env:"YAZ_VAD"`
	VADModel          string   `help:"Silero VAD model file (fetch it with yaz-fetch-model silero-v5.1.2)." default:"${vad_model}" env:"YAZ_VAD_MODEL"`
	VADThreshold      float32  `help:"Silero: speech probability that counts as speech, 0.01-0.99 (higher: fewer false starts in noise; lower: softer speech)." default:"0.5" env:"YAZ_VAD_THRESHOLD"`
	Output            string   `name:"format" short:"f" help:"Output format: txt, json, srt or vtt (files); txt or json, one object per utterance (stream mode). -o/--output and --json, the old spellings, still work." default:"txt" enum:"txt,json,srt,vtt"`
	OldOutput         string   `name:"output" short:"o" hidden:"" help:"The old spelling of --format."`
	OutputDir         string   `help:"Write one transcript per input file into this folder (created if missing) instead of stdout." type:"path"`
	JSON              bool     `hidden:"" help:"Stream mode: print one JSON object per utterance (the old spelling of --format json)."`
	Serve             bool     `help:"Supervised mode for yazsesd: framed audio on stdin, JSON results on stdout."`
	VADStream         bool     `name:"vad-stream" help:"Supervised mode for yazsesd: framed audio on stdin, Silero VAD's speech probability of every 32 ms window on stdout (lines \"P FIRST PROB...\" and \"E N\"); needs the Silero model, loads no whisper model."`
	Progress          string   `help:"Progress bar on stderr for files: auto (when stderr is a terminal), always or never." default:"auto" enum:"auto,always,never"`
	MaxDuration       duration `help:"Refuse files longer than this." default:"4h"`
	MinSpeech         duration `help:"Stream mode: shortest speech that opens an utterance." default:"120ms"`
	MinSilence        duration `help:"Stream mode: silence that ends an utterance." default:"600ms"`

	cli.Logging
	Version kong.VersionFlag `help:"Print the version and exit."`

	audioCtx int
	lang     string     // the language the model decodes for --language ("auto": detected)
	det      *detector  // the voice-activity detector (vad.go); nil: energy
	dev      asr.Device // where the model loaded (--serve says so on its readiness line)
	devNotes []string   // why a GPU backend installed is not available (asr.Notes; the readiness line too)
	// promptUnused, when set, is called for a prompt the engine has no use
	// for (a Prompt frame under --serve with a Parakeet model).
	promptUnused func()
}

type duration = time.Duration

// Recognizer is what the modes need of a model; a fake stands in for it in
// unit tests.
type Recognizer interface {
	Transcribe(ctx context.Context, samples []float32, opt asr.Options) (asr.Result, error)
}

// Main runs yaz-decode and returns its exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var c CLI
	_, code, done := cli.Parse(name, "Speech to text with whisper.cpp (whisper or Parakeet TDT models), offline.", &c, args, stdout, stderr,
		kong.Vars{"model": modelfile.DefaultPath(), "vad_model": modelfile.DefaultVADPath()})
	if done {
		return code
	}
	log := c.Logger(stderr)
	underSupervisor := supervised(c.Serve || c.VADStream)
	return exit(log, stderr, underSupervisor, c.Model, c.run(ctx, log, stdin, stdout, stderr))
}

func (c *CLI) options() asr.Options {
	return asr.Options{
		Language:          c.Language,
		Threads:           c.Threads,
		Prompt:            c.Prompt,
		BeamSize:          c.BeamSize,
		AudioCtx:          c.audioCtx,
		NoFallback:        c.NoFallback,
		NoSpeechThreshold: c.NoSpeechThreshold,
	}
}

func (c *CLI) vadConfig() vad.Config {
	v := vad.DefaultConfig()
	v.MinSpeech = c.MinSpeech
	v.MinSilence = c.MinSilence
	return v
}

func (c *CLI) run(ctx context.Context, log *slog.Logger, stdin io.Reader, stdout, stderr io.Writer) error {
	if c.Serve && len(c.Files) > 0 {
		return cli.Usagef("--serve reads frames on stdin and takes no files")
	}
	if c.PromptStdin {
		if len(c.Files) == 0 || c.Serve || c.VADStream {
			return cli.Usagef("--prompt-stdin needs files as arguments: stdin carries the prompt, not audio")
		}
		p, err := readPrompt(stdin)
		if err != nil {
			return err
		}
		c.Prompt = p
	}
	if c.BeamSize < 0 || c.BeamSize > 16 {
		return cli.Usagef("--beam-size must be between 1 and 16")
	}
	switch c.AudioCtx {
	case "auto", "":
		c.audioCtx = 0
	case "full":
		c.audioCtx = -1
	default:
		n, err := strconv.Atoi(c.AudioCtx)
		if err != nil || n < 1 || n > asr.FullAudioCtx {
			return cli.Usagef("--audio-ctx must be auto, full or a number from 1 to %d", asr.FullAudioCtx)
		}
		c.audioCtx = n
	}
	if c.Threads < 0 {
		return cli.Usagef("--threads must not be negative")
	}
	if !(c.VADThreshold >= 0.01 && c.VADThreshold <= 0.99) { // NaN too
		return cli.Usagef("--vad-threshold must be between 0.01 and 0.99")
	}
	if err := asr.ParseDevice(c.Device); err != nil {
		return cli.Usagef("--device: %v", err)
	}
	if c.ListDevices {
		return c.listDevices(log, stdout) // device.go
	}
	if c.VADStream {
		if err := c.checkVADStream(); err != nil {
			return err
		}
		asr.NoGPU()                                 // Silero runs on the CPU: no Vulkan driver started for it
		return c.vadStream(ctx, log, stdin, stdout) // vadstream.go: no whisper model
	}
	if len(c.Files) == 0 && !c.Serve && cli.IsTerminal(stdin) {
		return cli.Usagef("no input: give WAV files as arguments, or pipe audio in (yaz-capture | yaz-decode)")
	}
	if len(c.Files) > 0 && c.OutputDir == "" && c.Output != "txt" && c.Output != "json" && len(c.Files) > 1 {
		return cli.Usagef("--output %s of several files needs --output-dir", c.Output)
	}
	if err := c.checkOutputDir(); err != nil {
		return err
	}
	if c.Language != "en" && c.Language != "" {
		log.Debug("language requested", "language", c.Language)
	}
	start := time.Now()
	if err := checkModel(c.Model); err != nil { // cause.go: before whisper.cpp sees the file
		return err
	}
	dev, err := c.device(log) // device.go
	if err != nil {
		return err
	}
	m, err := asr.LoadOn(c.Model, dev, log)
	if err != nil {
		return err
	}
	defer m.Close()
	c.dev = m.Device()
	c.devNotes = asr.Notes()
	if c.lang, err = m.Language(c.Language); err != nil {
		if m.Engine() == asr.Parakeet {
			return err
		}
		return fmt.Errorf("%w; use -l en, or a multilingual model (one without .en in its name, e.g. ggml-base.bin)", err)
	}
	if c.Language == "auto" && m.Features().Language && !m.Multilingual() {
		log.Warn("--language auto needs a multilingual model; this one is English-only: decoding English")
	}
	c.warnUnsupported(log, m.Features())
	log.Debug("model loaded", "ms", time.Since(start).Milliseconds(), "engine", m.Engine(), "multilingual", m.Multilingual())
	if c.det, err = c.openDetector(log); err != nil { // vad.go
		return err
	}
	defer c.det.Close()
	switch {
	case c.Serve:
		return c.serve(ctx, log, m, stdin, stdout)
	case len(c.Files) > 0:
		if err := c.makeOutputDir(); err != nil {
			return err
		}
		return c.files(ctx, log, m, stdout, stderr)
	default:
		return c.stream(ctx, log, m, stdin, stdout)
	}
}

// warnUnsupported says, once each, which settings given differ from their
// defaults but mean nothing to the model's engine (a Parakeet model has no
// prompt, beam search, audio context or no-speech threshold): decoding goes
// on without them, and the person is told so rather than left to believe
// they applied. A vocabulary prompt sent later in a Prompt frame (--serve)
// is reported the same way, once.
func (c *CLI) warnUnsupported(log *slog.Logger, f asr.Features) {
	const why = "not supported with a Parakeet model: ignored"
	if !f.Prompt {
		if c.Prompt != "" {
			log.Warn("--prompt is "+why, "setting", "prompt")
		}
		warned := false
		c.promptUnused = func() {
			if !warned {
				warned = true
				log.Warn("a vocabulary prompt (dictation.prompt) is "+why, "setting", "prompt")
			}
		}
	}
	if !f.BeamSearch && c.BeamSize > 1 {
		log.Warn("--beam-size is "+why+" (Parakeet decodes greedily)", "setting", "beam_size")
	}
	if !f.AudioCtx && c.audioCtx != 0 {
		log.Warn("--audio-ctx is "+why, "setting", "audio_ctx")
	}
	if !f.NoSpeech && c.NoSpeechThreshold != defaultNoSpeech {
		log.Warn("--no-speech-threshold is "+why, "setting", "no_speech_threshold")
	}
}

// defaultNoSpeech is --no-speech-threshold's default.
const defaultNoSpeech = 0.6

// checkOutputDir refuses an --output-dir that exists and is not a folder,
// before anything is loaded.
func (c *CLI) checkOutputDir() error {
	if c.OutputDir == "" {
		return nil
	}
	st, err := os.Stat(c.OutputDir)
	switch {
	case err == nil && !st.IsDir():
		return cli.Usagef("--output-dir %s exists and is not a folder", c.OutputDir)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("--output-dir %s: %w", c.OutputDir, err)
	}
	return nil
}

// makeOutputDir creates a missing --output-dir and its parents (0755, as
// mkdir -p does).
func (c *CLI) makeOutputDir() error {
	if c.OutputDir == "" {
		return nil
	}
	if err := os.MkdirAll(c.OutputDir, 0o755); err != nil {
		return fmt.Errorf("--output-dir %s: %w", c.OutputDir, err)
	}
	return nil
}

// readPrompt reads the vocabulary hint of --prompt-stdin: one Prompt frame
// (package lib/frame), invalid UTF-8 dropped as --serve drops it. Nothing
// but a Prompt frame is accepted; what follows it is not read.
func readPrompt(r io.Reader) (string, error) {
	f, err := frame.NewReader(r).Next()
	if err != nil {
		return "", fmt.Errorf("--prompt-stdin: read the prompt frame: %w", err)
	}
	if f.Type != frame.Prompt {
		return "", fmt.Errorf("--prompt-stdin: a %q frame on stdin, want %q", f.Type, frame.Prompt)
	}
	return strings.ToValidUTF8(string(f.Payload), ""), nil
}
