package asr

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/transcript"
	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/lib/pcm"
)

func TestTrimmedAudioCtx(t *testing.T) {
	for _, tc := range []struct {
		secs float64
		want int
	}{
		{0.1, 128}, {1, 128}, {3, 256}, {11, 640}, {20, 1088}, {27, 0}, {30, 0}, {120, 0},
	} {
		got := TrimmedAudioCtx(int(tc.secs * pcm.SampleRate))
		if got != tc.want {
			t.Errorf("TrimmedAudioCtx(%gs) = %d, want %d", tc.secs, got, tc.want)
		}
		if got != 0 && got < int(tc.secs*50)+64 {
			t.Errorf("TrimmedAudioCtx(%gs) = %d leaves no margin over %d positions", tc.secs, got, int(tc.secs*50))
		}
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "none.bin"), nil); !errors.Is(err, ErrModelMissing) {
		t.Errorf("Load(missing) = %v, want ErrModelMissing", err)
	}
	junk := filepath.Join(t.TempDir(), "junk.bin")
	os.WriteFile(junk, []byte("not a model at all"), 0o644)
	if _, err := Load(junk, nil); !errors.Is(err, ErrModelInvalid) {
		t.Errorf("Load(junk) = %v, want ErrModelInvalid", err)
	}
	if _, err := Load(t.TempDir(), nil); !errors.Is(err, ErrModelInvalid) {
		t.Errorf("Load(dir) = %v, want ErrModelInvalid", err)
	}
}

