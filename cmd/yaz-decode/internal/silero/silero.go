// Package silero is Silero VAD, the trained voice-activity detector inside
// whisper.cpp 1.9.1 (whisper_vad_*), for 16 kHz mono float32 audio: a
// speech probability for every 512-sample window (32 ms), and speech spans
// from them by whisper.cpp's own rules (package vadspan), for a whole file
// or incrementally on a stream.
//
// A Model is a loaded model file. Load checks the whole file in Go first
// (modelfile.CheckVADData: whisper.cpp trusts every number in it and
// crashes on a bad one) and hands whisper.cpp exactly the bytes it checked;
// a missing file, a folder, a truncated or random file or a whisper model
// is an error of one line that names the file, never a crash. Model.Spans
// gives what `whisper-cli --vad` computes for the same audio and
// parameters; a Stream (Model.NewStream) takes the audio in blocks of any
// size and reports the same spans as vadspan events, each as soon as it is
// settled.
//
// Invariants:
//   - The probabilities depend only on the audio, the thread count and the
//     QuietSkip, not on how a stream is cut into blocks: a Stream buffers partial windows,
//     runs whole ones, and zero-pads only the last at Flush, as whisper.cpp
//     pads a file's last window. So a Stream's events are exactly
//     Model.Spans of the same audio.
//   - Each Stream has its own whisper.cpp context (weights and LSTM state,
//     about 2.5 MB); Model.Spans uses the Model's, one call at a time. A
//     Model is safe for concurrent use; a Stream is not.
//   - Threads default to 1: on one thread the detector costs about 2.5 ms
//     of CPU per second of audio (0.25 % of a core, BenchmarkDetector); two
//     threads cost 2.3 to 2.7 times that for a shorter wall time, and
//     whisper.cpp's own default of 4 (what whisper-cli --vad uses) about 7
//     times.
//   - whisper.cpp's log lines are silenced process-wide unless
//     Options.Verbose (cmd/yaz-decode/internal/asr does the same, with the same kind of hook).
//
// Silero and the energy detector (package vad) cut a stream into utterances
// behind the same methods (Segmenter here, vad.Segmenter there); see
// Segmenter.
//
// Cost and the pre-gate: every window is a small network run (an STFT, four
// convolutions, an LSTM step), about 0.08 ms of CPU. Quiet never holds
// speech, so Options.Skip can skip the windows whose level is below a
// threshold (digital silence, or a quiet room's noise floor), reporting
// probability 0 for them; see QuietSkip. On a two-minute file that is half quiet
// it skips 44 % of the windows and saves 42–48 % of the CPU
// (BenchmarkQuietSkip), with the same spans (TestQuietSkip).
//
// For callers: "was anything said?" is len(Spans) > 0; the end of an
// answer is a Stream's SpeechEnd with Params.MinSilence set to the pause
// that ends it (a pause shorter than that, or probabilities lingering
// between NegThreshold and Threshold, keep the span open); Stream.Speaking
// is the immediate state for tail decisions. A process without cgo (the
// daemon) runs vadspan.Tracker over probabilities a yaz-decode child
// reports (Stream.Probs), with parameters of its own.
//
// Only yaz-decode links this package (cgo, whisper.cpp): the daemon gets
// its probabilities from a yaz-decode child and tracks spans with the pure
// Go lib/vadspan.
package silero

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/yazses/yazses/lib/modelfile"
	"github.com/yazses/yazses/lib/vadspan"
)

// Window is the number of 16 kHz samples each probability covers.
const Window = vadspan.Window

// maxFileBytes is far above any Silero VAD file (885 098 bytes); a larger
// file is not read into memory, only named in the error.
const maxFileBytes = 16 << 20

// Options set up a Model.
type Options struct {
	Threads int       // whisper.cpp threads per detector; 0: 1
	Verbose bool      // let whisper.cpp's log lines through to stderr (process-wide: pass what cmd/yaz-decode/internal/asr's Load gets)
	Skip    QuietSkip // skip windows that are quiet by level; the zero QuietSkip is off
}

// Model is a loaded Silero VAD model file.
type Model struct {
	path    string
	info    modelfile.Info
	threads int
	gate    gate

	mu  sync.Mutex
	buf cbuf // the checked file, for new Streams
	one vctx // for one-shot calls
}

// Load reads and checks the model file at path and sets up the detector.
// Its errors are one line that names the file; a missing file matches
// modelfile.ErrMissing (and fs.ErrNotExist), a file that is no usable VAD
// model modelfile.ErrNotGGML, ErrBadHeader, ErrTruncated or ErrWrongKind.
func Load(path string, opt Options) (*Model, error) {
	if !opt.Verbose {
		quiet()
	}
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() > maxFileBytes {
		// Let the header reader say what the path is.
		_, cerr := modelfile.CheckVAD(path)
		if cerr == nil {
			cerr = fmt.Errorf("%s is larger than any Silero VAD model (%d bytes at most): %w", path, maxFileBytes, modelfile.ErrBadHeader)
		}
		return nil, cerr
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("VAD model not found: %s: %w", path, modelfile.ErrMissing)
	}
	if err != nil {
		return nil, fmt.Errorf("read VAD model: %w", err)
	}
	info, err := modelfile.CheckVADData(path, data)
	if err != nil {
		return nil, err
	}
	m := &Model{path: path, info: info, threads: max(1, opt.Threads), gate: opt.Skip.resolve(), buf: newCBuf(data)}
	if m.one, err = newVctx(m.buf, m.threads); err != nil {
		m.buf.free()
		return nil, fmt.Errorf("load VAD model %s: %w", path, err)
	}
	return m, nil
}

// Path is the model file.
func (m *Model) Path() string { return m.path }

// Describe says which model it is: "Silero VAD model (silero-16k 6.2.0)".
func (m *Model) Describe() string { return m.info.Describe() }

// Close frees the model. Streams made from it keep working until their own
// Close.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.one.free()
	m.buf.free()
	return nil
}

var errClosed = errors.New("VAD model closed")

// oneShotBlock is how much audio one call into whisper.cpp takes in
// one-shot use (30 s): a cancelled context is seen between blocks.
const oneShotBlock = 30 * vadspan.SampleRate / Window * Window

// Probs returns the speech probability of each window of samples (16 kHz
// mono float32 in [-1, 1]), the last window zero-padded: what whisper.cpp's
// whisper_vad_detect_speech computes (with Options.Skip, 0 for the windows
// the gate skips). It stops early once ctx is done, returning ctx.Err().
func (m *Model) Probs(ctx context.Context, samples []float32) ([]float32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.one.c == nil {
		return nil, errClosed
	}
	r := newRunner(m.one, m.gate)
	probs := make([]float32, 0, (len(samples)+Window-1)/Window)
	for len(samples) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := min(len(samples), oneShotBlock)
		var err error
		if probs, err = r.run(samples[:n], probs); err != nil {
			return nil, fmt.Errorf("detect speech: %w", err)
		}
		samples = samples[n:]
	}
	return probs, nil
}

// Spans returns the speech spans of samples: whisper.cpp's segments for the
// same audio and parameters (vadspan.Spans of Probs), with the last end
// kept inside the audio.
func (m *Model) Spans(ctx context.Context, samples []float32, p vadspan.Params) ([]vadspan.Span, error) {
	probs, err := m.Probs(ctx, samples)
	if err != nil {
		return nil, err
	}
	spans := vadspan.Spans(probs, p)
	if n := len(spans); n > 0 {
		spans[n-1].End = min(spans[n-1].End, int64(len(samples)))
	}
	return spans, nil
}
