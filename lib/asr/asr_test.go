package asr

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
