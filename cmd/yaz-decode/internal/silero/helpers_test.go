package silero

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/internal/testsound"
	"github.com/yazses/yazses/internal/testvad"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/vadspan"
	"github.com/yazses/yazses/lib/wav"
)

const sr = pcm.SampleRate

// modelPath is the real Silero VAD model, from the tests' model cache
// (internal/testvad: make setup puts it there).
func modelPath(t testing.TB) string {
	t.Helper()
	return testvad.Path(t)
}

var shared struct {
	once  sync.Once
	model *Model
	err   error
}

// model is the real model, loaded once for the package's tests (1 thread).
func model(t testing.TB) *Model {
	t.Helper()
	path := modelPath(t)
	shared.once.Do(func() { shared.model, shared.err = Load(path, Options{}) })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.model
}

// jfkPath is the 11 s speech sample of the whisper.cpp Go bindings module.
func jfkPath(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/ggerganov/whisper.cpp/bindings/go").Output()
	if err != nil {
		t.Fatalf("go list the whisper.cpp bindings: %v", err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "samples", "jfk.wav")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("jfk.wav: %v (run go mod download)", err)
	}
	return p
}

func readWAV(t testing.TB, path string) []float32 {
	t.Helper()
	a, _, err := wav.ReadFile16k(path, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func jfk(t testing.TB) []float32 { return readWAV(t, jfkPath(t)) }

// whisperCLI is whisper.cpp's CLI, $YAZ_WHISPER_CLI (make test and
// `make env` set it).
func whisperCLI(t testing.TB) string {
	t.Helper()
	p := os.Getenv("YAZ_WHISPER_CLI")
	if p == "" {
		t.Fatal("YAZ_WHISPER_CLI is not set: run the tests through make test, or eval \"$(make -s env)\"")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("whisper-cli: %v (run make setup)", err)
	}
	return p
}

var mini struct {
	once sync.Once
	path string
	err  error
}

// miniWhisper is a generated whisper model: whisper-cli needs one to run
// its VAD at all.
func miniWhisper(t testing.TB) string {
	t.Helper()
	mini.once.Do(func() {
		dir, err := os.MkdirTemp("", "silero-test")
		if err != nil {
			mini.err = err
			return
		}
		mini.path = filepath.Join(dir, "ggml-mini.bin")
		mini.err = testmodel.WriteFile(mini.path, testmodel.Mini, 1)
	})
	if mini.err != nil {
		t.Fatal(mini.err)
	}
	return mini.path
}

// writeWAV writes samples as a 16 kHz mono s16 WAV file.
func writeWAV(t testing.TB, path string, samples []float32) {
	t.Helper()
	s16 := pcm.FromFloat32(nil, samples)
	b := append(pcm.WAVHeader(int64(2*len(s16))), pcm.Encode(nil, s16)...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// toS16 and back: what a file or a pipe carries.
func quantize(samples []float32) []float32 {
	return pcm.ToFloat32(nil, pcm.FromFloat32(nil, samples))
}

func spans(t testing.TB, m *Model, samples []float32, p vadspan.Params) []vadspan.Span {
	t.Helper()
	s, err := m.Spans(context.Background(), samples, p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// streamSpans runs samples through a new Stream in blocks of n and pairs
// its events into spans; it also returns the probabilities.
func streamSpans(t testing.TB, m *Model, samples []float32, p vadspan.Params, n int) ([]vadspan.Span, []float32) {
	t.Helper()
	s, err := m.NewStream(p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var evs []vadspan.Event
	var probs []float32
	for i := 0; i < len(samples); i += n {
		e, err := s.Write(samples[i:min(i+n, len(samples))])
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e...)
		probs = append(probs, s.Probs()...)
	}
	e, err := s.Flush()
	if err != nil {
		t.Fatal(err)
	}
	evs = append(evs, e...)
	probs = append(probs, s.Probs()...)
	return pairEvents(t, evs, int64(len(samples))), probs
}

func pairEvents(t testing.TB, evs []vadspan.Event, n int64) []vadspan.Span {
	t.Helper()
	var out []vadspan.Span
	for i, e := range evs {
		want := vadspan.SpeechStart
		if i%2 == 1 {
			want = vadspan.SpeechEnd
		}
		if e.Kind != want {
			t.Fatalf("event %d is %v, want %v: %v", i, e.Kind, want, evs)
		}
		if want == vadspan.SpeechStart {
			out = append(out, vadspan.Span{Start: e.At})
		} else {
			out[len(out)-1].End = min(e.At, n)
		}
	}
	if len(evs)%2 != 0 {
		t.Fatalf("a start without an end: %v", evs)
	}
	return out
}

// Generated sounds, float32 at 16 kHz.

// The sounds of internal/testsound under this package's names.
var (
	silence = testsound.Silence
	dbfs    = testsound.DBFS
	white   = testsound.White
	pink    = testsound.Pink
	hum     = testsound.Hum
	rms     = testsound.RMS
	concat  = testsound.Concat
)

// clicks are single-sample impulses of amplitude a, every interval seconds.
func clicks(secs, interval, a float64) []float32 {
	out := make([]float32, int(secs*sr))
	for i := int(interval * sr / 2); i < len(out); i += int(interval * sr) {
		out[i] = float32(a)
		if i+1 < len(out) {
			out[i+1] = float32(-a)
		}
	}
	return out
}

// mix adds noise to speech (noise at least as long).
func mix(speech, noise []float32) []float32 {
	out := make([]float32, len(speech))
	for i := range out {
		out[i] = speech[i] + noise[i]
	}
	return out
}

// espeak says text with espeak-ng (en-us, 170 words a minute) at 16 kHz.
func espeak(t testing.TB, text string) []float32 {
	t.Helper()
	cmd := exec.Command("espeak-ng", "-v", "en-us", "-s", "170", "--stdout", text)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("espeak-ng: %v %s", err, stderr.String())
	}
	a, _, err := wav.ReadAll16k(bytes.NewReader(out), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// extent is where a clean recording's sound is: the first and last sample
// above −40 dBFS.
func extent(s []float32) (from, to int64) {
	th := float32(dbfs(-40))
	from, to = -1, -1
	for i, x := range s {
		if x > th || x < -th {
			if from < 0 {
				from = int64(i)
			}
			to = int64(i) + 1
		}
	}
	return from, to
}

func toS16(s []float32) []int16 { return pcm.FromFloat32(nil, s) }
