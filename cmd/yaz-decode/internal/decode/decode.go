// Package decode is yaz-decode's command tree (kong): files and streams
// (the default command), serve and vad-stream (yazsesd's children) and
// devices, each with only its own flags, the old mode flags rewritten
// into them (oldflags.go). A command checks its flags, loads the model on
// its device (device.go) and the voice detector (package voice), and
// hands them to its mode's package: files, stream, serve, vadstream.
// Startup failures are reported as package startup says.
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
	"github.com/yazses/yazses/cmd/yaz-decode/internal/files"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/serve"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/startup"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/stream"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/vadstream"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/voice"
	"github.com/yazses/yazses/lib/cli"
	"github.com/yazses/yazses/lib/devices"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/modelfile"
)

const name = "yaz-decode"

// CLI is yaz-decode's command line: files and streams (the default
// command: no name, as ever), and one command for each supervised mode and
// for the device list, each with only its own flags, so a flag of one mode
// given to another is the parser's usage error. The flags that chose a
// mode before (--serve, --vad-stream, --list-devices) still work for one
// release (oldflags.go).
type CLI struct {
	Decode    DecodeCmd    `cmd:"" name:"transcribe" default:"withargs" hidden:"" help:"Transcribe WAV files, or a PCM or WAV stream on stdin (the default command)."`
	Serve     ServeCmd     `cmd:"" help:"Supervised mode for yazsesd: framed audio on stdin, one JSON result per utterance on stdout, the model resident."`
	VADStream VADStreamCmd `cmd:"" name:"vad-stream" help:"Supervised mode for yazsesd: framed audio on stdin, Silero VAD's speech probability of every 32 ms window on stdout; loads no whisper model."`
	Devices   DevicesCmd   `cmd:"" help:"List every device ggml finds, which one --device auto takes and which one --device takes, then exit."`

	cli.Logging
	Version kong.VersionFlag `help:"Print the version and exit."`
}

// OldFlags are the old mode flags, which --help and the man page list as
// deprecated (lib/cli).
func (*CLI) OldFlags() []cli.OldFlag {
	var out []cli.OldFlag
	for _, m := range oldModes {
		out = append(out, cli.OldFlag{Flag: m.flag, Now: "yaz-decode " + m.cmd})
	}
	return out
}

// DecodeFlags say how the speech model decodes: files, streams and serve.
type DecodeFlags struct {
	Model             string  `short:"m" help:"ggml model file: whisper or Parakeet TDT (the engine is read from the file)." default:"${model}" env:"YAZ_MODEL"`
	Language          string  `short:"l" help:"Spoken language code; other than en needs a multilingual whisper model (auto: detect it). Parakeet: en or auto only." default:"en" env:"YAZ_LANGUAGE"`
	Threads           int     `short:"t" help:"CPU threads for whisper.cpp (0: up to 4)." default:"0" env:"YAZ_THREADS"`
	Device            string  `help:"Where the model runs: auto (the best GPU, discrete before integrated, never a software one; else the CPU), cpu, gpu (the best GPU, a software one too) or gpu:N (N from yaz-decode devices)." default:"auto" env:"YAZ_DEVICE"`
	Prompt            string  `help:"Vocabulary hint: words or names whisper should expect (whisper only)." env:"YAZ_PROMPT"`
	BeamSize          int     `help:"1 is greedy decoding (fastest); 5 is beam search as whisper-cli does by default (whisper only)." default:"1" env:"YAZ_BEAM_SIZE"`
	AudioCtx          string  `help:"Encoder audio context: auto trims it to short utterances, full always uses 1500, or a number of positions (50 a second) (whisper only)." default:"auto"`
	NoFallback        bool    `help:"Disable whisper's temperature fallback (fully deterministic output; Parakeet always is)."`
	NoSpeechThreshold float32 `help:"Drop segments whisper rates as no-speech above this probability (1 keeps all; whisper only)." default:"0.6"`
	VADGate           bool    `help:"Skip decoding audio that holds no speech (files: decode only the speech spans)." default:"true" negatable:""`
}

// Validate refuses settings out of range before anything loads.
func (d *DecodeFlags) Validate() error {
	if d.BeamSize < 0 || d.BeamSize > 16 {
		return cli.Usagef("--beam-size must be between 1 and 16")
	}
	if _, err := audioCtx(d.AudioCtx); err != nil {
		return err
	}
	if d.Threads < 0 {
		return cli.Usagef("--threads must not be negative")
	}
	return checkDevice(d.Device)
}

