// Package asr is speech recognition with whisper.cpp: two engines from the
// one source, Whisper and NVIDIA's Parakeet TDT.
//
// A Model is loaded once and transcribes 16 kHz mono float32 audio. Load
// tells the engine from the file itself (package modelfile reads its
// header), never from its name. Both engines give segments with times on
// the input's timeline and their text; what else an engine does is in
// Features: language selection, the vocabulary prompt, beam search, the
// audio context and the no-speech threshold are whisper's alone, and
// Transcribe does not apply them to a Parakeet model. A caller that lets a
// person set them says so (yaz-decode warns, or refuses a language).
//
// Whisper: for short
// utterances it trims whisper's audio context to the audio's length (the
// encoder's cost is linear in it: 50 positions a second of a 1500-position,
// 30-second window), keeping a safety margin, and decodes again with the full
// context when the trimmed result looks degenerate (a token repeated over and
// over, or no end of text).
//
// Parakeet: greedy TDT decoding as parakeet-cli does it, on chunks of at
// most the file's audio context (n_audio_ctx mel frames of 10 ms, 50 s in
// the converted models), cut at the quietest 100 ms of each chunk's last
// quarter (lib/piece's cut); token times are moved onto the input's
// timeline, and the tokens are cut into segments at sentence ends, pauses
// and every 10 s (chunks.go).
//
// Every call (every Parakeet chunk) decodes on a state of its own, so a
// transcript is a function of the audio and the options only, never of
// what the model decoded before (see Model.Transcribe). A call stops within
// one graph node of its context being done. whisper.cpp's own log lines
// become slog records at debug level.
//
// whisper.cpp's Go bindings serve the context queries they wrap (language
// ids, multilingual or not, free); loading, the state API, the abort flag,
// progress and the log hook are cgo here (cgo.go, yaz.c). It is the only cgo
// package for speech recognition; nothing here logs transcript text.
package asr

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	whisper "github.com/ggerganov/whisper.cpp/bindings/go"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/transcript"
	"github.com/yazses/yazses/lib/modelfile"
	"github.com/yazses/yazses/lib/pcm"
)

// FullAudioCtx is whisper's full audio context: 30 s as 1500 positions.
const FullAudioCtx = 1500

// positionSamples is how many 16 kHz samples one encoder position covers.
const positionSamples = pcm.SampleRate / 50

// ErrModelMissing reports a model file that does not exist.
var ErrModelMissing = errors.New("model file not found")

// ErrModelInvalid reports a file whisper.cpp could not load as a model.
var ErrModelInvalid = errors.New("not a whisper or Parakeet model")

// ErrLanguageUnsupported reports a language the model cannot transcribe:
// any but English on an English-only model, or a code whisper does not
// know. Such a model would decode English and the output would claim the
// language asked for. A Parakeet model has no language selection: any
// language but "en" (the default) and "auto" is this error too.
var ErrLanguageUnsupported = errors.New("language not supported by the model")

// Options control one transcription. A Parakeet model uses Threads and
// Progress only; Language must be "", "en" or "auto" (see Features).
type Options struct {
	Language string // "en" (default), another code, or "auto" on multilingual models
	Threads  int    // 0: up to 4, as many as there are CPUs
	Prompt   string // initial prompt: a vocabulary hint
	BeamSize int    // 0 or 1: greedy; more: beam search of that width
	// AudioCtx fixes the audio context (1..1500); 0 lets Transcribe trim it for
	// short audio, -1 forces the full context.
	AudioCtx int
	// NoFallback disables whisper's temperature fallback (deterministic
	// greedy decoding, as whisper-cli -nf).
	NoFallback bool
	// NoSpeechThreshold drops segments whose no-speech probability is above
	// it (on top of whisper's own no-speech rule, which also weighs the
	// segment's log probability); 0 means 0.6, 1 or more keeps every segment.
	NoSpeechThreshold float32
	// Progress, if set, receives whisper's progress in percent, always
	// within 0–100, from the goroutine that called Transcribe.
	Progress func(percent int)
	// TokenTimes fills each segment's Tokens: its text tokens with their
	// times (whisper's token-level timestamps; Parakeet's token times).
	// The text is the same either way.
	TokenTimes bool

	warmUp      bool  // WarmUp: one segment of at most one token
	abortAfter  int64 // tests: abort at this many checks inside graphs on a GPU backend
	deviceNodes int64 // tests: nodes between two checks on a GPU backend (0: 64)
}

