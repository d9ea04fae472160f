package vadwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readAll reads records until an error, copying each.
func readAll(in []byte) ([]Record, error) {
	r := NewReader(bytes.NewReader(in))
	var out []Record
	for {
		rec, err := r.Next()
		if err != nil {
			return out, err
		}
		rec.Probs = append([]float32(nil), rec.Probs...)
		out = append(out, rec)
	}
}

// bits compares float32s bit for bit.
var bits = cmp.Comparer(func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) })

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var long []float32
	for range 3*MaxPerLine + 7 {
		long = append(long, rng.Float32())
	}
	special := []float32{0, 1, 0.5, 1e-5, math.SmallestNonzeroFloat32, math.Nextafter32(1, 0), 0.1, float32(math.Copysign(0, -1))}
	var out bytes.Buffer
	w := NewWriter(&out)
	steps := []struct {
		probs []float32
		end   bool
	}{
		{special, false},
		{long, false},
		{nil, true},
		{nil, true}, // an empty use
		{long[:1], false},
		{nil, false}, // nothing: no line
		{long[1:3], false},
		{nil, true},
	}
	var want []Record
	next := int64(0)
	for _, s := range steps {
		if s.end {
			if err := w.End(); err != nil {
				t.Fatal(err)
			}
			want = append(want, Record{Kind: End, Windows: next})
			next = 0
			continue
		}
		if err := w.Probs(s.probs); err != nil {
			t.Fatal(err)
		}
		for p := s.probs; len(p) > 0; {
			n := min(len(p), MaxPerLine)
			want = append(want, Record{Kind: Probs, First: next, Probs: append([]float32(nil), p[:n]...)})
			next += int64(n)
			p = p[n:]
		}
		if got := w.Windows(); got != next {
			t.Errorf("Windows() = %d, want %d", got, next)
		}
	}
	got, err := readAll(out.Bytes())
	if err != io.EOF {
		t.Fatalf("Next() = %v, want io.EOF at the end", err)
	}
	// -0 is written as 0.
	want[0].Probs[len(special)-1] = 0
	if d := cmp.Diff(want, got, bits); d != "" {
		t.Errorf("records (-want +got):\n%s", d)
	}
	for _, line := range strings.SplitAfter(out.String(), "\n") {
		if len(line) > MaxLine {
			t.Errorf("line of %d bytes, MaxLine is %d", len(line), MaxLine)
		}
	}
	if !strings.HasPrefix(out.String(), "P 0 0 1 0.5 1e-05 1e-45 0.99999994 0.1 0\nP 8 ") {
		t.Errorf("output starts %q", out.String()[:60])
	}
}

// TestLongestLine: a line of MaxPerLine of the longest probabilities fits
// MaxLine and reads back.
func TestLongestLine(t *testing.T) {
	p := make([]float32, MaxPerLine)
	for i := range p {
		p[i] = 1.2345679e-05 // nine significant digits and an exponent
	}
	var out bytes.Buffer
	w := NewWriter(&out)
	w.next = 999_999_999_999_999_999 - MaxPerLine // the largest count
	if err := w.Probs(p); err != nil {
		t.Fatal(err)
	}
	if out.Len() > MaxLine {
		t.Fatalf("line of %d bytes, MaxLine is %d", out.Len(), MaxLine)
	}
	r := NewReader(&out)
	r.next = w.next - MaxPerLine
	rec, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(p, rec.Probs, bits); d != "" {
		t.Error(d)
	}
}

func TestWriterRefuses(t *testing.T) {
	for _, p := range []float32{float32(math.NaN()), -0.5, 1.0000001, float32(math.Inf(1))} {
		var out bytes.Buffer
		w := NewWriter(&out)
		if err := w.Probs([]float32{0.5, p}); !errors.Is(err, ErrProb) {
			t.Errorf("Probs(%v) = %v, want ErrProb", p, err)
		}
		if out.Len() != 0 || w.Windows() != 0 {
			t.Errorf("Probs(%v) wrote %q and counted %d windows", p, out.String(), w.Windows())
		}
	}
}

func TestReaderRefuses(t *testing.T) {
	long := "P 0" + strings.Repeat(" 0.5", MaxPerLine+1) + "\n"
	tests := []struct {
		name, in string
		want     error
	}{
		{"empty line", "\n", ErrSyntax},
		{"kind only", "P\n", ErrSyntax},
		{"unknown kind", "X 0\n", ErrSyntax},
		{"no probability", "P 0\n", ErrSyntax},
		{"no space", "P0 0.5\n", ErrSyntax},
		{"double space", "P 0  0.5\n", ErrSyntax},
		{"trailing space", "P 0 0.5 \n", ErrSyntax},
		{"carriage return", "P 0 0.5\r\n", ErrSyntax},
		{"leading zero", "P 00 0.5\n", ErrSyntax},
		{"signed count", "E +0\n", ErrSyntax},
		{"negative count", "E -1\n", ErrSyntax},
		{"huge count", "E 1234567890123456789\n", ErrSyntax},
		{"NaN", "P 0 NaN\n", ErrSyntax},
		{"Inf", "P 0 Inf\n", ErrSyntax},
		{"negative", "P 0 -0.5\n", ErrSyntax},
		{"above one", "P 0 1.5\n", ErrSyntax},
		{"hex float", "P 0 0x1p-2\n", ErrSyntax},
		{"underscore", "P 0 0_5\n", ErrSyntax},
		{"leading point", "P 0 .5\n", ErrSyntax},
		{"too many", long, ErrSyntax},
		{"too long", "P 0 " + strings.Repeat("1", MaxLine) + "\n", ErrSyntax},
		{"skipped window", "P 0 0.5\nP 2 0.5\n", ErrSequence},
		{"repeated window", "P 0 0.5 0.5\nP 1 0.5\n", ErrSequence},
		{"late start", "P 1 0.5\n", ErrSequence},
		{"wrong end count", "P 0 0.5 0.5\nE 3\n", ErrSequence},
		{"end without windows", "E 1\n", ErrSequence},
		{"count not reset", "P 0 0.5\nE 1\nP 1 0.5\n", ErrSequence},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readAll([]byte(tt.in))
			if !errors.Is(err, tt.want) {
				t.Fatalf("reading %.60q: %v, want %v", tt.in, err, tt.want)
			}
			if len(err.Error()) > 200 {
				t.Errorf("error of %d bytes: %.80s", len(err.Error()), err)
			}
		})
	}
}