// audioCtx is --audio-ctx as asr.Options takes it: 0 auto, -1 full, or
// the number of positions.
func audioCtx(s string) (int, error) {
	switch s {
	case "auto", "":
		return 0, nil
	case "full":
		return -1, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > asr.FullAudioCtx {
		return 0, cli.Usagef("--audio-ctx must be auto, full or a number from 1 to %d", asr.FullAudioCtx)
	}
	return n, nil
}

// checkDevice refuses a --device that is no device's spelling.
func checkDevice(spec string) error {
	if err := asr.ParseDevice(spec); err != nil {
		return cli.Usagef("--device: %v", err)
	}
	return nil
}

// VADFlags pick the voice-activity detector: files, streams, serve and
// vad-stream.
type VADFlags struct {
	VAD          string  `help:"Voice-activity detector: auto (Silero when its model file exists, else energy), silero (its model is required) or energy." default:"auto" enum:"auto,silero,energy" env:"YAZ_VAD"`
	VADModel     string  `help:"Silero VAD model file (fetch it with yaz-fetch-model silero-v5.1.2)." default:"${vad_model}" env:"YAZ_VAD_MODEL"`
	VADThreshold float32 `help:"Silero: speech probability that counts as speech, 0.01-0.99 (higher: fewer false starts in noise; lower: softer speech)." default:"0.5" env:"YAZ_VAD_THRESHOLD"`
}

// Validate refuses a threshold out of range (NaN too).
func (v *VADFlags) Validate() error {
	if !(v.VADThreshold >= 0.01 && v.VADThreshold <= 0.99) {
		return cli.Usagef("--vad-threshold must be between 0.01 and 0.99")
	}
	return nil
}

// UtteranceFlags cut a stream into utterances (stream mode), and say
// whether a served utterance holds speech.
type UtteranceFlags struct {
	MinSpeech  duration `help:"Stream mode and serve: shortest speech that opens an utterance." default:"120ms"`
	MinSilence duration `help:"Stream mode and serve: silence that ends an utterance." default:"600ms"`
}

// DecodeCmd is the default command: WAV files, or a stream on stdin.
type DecodeCmd struct {
	Files []string `arg:"" optional:"" name:"file" help:"WAV files to transcribe; none: read a PCM or WAV stream on stdin."`
	DecodeFlags
	VADFlags
	FormatFlags
	OutputDir   string   `help:"Write one transcript per input file into this folder (created if missing) instead of stdout." type:"path"`
	Progress    string   `help:"Progress bar on stderr for files: auto (when stderr is a terminal), always or never." default:"auto" enum:"auto,always,never"`
	MaxDuration duration `help:"Refuse files longer than this." default:"4h"`
	PromptStdin bool     `name:"prompt-stdin" help:"Files: read the vocabulary hint as one 'P' frame on stdin (as serve takes one), so that it is on no command line that other users can read; replaces --prompt."`
	UtteranceFlags
}

// Validate refuses what the flags cannot mean together. kong validates
// before its AfterApply hooks, so the old spellings of the format are
// read here too.
func (d *DecodeCmd) Validate() error {
	f, err := oldFormat(d.Output, d.OldOutput, d.JSON, formats...)
	if err != nil {
		return err
	}
	if len(d.Files) > 1 && d.OutputDir == "" && f != "txt" && f != "json" {
		return cli.Usagef("--format %s of several files needs --output-dir", f)
	}
	if d.PromptStdin && len(d.Files) == 0 {
		return cli.Usagef("--prompt-stdin needs files as arguments: stdin carries the prompt, not audio")
	}
	return nil
}

// ServeCmd is the daemon's resident decoder.
type ServeCmd struct {
	DecodeFlags
	VADFlags
	UtteranceFlags
}

// VADStreamCmd is the daemon's Silero child.
type VADStreamCmd struct {
	VADFlags
}

// Validate refuses the energy detector: it has no probabilities.
func (v *VADStreamCmd) Validate() error {
	if v.VAD == "energy" {
		return cli.Usagef("it reports Silero VAD's probabilities: --vad energy has none (use auto or silero)") // kong puts "vad-stream: " before it
	}
	return nil
}

// DevicesCmd lists the devices.
type DevicesCmd struct {
	Model     string `short:"m" help:"ggml model file: a GPU it does not fit is passed over, as a decode would." default:"${model}" env:"YAZ_MODEL"`
	Device    string `help:"Also name the device this --device takes (auto, cpu, gpu or gpu:N); none is the error, exit 1." default:"auto" env:"YAZ_DEVICE"`
	Output    string `name:"format" short:"f" help:"txt: a table; json: one JSON object (what yazsesd config check reads). -o/--output and --json, the old spellings, still work." default:"txt" enum:"txt,json"`
	OldOutput string `name:"output" short:"o" hidden:"" help:"The old spelling of --format."`
	JSON      bool   `hidden:"" help:"The old spelling of --format json."`
}

// AfterApply makes the old spellings of the format mean what --format
// does, as for files.
func (d *DevicesCmd) AfterApply() error {
	f, err := oldFormat(d.Output, d.OldOutput, d.JSON, "txt", "json")
	d.Output, d.JSON = f, f == "json"
	return err
}

// Validate refuses a --device that is no device's spelling.
func (d *DevicesCmd) Validate() error { return checkDevice(d.Device) }

type duration = time.Duration

// settings are what a command works with: the flags of its command (the
// others at their zero values), and what the run finds out on the way;
// its mode gets them as its package's Config.
type settings struct {
	Files []string
	DecodeFlags
	VADFlags
	UtteranceFlags
	FormatFlags
	OutputDir   string
	Progress    string
	MaxDuration duration
	cli.Logging

	framed   bool            // serve mode: frames on stdin
	audioCtx int             // --audio-ctx as asr.Options takes it
	lang     string          // the language the model decodes for --language ("auto": detected)
	det      *voice.Detector // the voice-activity detector; nil: none needed
	dev      asr.Device      // where the model loaded (serve says so on its readiness line)
	devNotes []string        // why a GPU backend installed is not available (asr.Notes; the readiness line too)
	// devWarning: the device is not what --device meant (asr.SelectDeviceFor; the readiness line too)
	devWarning string
	// promptUnused, when set, is called for a prompt the engine has no use
	// for (a Prompt frame under serve with a Parakeet model).
	promptUnused func()
}

// env is what every command runs with: the process's streams and its one
// logger.
type env struct {
	ctx    context.Context
	log    *slog.Logger
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	logs   cli.Logging
}

// command is a command of the grammar: its Run, and what exit needs to
// report its failure (contract 2).
type command interface {
	Run(e *env) error
	// supervised: the mode runs only under yazsesd (serve, vad-stream).
	supervised() bool
	// model is the whisper model the command loads, named in a startup
	// failure's message ("" for none).
	model() string
}

// Main runs yaz-decode and returns its exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	args, err := commandArgs(args) // oldflags.go: --serve is serve
	if err != nil {
		return cli.Report(name, stderr, err)
	}
	var c CLI
	k, code, done := cli.Parse(name, "Speech to text with whisper.cpp (whisper or Parakeet TDT models), offline.", &c, args, stdout, stderr,
		kong.Vars{"model": modelfile.DefaultPath(), "vad_model": modelfile.DefaultVADPath()})
	if done {
		return code
	}
	var cmd command
	if sel := k.Selected(); sel != nil {
		cmd, _ = sel.Target.Addr().Interface().(command)
	}
	if cmd == nil {
		return cli.Report(name, stderr, fmt.Errorf("no command selected (%q)", k.Command()))
	}
	log := c.Logger(stderr)
	underSupervisor := startup.Supervised(cmd.supervised())
	return startup.Exit(name, log, stderr, underSupervisor, cmd.model(), cmd.Run(&env{ctx: ctx, log: log, stdin: stdin, stdout: stdout, stderr: stderr, logs: c.Logging}))
}

