package filesrc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/lib/pcm"
)

// scripted is a clock whose now() returns the given offsets in turn and
// whose ticker delivers one tick per later offset.
func scripted(offsets ...time.Duration) clock {
	t0 := time.Unix(1000, 0)
	i := 0
	ticks := make(chan time.Time, len(offsets))
	for _, o := range offsets[1:] {
		ticks <- t0.Add(o)
	}
	return clock{
		now: func() time.Time {
			o := offsets[min(i, len(offsets)-1)]
			i++
			return t0.Add(o)
		},
		tick: func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} },
	}
}

func TestPaceFollowsTheClock(t *testing.T) {
	samples := make([]int16, 4000) // 250 ms
	for i := range samples {
		samples[i] = int16(i)
	}
	ms := time.Millisecond
	// Ticks at 40 and 80 ms, one late at 200 ms (a slow consumer), then on.
	c := scripted(0, 40*ms, 80*ms, 200*ms, 240*ms, 280*ms)
	var sizes []int
	var got []int16
	err := pace(context.Background(), samples, 40*ms, c, func(s []int16) {
		sizes = append(sizes, len(s))
		got = append(got, s...)
	})
	if err != nil {
		t.Fatalf("pace = %v", err)
	}
	want := []int{640, 640, 640, 640, 640, 640, 160}
	if diff := cmp.Diff(want, sizes); diff != "" {
		t.Errorf("chunk sizes (-want +got):\n%s", diff)
	}
	if !cmp.Equal(got, samples) {
		t.Errorf("samples out differ from samples in (%d vs %d)", len(got), len(samples))
	}
}

func TestPaceNeverAhead(t *testing.T) {
	samples := make([]int16, 1600)
	ms := time.Millisecond
	c := scripted(0, 30*ms, 50*ms, 100*ms)
	var total []int
	pace(context.Background(), samples, 40*ms, c, func(s []int16) { total = append(total, len(s)) })
	// Due at 30 ms: 480; at 50 ms: 800; at 100 ms: all 1600, in chunks of
	// at most 40 ms. Nothing beyond the clock.
	if diff := cmp.Diff([]int{480, 320, 640, 160}, total); diff != "" {
		t.Errorf("emitted (-want +got):\n%s", diff)
	}
}

func TestPaceRealTime(t *testing.T) {
	samples := make([]int16, pcm.Samples(300*time.Millisecond))
	begin := time.Now()
	n := 0
	var maxChunk int
	if err := Pace(context.Background(), samples, func(s []int16) { n += len(s); maxChunk = max(maxChunk, len(s)) }); err != nil {
		t.Fatal(err)
	}
	took := time.Since(begin)
	if n != len(samples) {
		t.Errorf("Pace emitted %d samples, want %d", n, len(samples))
	}
	// A floor only: no ceiling, a loaded machine may be late.
	if took < 300*time.Millisecond {
		t.Errorf("Pace of 300 ms took %v", took)
	}
	if d := pcm.Duration(maxChunk); d > 100*time.Millisecond || d < 20*time.Millisecond {
		t.Errorf("largest chunk %v, want 20–100 ms", d)
	}
}

func TestPaceCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	samples := make([]int16, pcm.Samples(10*time.Second))
	n, first := 0, 0
	// Cancelled during the first chunk: nothing more comes.
	if err := Pace(ctx, samples, func(s []int16) {
		if n == 0 {
			first = len(s)
			cancel()
		}
		n += len(s)
	}); err != nil {
		t.Fatalf("Pace after cancel = %v, want nil", err)
	}
	if n != first {
		t.Errorf("Pace went on after cancel: %d samples, %d of them after the first chunk", n, n-first)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	want := []int16{0, 1, -1, 32767, -32768, 1234}
	data := pcm.Encode(nil, want)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	wavFile := write("a.wav", append(pcm.WAVHeader(int64(len(data))), data...))
	rawFile := write("a.pcm", data)
	streamWav := write("s.bin", append(pcm.StreamWAVHeader(), data...)) // detected by content
	for _, p := range []string{wavFile, rawFile, streamWav} {
		got, err := Load(p)
		if err != nil {
			t.Fatalf("Load(%s) = %v", filepath.Base(p), err)
		}
		if !cmp.Equal(got, want) {
			t.Errorf("Load(%s) = %v, want %v", filepath.Base(p), got, want)
		}
	}

	bad := []struct {
		path, substr string
	}{
		{write("odd.pcm", data[:5]), "middle of a sample"},
		{write("x.txt", []byte("hello there")), "not a WAV file"},
		{filepath.Join(dir, "missing.wav"), "no such file"},
		{write("b.wav", []byte("RIFF\x10\x00\x00\x00WAVEjunk")), "b.wav"}, // broken WAV: error names the file
	}
	for _, b := range bad {
		_, err := Load(b.path)
		if err == nil || !strings.Contains(err.Error(), b.substr) {
			t.Errorf("Load(%s) = %v, want an error containing %q", filepath.Base(b.path), err, b.substr)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing.wav")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want os.ErrNotExist", err)
	}
}