// errTestAbort is what a call aborted by Options.abortAfter returns.
var errTestAbort = errors.New("aborted by the test hook")

// Result is one transcription.
type Result struct {
	Segments []transcript.Segment
	// Language is the language decoded: the one asked for, or the one
	// detected for "auto"; empty from a Parakeet model, which does not say.
	Language string
	AudioCtx int  // the audio context used for the kept result (0 = full)
	Retried  bool // a trimmed context looked degenerate and was decoded again in full
}

// Text is the whole transcript on one line.
func (r Result) Text() string { return transcript.Text(r.Segments) }

// Engine names a speech recognition engine.
type Engine string

// The engines of whisper.cpp 1.9.1.
const (
	Whisper  Engine = "whisper"
	Parakeet Engine = "parakeet"
)

// Features say which settings of Options an engine applies beyond Threads
// and Progress.
type Features struct {
	Language   bool // Language selects (or detects) the spoken language
	Prompt     bool // Prompt, a vocabulary hint
	BeamSearch bool // BeamSize above 1
	AudioCtx   bool // AudioCtx
	NoSpeech   bool // NoSpeechThreshold
	Fallback   bool // temperature fallback (NoFallback turns it off)
}

// Model is a loaded whisper or Parakeet model. It is safe for concurrent
// use; calls to Transcribe run one at a time.
type Model struct {
	mu           sync.Mutex
	engine       Engine
	ctx          *whisper.Context // whisper
	pk           *parakeetCtx     // Parakeet
	path         string
	device       Device
	multilingual bool
}

// Device reports the device the model was loaded on.
func (m *Model) Device() Device { return m.device }

// Load loads a ggml whisper or Parakeet TDT model, the engine told from the
// file's header. whisper.cpp's and ggml's own log lines go to log as debug
// records from then on (for the whole process: the last Load decides); nil
// discards them. Nothing of whisper.cpp's reaches stderr directly.
func Load(path string, log *slog.Logger) (*Model, error) {
	return LoadOn(path, Device{}, log)
}

// LoadOn is Load with the model's weights and compute on dev (see
// SelectDevice); the zero Device is the CPU. The device changes how fast
// a model decodes, never the form of what it gives.
func LoadOn(path string, dev Device, log *slog.Logger) (*Model, error) {
	setLogger(log)
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("load model %s: %w", path, ErrModelMissing)
	}
	if err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("load model %s: not a regular file: %w", path, ErrModelInvalid)
	}
	// whisper.cpp aborts the process on some broken files (a GGML_ASSERT):
	// only a file whose headers and tensors check out reaches it.
	info, err := modelfile.Inspect(path)
	if err != nil {
		return nil, fmt.Errorf("load model: %w: %w", ErrModelInvalid, err)
	}
	switch info.Kind {
	case modelfile.KindWhisper:
		ctx := initContext(path, dev)
		if ctx == nil {
			return nil, fmt.Errorf("load model %s: %w", path, ErrModelInvalid)
		}
		return &Model{engine: Whisper, ctx: ctx, path: path, device: dev, multilingual: ctx.Whisper_is_multilingual() != 0}, nil
	case modelfile.KindParakeet:
		pk := loadParakeet(path, dev)
		if pk == nil {
			return nil, fmt.Errorf("load model %s: %w", path, ErrModelInvalid)
		}
		return &Model{engine: Parakeet, pk: pk, path: path, device: dev}, nil
	}
	return nil, fmt.Errorf("load model %s: a %s: %w", path, info.Describe(), ErrModelInvalid)
}