func (*DecodeCmd) supervised() bool    { return false }
func (*ServeCmd) supervised() bool     { return true }
func (*VADStreamCmd) supervised() bool { return true }
func (*DevicesCmd) supervised() bool   { return false }

func (d *DecodeCmd) model() string  { return d.Model }
func (s *ServeCmd) model() string   { return s.Model }
func (*VADStreamCmd) model() string { return "" }
func (d *DevicesCmd) model() string { return d.Model }

// Run transcribes the files, or the stream on stdin.
func (d *DecodeCmd) Run(e *env) error {
	c := &settings{Files: d.Files, DecodeFlags: d.DecodeFlags, VADFlags: d.VADFlags, UtteranceFlags: d.UtteranceFlags,
		FormatFlags: d.FormatFlags, OutputDir: d.OutputDir, Progress: d.Progress, MaxDuration: d.MaxDuration, Logging: e.logs}
	if len(c.Files) == 0 && cli.IsTerminal(e.stdin) {
		return cli.Usagef("no input: give WAV files as arguments, or pipe audio in (yaz-capture | yaz-decode)")
	}
	if d.PromptStdin {
		p, err := readPrompt(e.stdin)
		if err != nil {
			return err
		}
		c.Prompt = p
	}
	if err := c.checkOutputDir(); err != nil {
		return err
	}
	m, err := c.load(e.log)
	if err != nil {
		return err
	}
	defer m.Close()
	defer c.det.Close()
	if len(c.Files) == 0 {
		s := stream.Config{Options: c.options(), JSON: c.JSON, Detector: c.det, VAD: c.vadConfig()}
		return s.Run(e.ctx, e.log, m, e.stdin, e.stdout)
	}
	if err := c.makeOutputDir(); err != nil {
		return err
	}
	f := files.Config{Files: c.Files, Output: c.Output, OutputDir: c.OutputDir, Progress: c.Progress, MaxDuration: c.MaxDuration,
		Options: c.options(), Lang: c.lang, VADGate: c.VADGate, Detector: c.det, VAD: c.vadConfig()}
	return f.Run(e.ctx, e.log, m, e.stdout, e.stderr)
}

