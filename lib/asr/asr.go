// Package asr is speech recognition with whisper.cpp through its Go bindings.
//
// A Model is loaded once and transcribes 16 kHz mono float32 audio. For short
// utterances it trims whisper's audio context to the audio's length (the
// encoder's cost is linear in it: 50 positions a second of a 1500-position,
// 30-second window), keeping a safety margin, and decodes again with the full
// context when the trimmed result looks degenerate (a token repeated over and
// over, or no end of text). whisper.cpp's own log lines are silenced unless
// the caller asks for them.
//
// It is the only cgo package for speech recognition; nothing here logs
// transcript text.
package asr

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	whisper "github.com/ggerganov/whisper.cpp/bindings/go"

	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/transcript"
)

// FullAudioCtx is whisper's full audio context: 30 s as 1500 positions.
const FullAudioCtx = 1500

// positionSamples is how many 16 kHz samples one encoder position covers.
const positionSamples = pcm.SampleRate / 50

// ErrModelMissing reports a model file that does not exist.
var ErrModelMissing = errors.New("model file not found")

// ErrModelInvalid reports a file whisper.cpp could not load as a model.
var ErrModelInvalid = errors.New("not a whisper model")

// Options control one transcription.
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
	// Progress, if set, receives whisper's progress in percent.
	Progress func(percent int)
}

// Result is one transcription.
type Result struct {
	Segments []transcript.Segment
	AudioCtx int  // the audio context used for the kept result (0 = full)
	Retried  bool // a trimmed context looked degenerate and was decoded again in full
	Encode   time.Duration
}

// Text is the whole transcript on one line.
func (r Result) Text() string { return transcript.Text(r.Segments) }

// Model is a loaded whisper model. It is safe for concurrent use; calls to
// Transcribe run one at a time.
type Model struct {
	mu           sync.Mutex
	ctx          *whisper.Context
	multilingual bool
}

// Load loads a ggml whisper model. verbose lets whisper.cpp's own log lines
// through to stderr.
func Load(path string, verbose bool) (*Model, error) {
	if !verbose {
		quiet()
	}
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
	ctx := whisper.Whisper_init(path)
	if ctx == nil {
		return nil, fmt.Errorf("load model %s: %w", path, ErrModelInvalid)
	}
	return &Model{ctx: ctx, multilingual: ctx.Whisper_is_multilingual() != 0}, nil
}

// Multilingual reports whether the model knows languages other than English.
func (m *Model) Multilingual() bool { return m.multilingual }

// Close frees the model.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx != nil {
		m.ctx.Whisper_free()
		m.ctx = nil
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

// Transcribe decodes samples (16 kHz mono float32 in [-1, 1]). It stops
// before the next 30-second window once ctx is done, returning ctx.Err().
func (m *Model) Transcribe(ctx context.Context, samples []float32, opt Options) (Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx == nil {
		return Result{}, errors.New("transcribe: model closed")
	}
	if len(samples) == 0 {
		return Result{}, nil
	}
	actx := opt.AudioCtx
	switch {
	case actx == 0:
		actx = TrimmedAudioCtx(len(samples))
	case actx < 0 || actx > FullAudioCtx:
		actx = 0
	}
	res, err := m.run(ctx, samples, opt, actx)
	if err != nil || actx == 0 || opt.AudioCtx != 0 || !res.degenerate(len(samples)) {
		res.Result.AudioCtx = actx
		return res.Result, err
	}
	full, err := m.run(ctx, samples, opt, 0)
	full.Result.Retried = true
	full.Result.Encode += res.Result.Encode
	return full.Result, err
}

type run struct {
	Result
	tokens []whisper.Token
	maxRun int // longest run of one repeated text token
}

// degenerate reports output that a too-short audio context tends to produce:
// the same token over and over, or far more tokens than speech could hold
// (about 7 tokens a second is fast speech; 15 a second plus slack is not).
func (r run) degenerate(n int) bool {
	secs := float64(n) / pcm.SampleRate
	return r.maxRun >= 8 || float64(len(r.tokens)) > 15*secs+24
}