// Engine reports the model's engine.
func (m *Model) Engine() Engine { return m.engine }

// Features reports which settings of Options the model's engine applies.
func (m *Model) Features() Features {
	if m.engine == Parakeet {
		return Features{}
	}
	return Features{Language: true, Prompt: true, BeamSearch: true, AudioCtx: true, NoSpeech: true, Fallback: true}
}

// Multilingual reports whether a whisper model knows languages other than
// English. A Parakeet model has no language setting and reports false.
func (m *Model) Multilingual() bool { return m.multilingual }

// Language is the code the model decodes when asked for lang (a code or
// an English name, any case): "en" for "" and, on an English-only model,
// for "auto"; "auto" on a multilingual one (the language is then detected
// per call). A language the model cannot transcribe is an error wrapping
// ErrLanguageUnsupported. A Parakeet model transcribes whatever language
// it hears: "auto" for "", "en" (the default) and "auto"; any other
// language is the error.
func (m *Model) Language(lang string) (string, error) {
	l := strings.ToLower(strings.TrimSpace(lang))
	if m.engine == Parakeet {
		switch l {
		case "", "en", "english", "auto":
			return "auto", nil
		}
		return "", fmt.Errorf("%w: language %q: a Parakeet model has no language selection (it transcribes the language it hears: v3 25 European languages, v2 English); leave the language at en or set auto",
			ErrLanguageUnsupported, lang)
	}
	switch {
	case l == "":
		return "en", nil
	case l == "auto" && !m.multilingual:
		return "en", nil
	case l == "auto":
		return "auto", nil
	}
	id := m.ctx.Whisper_lang_id(l)
	switch {
	case id < 0:
		return "", fmt.Errorf("%w: unknown language %q", ErrLanguageUnsupported, lang)
	case id != 0 && !m.multilingual:
		return "", fmt.Errorf("%w: language %q needs a multilingual model, and %s is English-only", ErrLanguageUnsupported, lang, filepath.Base(m.path))
	}
	return langStr(id), nil
}

// Close frees the model.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx != nil {
		m.ctx.Whisper_free()
		m.ctx = nil
	}
	if m.pk != nil {
		m.pk.free()
		m.pk = nil
	}
	return nil
}

// DefaultThreads is the thread count used when Options.Threads is 0.
func DefaultThreads() int { return min(4, runtime.NumCPU()) }

// TrimmedAudioCtx is the audio context Transcribe uses for n samples when
// trimming: the positions the audio covers plus a margin of 64 positions
// (1.28 s), rounded up to a multiple of 64; 0 (full) from about 27 s on.
func TrimmedAudioCtx(n int) int {
	pos := (n + positionSamples - 1) / positionSamples
	c := (pos + 64 + 63) / 64 * 64
	if c >= FullAudioCtx-64 {
		return 0
	}
	return c
}

