package piece

import (
	"errors"
	"io"
	"math"
	"slices"
	"testing"
	"time"
)

const sr = 16000

func samples(d time.Duration) int { return int(d * sr / time.Second) }

// tone is seconds of a 300 Hz tone with silent gaps: gaps maps a gap's
// start to its length.
func tone(seconds float64, gaps map[time.Duration]time.Duration) []float32 {
	s := make([]float32, int(seconds*sr))
	for i := range s {
		s[i] = float32(0.25 * math.Sin(2*math.Pi*300*float64(i)/sr))
	}
	for at, n := range gaps {
		clear(s[samples(at):min(len(s), samples(at+n))])
	}
	return s
}

// TestQuietCut: the cut of every user (yazsesd's file pieces, yaz-decode's
// files and its Parakeet chunks) falls in the quietest 100 ms at or after
// from, on a 20 ms boundary; audio with no quieter part is cut at its end.
func TestQuietCut(t *testing.T) {
	full := samples(30 * time.Second)
	last10 := full - samples(10*time.Second)
	for _, tc := range []struct {
		name   string
		s      []float32
		from   int
		lo, hi int // the cut must fall in [lo, hi]
	}{
		{"a pause at 25 s", tone(30, map[time.Duration]time.Duration{25 * time.Second: 300 * time.Millisecond}),
			last10, samples(25 * time.Second), samples(25*time.Second + 300*time.Millisecond)},
		{"a pause before the search is not taken", tone(30, map[time.Duration]time.Duration{
			10 * time.Second: time.Second, 27 * time.Second: 200 * time.Millisecond}),
			last10, samples(27 * time.Second), samples(27*time.Second + 200*time.Millisecond)},
		{"silence is cut at its end", make([]float32, full), last10, full, full},
		{"a steady tone is cut at its end", tone(30, nil), last10, full - 3*Frame, full},
		// A Parakeet chunk: 5 s searched in its last quarter, a pause
		// shorter than the 100 ms window.
		{"a 60 ms pause in the last quarter", tone(5, map[time.Duration]time.Duration{4500 * time.Millisecond: 60 * time.Millisecond}),
			samples(3750 * time.Millisecond), samples(4500 * time.Millisecond), samples(4560 * time.Millisecond)},
		{"fewer than five frames to search: cut at the end", tone(30, map[time.Duration]time.Duration{29990 * time.Millisecond: 10 * time.Millisecond}),
			full - 4*Frame, full, full},
		{"a piece shorter than the window: cut at the end", tone(0.05, nil), 0, samples(50 * time.Millisecond), samples(50 * time.Millisecond)},
	} {
		got := QuietCut(tc.s, tc.from)
		if got < tc.lo || got > tc.hi || (got%Frame != 0 && got != len(tc.s)) {
			t.Errorf("%s: cut at %d (%.3f s), want a 20 ms boundary in [%d, %d]", tc.name, got, float64(got)/sr, tc.lo, tc.hi)
		}
	}
}

// reader hands out a slice in reads of at most n samples.
type reader struct {
	s []float32
	n int
}

func (r *reader) Read(dst []float32) (int, error) {
	if len(r.s) == 0 {
		return 0, io.EOF
	}
	k := copy(dst[:min(len(dst), r.n)], r.s)
	r.s = r.s[k:]
	return k, nil
}

// TestCutter: the pieces are the whole stream, in order, each of at most
// 30 s, each full one cut in a pause of its last 10 s, whatever the size
// of the reads; End is the stream's length after the last; a stream longer
// than the limit is refused as it is read.
func TestCutter(t *testing.T) {
	gaps := map[time.Duration]time.Duration{}
	for at := 4 * time.Second; at < 100*time.Second; at += 7 * time.Second {
		gaps[at] = 250 * time.Millisecond
	}
	src := tone(100.5, gaps)
	max := samples(30 * time.Second)
	var first []int64
	for _, n := range []int{1000, 16 << 10, len(src)} {
		c := New(&reader{s: src, n: n}, max, samples(10*time.Second), int64(len(src)))
		var got []float32
		var cuts []int64
		for {
			p, at, err := c.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if at != int64(len(got)) {
				t.Fatalf("reads of %d: piece starts at %d, want %d", n, at, len(got))
			}
			if len(p) > max {
				t.Errorf("reads of %d: piece of %d samples", n, len(p))
			}
			if end := at + int64(len(p)); end < int64(len(src)) {
				if edge := src[end-1 : end+1]; edge[0] != 0 && edge[1] != 0 {
					t.Errorf("reads of %d: piece cut at %.3f s, not in a pause", n, float64(end)/sr)
				}
			}
			got = append(got, p...)
			cuts = append(cuts, at)
		}
		if !slices.Equal(got, src) {
			t.Errorf("reads of %d: the pieces (%d samples) are not the stream (%d)", n, len(got), len(src))
		}
		if c.End() != int64(len(src)) {
			t.Errorf("reads of %d: End() = %d after the last piece, want %d", n, c.End(), len(src))
		}
		if first == nil {
			first = cuts
		} else if !slices.Equal(first, cuts) {
			t.Errorf("reads of %d cut at %v; reads of 1000 at %v", n, cuts, first)
		}
	}

	c := New(&reader{s: src, n: 16 << 10}, max, samples(10*time.Second), 40*sr)
	var err error
	for err == nil {
		_, _, err = c.Next()
	}
	if !errors.Is(err, ErrTooLong) {
		t.Errorf("a 100 s stream with a 40 s limit: %v, want ErrTooLong", err)
	}
}

// failing fails its second read.
type failing struct{ n int }

var errDisk = errors.New("disk on fire")

func (f *failing) Read(dst []float32) (int, error) {
	f.n++
	if f.n > 1 {
		return 0, errDisk
	}
	return len(dst) / 2, nil
}

func TestCutterReadError(t *testing.T) {
	_, _, err := New(&failing{}, 30*sr, 10*sr, 0).Next()
	if !errors.Is(err, errDisk) {
		t.Errorf("Next() = %v, want the read error", err)
	}
}