func miniModel(t *testing.T) *Model {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mini.bin")
	if err := testmodel.WriteFile(path, testmodel.Mini, 1); err != nil {
		t.Fatal(err)
	}
	m, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func chirp(secs float64) []float32 {
	out := make([]float32, int(secs*pcm.SampleRate))
	for i := range out {
		x := float64(i) / pcm.SampleRate
		out[i] = float32(0.3 * math.Sin(2*math.Pi*(200+100*x)*x))
	}
	return out
}

// TestTranscribe runs real inference on the generated model: segments stay
// inside the audio, short audio gets a trimmed context, and the same input
// gives the same output on a resident model.
func TestTranscribe(t *testing.T) {
	m := miniModel(t)
	audio := chirp(3)
	opt := Options{Threads: 2, NoFallback: true, NoSpeechThreshold: 1}
	r1, err := m.Transcribe(context.Background(), audio, opt)
	if err != nil {
		t.Fatal(err)
	}
	if r1.AudioCtx != 256 && !r1.Retried {
		t.Errorf("AudioCtx = %d for 3 s, want 256 (trimmed)", r1.AudioCtx)
	}
	if len(r1.Segments) == 0 {
		t.Fatal("no segments from the generated model")
	}
	for _, s := range r1.Segments {
		if s.Start < 0 || s.End > 3*time.Second || s.End < s.Start {
			t.Errorf("segment [%s, %s] outside the 3 s of audio", s.Start, s.End)
		}
	}
	r2, err := m.Transcribe(context.Background(), audio, opt)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Text() != r2.Text() {
		t.Errorf("the same audio decoded twice gave different text")
	}
	full, err := m.Transcribe(context.Background(), audio, Options{Threads: 2, NoFallback: true, NoSpeechThreshold: 1, AudioCtx: -1})
	if err != nil {
		t.Fatal(err)
	}
	if full.AudioCtx != 0 {
		t.Errorf("AudioCtx -1 used %d, want 0 (full)", full.AudioCtx)
	}
}

// TestTokenTimes: with TokenTimes, every segment carries its text tokens,
// whose texts joined are the segment's text, in time order inside the
// segment's part of the audio; the segments themselves (times and text)
// are those of a call without them.
func TestTokenTimes(t *testing.T) {
	m := miniModel(t)
	audio := chirp(6)
	opt := Options{Threads: 2, NoFallback: true, NoSpeechThreshold: 1}
	plain, err := m.Transcribe(context.Background(), audio, opt)
	if err != nil {
		t.Fatal(err)
	}
	opt.TokenTimes = true
	timed, err := m.Transcribe(context.Background(), audio, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(timed.Segments) == 0 {
		t.Fatal("no segments from the generated model")
	}
	var stripped []transcript.Segment
	for i, s := range timed.Segments {
		if len(s.Tokens) == 0 {
			t.Fatalf("segment %d %q has no tokens", i, s.Text)
		}
		var text strings.Builder
		last := time.Duration(0)
		for k, tk := range s.Tokens {
			text.WriteString(tk.Text)
			if tk.Start < last || tk.End < tk.Start || tk.End > 6*time.Second {
				t.Errorf("segment %d token %d [%s, %s] out of order (after %s) or outside the audio", i, k, tk.Start, tk.End, last)
			}
			last = tk.Start
		}
		if text.String() != s.Text {
			t.Errorf("segment %d: tokens joined %q, want the segment's text %q", i, text.String(), s.Text)
		}
		s.Tokens = nil
		stripped = append(stripped, s)
	}
	if diff := cmp.Diff(plain.Segments, stripped); diff != "" {
		t.Errorf("TokenTimes changed the segments (-without +with):\n%s", diff)
	}
}

func TestTranscribeCancelled(t *testing.T) {
	m := miniModel(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Transcribe(ctx, chirp(2), Options{Threads: 2}); !errors.Is(err, context.Canceled) {
		t.Errorf("Transcribe(cancelled) = %v, want context.Canceled", err)
	}
	r, err := m.Transcribe(context.Background(), nil, Options{})
	if err != nil || len(r.Segments) != 0 {
		t.Errorf("Transcribe(no audio) = %v, %v; want nothing", r, err)
	}
}

// speechLike is a loud, speech-like signal: syllables of a harmonic tone
// whose pitch drifts, 180 ms each with 70 ms gaps.
func speechLike(secs float64) []float32 {
	out := make([]float32, int(secs*pcm.SampleRate))
	for i := range out {
		x := float64(i) / pcm.SampleRate
		phase := math.Mod(x, 0.25)
		if phase > 0.18 {
			continue
		}
		f := 150 + 60*math.Sin(x/1.7)
		env := math.Sin(math.Pi * phase / 0.18)
		out[i] = float32(0.2 * env * (math.Sin(2*math.Pi*f*x) + 0.5*math.Sin(4*math.Pi*f*x) + 0.3*math.Sin(8*math.Pi*f*x)))
	}
	return out
}

// TestTranscribeIndependentOfHistory: the same audio gives the same
// segments alone, after a long input (full audio context) and after a
// short one (a smaller trimmed context), on one resident model.
func TestTranscribeIndependentOfHistory(t *testing.T) {
	m := miniModel(t)
	opt := Options{Threads: 2, NoSpeechThreshold: 1}
	note, long, short := speechLike(11), speechLike(66), chirp(3)
	decode := func(a []float32) Result {
		t.Helper()
		r, err := m.Transcribe(context.Background(), a, opt)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	want := decode(note)
	if len(want.Segments) == 0 {
		t.Fatal("no segments: the comparison proves nothing")
	}
	for _, h := range []struct {
		name   string
		before [][]float32
	}{
		{"after a long input", [][]float32{long}},
		{"after a short input", [][]float32{short}},
		{"after long and short", [][]float32{long, short}},
	} {
		for _, a := range h.before {
			decode(a)
		}
		if diff := cmp.Diff(want.Segments, decode(note).Segments); diff != "" {
			t.Errorf("the note decoded %s differs from the note decoded first (-first +now):\n%s", h.name, diff)
		}
	}
}

// TestAbortCheckedInsideGraphs: the abort flag is read during every graph
// computation, node by node, not only once per encoder pass or decoder
// step as whisper.cpp itself does: an abort lands within one node.
func TestAbortCheckedInsideGraphs(t *testing.T) {
	m := miniModel(t)
	r, err := m.run(context.Background(), speechLike(3), Options{Threads: 2}, "en", TrimmedAudioCtx(3*pcm.SampleRate))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d graphs, %d checks of the abort flag", r.graphs, r.checks)
	if r.graphs == 0 {
		t.Fatal("no graph computation went through the hook: is the --wrap link flag lost?")
	}
	// whisper.cpp alone reads the flag about once per graph; the hook has
	// the CPU backend read it after every node (hundreds per encoder pass).
	if r.checks < 10*r.graphs {
		t.Errorf("%d checks for %d graphs: the abort flag is not read inside graph computations", r.checks, r.graphs)
	}
}

// TestTranscribeCancelMidway: a context cancelled while whisper works
// stops it at once, measured against the time the same call takes when
// left alone (a quarter of it is the bound; an encoder pass alone is more
// than that); the model then decodes the same audio as before.
func TestTranscribeCancelMidway(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.en.bin")
	if err := testmodel.WriteFile(path, testmodel.TinyEn, 1); err != nil {
		t.Fatal(err)
	}
	m, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	audio := speechLike(29)
	opt := Options{Threads: 2, AudioCtx: -1, NoSpeechThreshold: 1}
	start := time.Now()
	want, err := m.Transcribe(context.Background(), audio, opt)
	if err != nil {
		t.Fatal(err)
	}
	full := time.Since(start)
	// Cancelled a quarter of the way through (by the first call's
	// length; earlier again should a busy machine let the call finish
	// first): it stops with context.Canceled. How soon it stops is not
	// timed here: TestAbortCheckedInsideGraphs proves the flag is read
	// node by node inside every graph.
	for delay := full / 4; ; delay /= 2 {
		ctx, cancel := context.WithCancel(context.Background())
		timer := time.AfterFunc(delay, cancel)
		_, err = m.Transcribe(ctx, audio, opt)
		timer.Stop()
		cancel()
		if errors.Is(err, context.Canceled) {
			break
		}
		if err != nil || delay < time.Millisecond {
			t.Fatalf("Transcribe cancelled after %v of %v = %v, want context.Canceled", delay, full, err)
		}
	}
	again, err := m.Transcribe(context.Background(), audio, opt)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Segments, again.Segments); diff != "" {
		t.Errorf("after a cancelled call the same audio decodes differently (-before +after):\n%s", diff)
	}
}

// TestLanguages: an English-only model refuses every language but English
// (it would decode English and the output would claim the other); a
// multilingual one takes any code whisper knows, and reports the language
// it decoded.
func TestLanguages(t *testing.T) {
	en := miniModel(t)
	path := filepath.Join(t.TempDir(), "tiny.bin")
	if err := testmodel.WriteFile(path, testmodel.Tiny, 1); err != nil {
		t.Fatal(err)
	}
	multi, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer multi.Close()
	if en.Multilingual() || !multi.Multilingual() {
		t.Fatalf("Multilingual() = %v, %v; want false for the mini model, true for tiny", en.Multilingual(), multi.Multilingual())
	}
	for _, tc := range []struct {
		m       *Model
		lang    string
		ok      bool
		decoded string // the language a transcription reports
	}{
		{en, "", true, "en"},
		{en, "en", true, "en"},
		{en, "EN", true, "en"},
		{en, "english", true, "en"},
		{en, "auto", true, "en"},
		{en, "de", false, ""},
		{en, "german", false, ""},
		{en, "fr", false, ""},
		{en, "xx", false, ""},
		{multi, "de", true, "de"},
		{multi, "en", true, "en"},
		{multi, "xx", false, ""},
		{multi, "auto", true, "*"},
	} {
		name := "en-only"
		if tc.m == multi {
			name = "multilingual"
		}
		code, err := tc.m.Language(tc.lang)
		if tc.ok != (err == nil) {
			t.Errorf("%s Language(%q) = %q, %v; want ok %v", name, tc.lang, code, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrLanguageUnsupported) {
			t.Errorf("%s Language(%q) = %v, want it to wrap ErrLanguageUnsupported", name, tc.lang, err)
		}
		if want := tc.decoded; err == nil && want != "*" && code != want || want == "*" && code != "auto" {
			t.Errorf("%s Language(%q) = %q, want %q", name, tc.lang, code, want)
		}
		r, err := tc.m.Transcribe(context.Background(), chirp(1), Options{Threads: 2, Language: tc.lang})
		switch {
		case !tc.ok && !errors.Is(err, ErrLanguageUnsupported):
			t.Errorf("%s Transcribe(language %q) = %v, want ErrLanguageUnsupported", name, tc.lang, err)
		case tc.ok && err != nil:
			t.Errorf("%s Transcribe(language %q) = %v", name, tc.lang, err)
		case tc.ok && tc.decoded == "*" && (len(r.Language) < 2 || r.Language == "auto"):
			t.Errorf("%s Transcribe(language auto) reports language %q, want the detected code", name, r.Language)
		case tc.ok && tc.decoded != "*" && r.Language != tc.decoded:
			t.Errorf("%s Transcribe(language %q) reports language %q, want %q", name, tc.lang, r.Language, tc.decoded)
		}
	}
}

// TestWhisperLogThroughSlog: whisper.cpp's own lines become debug records of
// the logger given to Load, and none at all when debug is off.
func TestWhisperLogThroughSlog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mini.bin")
	if err := testmodel.WriteFile(path, testmodel.Mini, 1); err != nil {
		t.Fatal(err)
	}
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var buf bytes.Buffer
		m, err := Load(path, slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: level})))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Transcribe(context.Background(), chirp(2), Options{Threads: 2}); err != nil {
			t.Fatal(err)
		}
		m.Close()
		n := 0
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			if line == "" {
				continue
			}
			var rec struct {
				Level, Msg, Src string
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("not a JSON record: %q", line)
			}
			if rec.Src != "whisper.cpp" || rec.Level != "DEBUG" || rec.Msg == "" || strings.Contains(rec.Msg, "\n") {
				t.Errorf("record %q: want a one-line DEBUG record from whisper.cpp", line)
			}
			n++
		}
		if level == slog.LevelDebug && n < 5 {
			t.Errorf("%d whisper.cpp records at debug level, want its load lines", n)
		}
		if level == slog.LevelInfo && n != 0 {
			t.Errorf("%d whisper.cpp records at info level, want none", n)
		}
	}
	setLogger(nil)
}