// Transcribe decodes samples (16 kHz mono float32 in [-1, 1]). Once ctx is
// done, whisper stops at its next check, after at most one graph node, and
// Transcribe returns ctx.Err(); a call that finished before whisper saw the
// cancel returns its whole result.
//
// A Parakeet model decodes long input in chunks, each on a fresh state
// (see the package comment); audio under 20 ms gives no segment.
//
// Each whisper call runs on a fresh whisper state. whisper.cpp 1.9.1 runs
// cross-attention with flash attention over the audio context padded to a
// multiple of 256 without a mask, and lays out its cross-attention cache
// with that padded stride: on a reused state, the padding rows still hold
// keys and values of an earlier call with another (trimmed) context, and
// the same audio gave different text after a long or a short file. A state
// costs 4–12 ms to make with a tiny.en-sized model and 5–20 ms with a
// base.en-sized one (the first of a process the most), against 90–400 ms
// for decoding 3–11 s of audio on 2 threads; turning flash attention off
// instead made decoding 2–4 times slower (11 s of audio: 0.21 s → 0.43 s
// tiny.en, 0.38 s → 0.80 s base.en).
func (m *Model) Transcribe(ctx context.Context, samples []float32, opt Options) (Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx == nil && m.pk == nil {
		return Result{}, errors.New("transcribe: model closed")
	}
	lang, err := m.Language(opt.Language)
	if err != nil {
		return Result{}, fmt.Errorf("transcribe: %w", err)
	}
	if m.pk != nil {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		return m.pk.transcribe(ctx, samples, opt)
	}
	if len(samples) == 0 {
		return Result{Language: lang}, nil
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	samples = padShort(samples)
	actx := opt.AudioCtx
	switch {
	case actx == 0:
		actx = TrimmedAudioCtx(len(samples))
	case actx < 0 || actx > FullAudioCtx:
		actx = 0
	}
	res, err := m.run(ctx, samples, opt, lang, actx)
	if err != nil || actx == 0 || opt.AudioCtx != 0 || !res.degenerate(len(samples)) {
		res.Result.AudioCtx = actx
		return res.Result, err
	}
	full, err := m.run(ctx, samples, opt, lang, 0)
	full.Result.Retried = true
	return full.Result, err
}

// WarmUp decodes a second of silence and throws the result away, so that
// what whisper.cpp and ggml set up at the first call of a process (the
// first state and its compute buffers, the CPU backend's threads, a GPU
// backend's pipelines, compiled at their first use) is paid for now rather
// than by the first utterance: a resident decoder warms up before it says
// it is ready. A whisper model runs every graph once and stops at its first
// token (a few tens of milliseconds with tiny.en on the CPU); a Parakeet
// model decodes the second whole. It returns how long it took.
func (m *Model) WarmUp(ctx context.Context, threads int) (time.Duration, error) {
	start := time.Now()
	silence := make([]float32, pcm.SampleRate)
	opt := Options{Threads: threads, NoFallback: true, warmUp: true}
	if m.engine == Parakeet {
		opt = Options{Threads: threads}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var err error
	switch {
	case m.pk != nil:
		_, err = m.pk.transcribe(ctx, silence, opt)
	case m.ctx != nil:
		_, err = m.run(ctx, silence, opt, "en", TrimmedAudioCtx(len(silence)))
	default:
		err = errors.New("model closed")
	}
	if err != nil {
		return time.Since(start), fmt.Errorf("warm up: %w", err)
	}
	return time.Since(start), nil
}

// minWhisperSamples is the least audio whisper.cpp is handed: its mel
// spectrogram pads the input by reflection, reading 200 samples past its
// start (whisper.cpp 1.9.1 reads past the end of a shorter input; fixed
// upstream in 1.9.3). One FFT window, 25 ms.
const minWhisperSamples = 400

// padShort returns samples, or a copy with silence after it up to
// minWhisperSamples: a tap of the key can give a few milliseconds.
func padShort(samples []float32) []float32 {
	if len(samples) >= minWhisperSamples {
		return samples
	}
	padded := make([]float32, minWhisperSamples)
	copy(padded, samples)
	return padded
}

type run struct {
	Result
	tokens         []int32
	maxRun         int   // longest run of one repeated text token
	checks, graphs int64 // abort checks and graph computations (tests)
	// checks inside graphs on a GPU backend, and the graphs begun when the
	// abort was first seen (tests)
	deviceChecks, graphsAtAbort int64
}

// degenerate reports output that a too-short audio context tends to produce:
// the same token over and over, or far more tokens than speech could hold
// (about 7 tokens a second is fast speech; 15 a second plus slack is not).
func (r run) degenerate(n int) bool {
	secs := float64(n) / pcm.SampleRate
	return r.maxRun >= 8 || float64(len(r.tokens)) > 15*secs+24
}

func clamp(d, audio time.Duration) time.Duration { return min(max(d, 0), audio) }