func clamp(d, audio time.Duration) time.Duration { return min(max(d, 0), audio) }

func (m *Model) run(ctx context.Context, samples []float32, opt Options, audioCtx int) (run, error) {
	strategy := whisper.SAMPLING_GREEDY
	if opt.BeamSize > 1 {
		strategy = whisper.SAMPLING_BEAM_SEARCH
	}
	p := m.ctx.Whisper_full_default_params(strategy)
	threads := opt.Threads
	if threads <= 0 {
		threads = DefaultThreads()
	}
	p.SetThreads(threads)
	p.SetPrintProgress(false)
	p.SetPrintRealtime(false)
	p.SetPrintTimestamps(false)
	p.SetPrintSpecial(false)
	p.SetTranslate(false)
	if opt.BeamSize > 1 {
		p.SetBeamSize(opt.BeamSize)
	}
	if opt.NoFallback {
		p.SetTemperatureFallback(0)
	}
	p.SetAudioCtx(audioCtx)
	lang := strings.ToLower(strings.TrimSpace(opt.Language))
	if lang == "" || !m.multilingual {
		lang = "en"
	}
	id := -1
	if lang != "auto" {
		id = m.ctx.Whisper_lang_id(lang)
		if id < 0 {
			return run{}, fmt.Errorf("transcribe: unknown language %q", opt.Language)
		}
	}
	if err := p.SetLanguage(id); err != nil {
		return run{}, fmt.Errorf("transcribe: language %q: %w", opt.Language, err)
	}
	noSpeech := opt.NoSpeechThreshold
	if noSpeech <= 0 {
		noSpeech = 0.6
	}
	free := setParams(&p, opt.Prompt)
	defer free()

	var encodeStart time.Time
	var encode time.Duration
	begin := func() bool {
		if !encodeStart.IsZero() {
			encode += time.Since(encodeStart)
		}
		encodeStart = time.Now()
		return ctx.Err() == nil
	}
	var progress func(int)
	if opt.Progress != nil {
		progress = opt.Progress
	}
	err := m.ctx.Whisper_full(p, samples, begin, nil, progress)
	if cerr := ctx.Err(); cerr != nil {
		return run{}, cerr
	}
	if err != nil {
		return run{}, fmt.Errorf("transcribe: whisper_full: %w", err)
	}
	var r run
	r.Encode = encode
	audio := pcm.Duration(len(samples))
	eot := m.ctx.Whisper_token_eot()
	n := m.ctx.Whisper_full_n_segments()
	last, cur := whisper.Token(-1), 0
	for i := 0; i < n; i++ {
		nt := m.ctx.Whisper_full_n_tokens(i)
		for j := 0; j < nt; j++ {
			tok := m.ctx.Whisper_full_get_token_id(i, j)
			if tok >= eot {
				continue // special and timestamp tokens
			}
			r.tokens = append(r.tokens, tok)
			if tok == last {
				cur++
			} else {
				last, cur = tok, 1
			}
			r.maxRun = max(r.maxRun, cur)
		}
		if noSpeech < 1 && noSpeechProb(m.ctx, i) > noSpeech {
			continue
		}
		// whisper's timestamps can overshoot the audio (a segment "ending" at
		// the 30 s window edge) or, with no opening timestamp, go negative:
		// keep them inside the audio.
		r.Segments = append(r.Segments, transcript.Segment{
			Start: clamp(time.Duration(m.ctx.Whisper_full_get_segment_t0(i))*10*time.Millisecond, audio),
			End:   clamp(time.Duration(m.ctx.Whisper_full_get_segment_t1(i))*10*time.Millisecond, audio),
			Text:  m.ctx.Whisper_full_get_segment_text(i),
		})
	}
	return r, nil
}