// TestReaderTail: a last line without its newline is still a line (the
// child always writes one; a reader need not insist), and an empty stream
// is io.EOF.
func TestReaderTail(t *testing.T) {
	got, err := readAll([]byte("P 0 0.25\nE 1"))
	if err != io.EOF || len(got) != 2 || got[1].Windows != 1 {
		t.Errorf("records %v, %v", got, err)
	}
	if _, err := readAll(nil); err != io.EOF {
		t.Errorf("empty stream: %v, want io.EOF", err)
	}
}

// FuzzReader feeds arbitrary bytes to the Reader: it never panics, every
// record it accepts is well formed (probabilities in [0, 1], at most
// MaxPerLine of them, contiguous windows), and the Writer writes the
// records back into lines that read as the same records, bit for bit.
func FuzzReader(f *testing.F) {
	f.Add([]byte("P 0 0.5 1e-05\nE 2\n"))
	f.Add([]byte("E 0\nE 0\n"))
	f.Add([]byte("P 0 0 1 0.99999994\nP 3 0.1\nE 4\nP 0 0.3\n"))
	f.Add([]byte("P 0 1e-46\n"))
	f.Add([]byte("P 0 0.5\r\n"))
	f.Add([]byte("P 1 0.5\n"))
	f.Add([]byte("P 0 00.50\nE 1"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(bytes.NewReader(in))
		var out bytes.Buffer
		w := NewWriter(&out)
		var recs []Record
		for {
			rec, err := r.Next()
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrSequence) {
					t.Fatalf("error %v wraps neither ErrSyntax nor ErrSequence", err)
				}
				break
			}
			switch rec.Kind {
			case Probs:
				if len(rec.Probs) == 0 || len(rec.Probs) > MaxPerLine {
					t.Fatalf("%d probabilities in a line", len(rec.Probs))
				}
				if rec.First != w.Windows() {
					t.Fatalf("First %d after %d windows", rec.First, w.Windows())
				}
				for _, p := range rec.Probs {
					if !(p >= 0 && p <= 1) {
						t.Fatalf("probability %v", p)
					}
				}
				if err := w.Probs(rec.Probs); err != nil {
					t.Fatalf("Probs(accepted) = %v", err)
				}
			case End:
				if rec.Windows != w.Windows() {
					t.Fatalf("E %d after %d windows", rec.Windows, w.Windows())
				}
				if err := w.End(); err != nil {
					t.Fatal(err)
				}
			default:
				t.Fatalf("kind %q", rec.Kind)
			}
			rec.Probs = append([]float32(nil), rec.Probs...)
			recs = append(recs, rec)
		}
		again, err := readAll(out.Bytes())
		if err != io.EOF {
			t.Fatalf("re-reading what the Writer wrote: %v", err)
		}
		if d := cmp.Diff(recs, again, bits); d != "" {
			t.Fatalf("records re-read differ (-first +again):\n%s", d)
		}
	})
}

// FuzzProbs: any float32s in [0, 1], written in blocks of any sizes with
// uses ending anywhere, read back bit for bit.
func FuzzProbs(f *testing.F) {
	f.Add([]byte{0, 0, 0, 63, 3, 0, 0, 128, 63})
	f.Add([]byte{1, 0, 0, 0, 0, 255})
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		w := NewWriter(&out)
		var want []float32
		uses := 0
		for len(in) >= 5 {
			op, v := in[0], math.Float32frombits(binary.LittleEndian.Uint32(in[1:5]))
			in = in[5:]
			if !(v >= 0 && v <= 1) {
				v = float32(math.Abs(math.Mod(float64(v), 1)))
				if v != v {
					v = 0
				}
			}
			if v == 0 {
				v = 0 // no -0
			}
			n := int(op % 8)
			block := make([]float32, n)
			for i := range block {
				block[i] = v
			}
			if err := w.Probs(block); err != nil {
				t.Fatal(err)
			}
			want = append(want, block...)
			if op >= 200 {
				if err := w.End(); err != nil {
					t.Fatal(err)
				}
				uses++
			}
		}
		got, err := readAll(out.Bytes())
		if err != io.EOF {
			t.Fatal(err)
		}
		var probs []float32
		ends := 0
		for _, r := range got {
			probs = append(probs, r.Probs...)
			if r.Kind == End {
				ends++
			}
		}
		if ends != uses {
			t.Fatalf("%d E lines, want %d", ends, uses)
		}
		if d := cmp.Diff(want, probs, bits, cmp.Comparer(func(a, b []float32) bool { return len(a) == 0 && len(b) == 0 || cmp.Equal(a, b, bits) })); d != "" {
			t.Fatalf("probabilities (-want +got):\n%s", d)
		}
	})
}