// Run serves framed utterances with the model resident.
func (s *ServeCmd) Run(e *env) error {
	c := &settings{DecodeFlags: s.DecodeFlags, VADFlags: s.VADFlags, UtteranceFlags: s.UtteranceFlags, Logging: e.logs, framed: true}
	m, err := c.load(e.log)
	if err != nil {
		return err
	}
	defer m.Close()
	defer c.det.Close()
	sc := serve.Config{Options: c.options(), VADGate: c.VADGate, Detector: c.det, VAD: c.vadConfig(),
		Ready: devices.Ready{Device: info(c.dev), Notes: c.devNotes, Warning: c.devWarning}, PromptUnused: c.promptUnused}
	return sc.Run(e.ctx, e.log, m, e.stdin, e.stdout)
}

// Run answers Silero's probabilities for framed audio.
func (v *VADStreamCmd) Run(e *env) error {
	c := &settings{VADFlags: v.VADFlags, Logging: e.logs}
	asr.NoGPU() // Silero runs on the CPU: no Vulkan driver started for it
	// No whisper model: Silero's alone.
	return vadstream.Run(e.ctx, e.log, c.vadConfig(), e.stdin, e.stdout)
}

// Run lists the devices.
func (d *DevicesCmd) Run(e *env) error {
	return listDevices(e.log, e.stdout, d.Model, d.Device, d.Output == "json") // device.go
}

// load checks and loads the model on its device, checks the language,
// and opens the voice detector (which the caller closes with the model).
// A mode that needs none (files or serve with --no-vad-gate) gets none
// (nil); a stream on stdin always has one.
func (c *settings) load(log *slog.Logger) (*asr.Model, error) {
	c.audioCtx, _ = audioCtx(c.AudioCtx) // checked by Validate
	if c.Language != "en" && c.Language != "" {
		log.Debug("language requested", "language", c.Language)
	}
	start := time.Now()
	if err := startup.CheckModel(c.Model); err != nil { // before whisper.cpp sees the file
		return nil, err
	}
	dev, err := c.device(log) // device.go
	if err != nil {
		return nil, err
	}
	m, err := asr.LoadOn(c.Model, dev, log)
	if err != nil {
		return nil, err
	}
	c.dev = m.Device()
	c.devNotes = asr.Notes()
	if c.lang, err = m.Language(c.Language); err != nil {
		parakeet := m.Engine() == asr.Parakeet
		m.Close()
		if parakeet {
			return nil, err
		}
		return nil, fmt.Errorf("%w; use -l en, or a multilingual model (one without .en in its name, e.g. ggml-base.bin)", err)
	}
	if c.Language == "auto" && m.Features().Language && !m.Multilingual() {
		log.Warn("--language auto needs a multilingual model; this one is English-only: decoding English")
	}
	c.warnUnsupported(log, m.Features())
	log.Debug("model loaded", "ms", time.Since(start).Milliseconds(), "engine", m.Engine(), "multilingual", m.Multilingual())
	live := len(c.Files) == 0 && !c.framed
	if !live && !c.VADGate {
		return m, nil
	}
	if c.det, err = voice.Open(log, c.vadConfig(), live); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

func (c *settings) options() asr.Options {
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

// vadConfig is the voice detector's settings.
func (c *settings) vadConfig() voice.Config {
	return voice.Config{VAD: c.VAD, Model: c.VADModel, Threshold: c.VADThreshold,
		MinSpeech: c.MinSpeech, MinSilence: c.MinSilence, Verbose: c.Debug()}
}

// warnUnsupported says, once each, which settings given differ from their
// defaults but mean nothing to the model's engine (a Parakeet model has no
// prompt, beam search, audio context or no-speech threshold): decoding goes
// on without them, and the person is told so rather than left to believe
// they applied. A vocabulary prompt sent later in a Prompt frame (--serve)
// is reported the same way, once.
func (c *settings) warnUnsupported(log *slog.Logger, f asr.Features) {
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
func (c *settings) checkOutputDir() error {
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
func (c *settings) makeOutputDir() error {
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
