package wav

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/yazses/yazses/lib/pcm"
)

// reference decodes a whole stream the simple way: every source frame,
// then pcm.Resample.
func reference(t *testing.T, b []byte) []float32 {
	t.Helper()
	wr, err := NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var src []float32
	buf := make([]float32, 1000)
	for {
		n, err := wr.ReadMono(buf)
		src = append(src, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if wr.Info().SampleRate == pcm.SampleRate {
		return src
	}
	return pcm.Resample(src, wr.Info().SampleRate, pcm.SampleRate)
}

// TestReader16kMatchesResample: reading block by block gives the samples
// of decoding everything and resampling it at once, to the bit, whatever
// the size of the caller's buffer.
func TestReader16kMatchesResample(t *testing.T) {
	for _, l := range []layout{
		{tag: 1, bits: 16, channels: 1, rate: 16000},
		{tag: 1, bits: 16, channels: 2, rate: 44100},
		{tag: 1, bits: 8, channels: 1, rate: 192000},
		{tag: 3, bits: 32, channels: 3, rate: 8000},
		{tag: 1, bits: 24, channels: 2, rate: 48000, size: sizeStream},
	} {
		frames := l.rate*2 + 123
		b := l.build(l.encode(sine(frames, l.rate, l.channels, 440, 0.5)))
		want := reference(t, b)
		for _, size := range []int{1, 7, 4096, 100000} {
			r, err := NewReader16k(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			var got []float32
			buf := make([]float32, size)
			for {
				n, err := r.Read(buf)
				got = append(got, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("%d Hz: Read: %v", l.rate, err)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%d Hz, reads of %d: %d samples, want %d", l.rate, size, len(got), len(want))
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%d Hz, reads of %d: sample %d = %v, want %v", l.rate, size, i, got[i], want[i])
				}
			}
		}
	}
}

// TestReader16kTruncated: a file cut short gives its samples, then
// ErrTruncated.
func TestReader16kTruncated(t *testing.T) {
	l := layout{tag: 1, bits: 16, channels: 1, rate: 48000}
	b := l.build(l.encode(sine(48000, 48000, 1, 300, 0.5)))
	r, err := NewReader16k(bytes.NewReader(b[:len(b)/2]))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]float32, 1000)
	total := 0
	for {
		n, err := r.Read(buf)
		total += n
		if err != nil {
			if !errors.Is(err, ErrTruncated) {
				t.Errorf("Read at the cut: %v, want ErrTruncated", err)
			}
			break
		}
	}
	head := len(l.build(nil))
	if want := (len(b)/2 - head) / 2 / 3; total != want { // whole frames at 48 kHz, then a third
		t.Errorf("%d samples before the cut, want %d", total, want)
	}
}

// TestReader16kShortOK: under ShortOK a file cut short gives the same
// samples as without it, then io.EOF, and Short says how many bytes of
// its declared data it lacked, at 16 kHz (read as it is) and at another
// rate (resampled); a complete file is not short.
func TestReader16kShortOK(t *testing.T) {
	for _, rate := range []int{16000, 48000} {
		l := layout{tag: 1, bits: 16, channels: 1, rate: rate}
		b := l.build(l.encode(sine(rate, rate, 1, 300, 0.5)))
		cut := len(b)/2 + 1 // half a frame more: a partial frame too
		read := func(data []byte, shortOK bool) ([]float32, *Reader16k, error) {
			r, err := NewReader16k(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if shortOK {
				r.ShortOK()
			}
			var out []float32
			buf := make([]float32, 700)
			for {
				n, err := r.Read(buf)
				out = append(out, buf[:n]...)
				if err != nil {
					return out, r, err
				}
			}
		}
		want, _, err := read(b[:cut], false)
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("%d Hz: without ShortOK: %v, want ErrTruncated", rate, err)
		}
		got, r, err := read(b[:cut], true)
		if err != io.EOF || len(got) == 0 || !slices.Equal(got, want) {
			t.Errorf("%d Hz: with ShortOK: %d samples, %v; want the %d samples before the cut and io.EOF", rate, len(got), err, len(want))
		}
		if short := r.Short(); short != int64(len(b)-cut) {
			t.Errorf("%d Hz: Short() = %d, want %d", rate, short, len(b)-cut)
		}
		if _, r, err := read(b, true); err != io.EOF || r.Short() != 0 {
			t.Errorf("%d Hz: a whole file with ShortOK: %v, Short() %d; want io.EOF and 0", rate, err, r.Short())
		}
	}
}

// sparseWAV writes a WAV header that declares seconds of audio at rate
// and bits, and extends the file to that size without writing its data (a
// sparse file of a few KiB on disk).
func sparseWAV(t *testing.T, rate, bits, seconds int) string {
	t.Helper()
	l := layout{tag: 1, bits: bits, channels: 1, rate: rate}
	data := int64(rate) * int64(seconds) * int64(bits/8)
	head := l.build(nil)
	binary.LittleEndian.PutUint32(head[4:], uint32(int64(len(head))-8+data))
	binary.LittleEndian.PutUint32(head[len(head)-4:], uint32(data))
	p := filepath.Join(t.TempDir(), "sparse.wav")
	if err := os.WriteFile(p, head, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, int64(len(head))+data); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMemoryFollowsOutput: what reading a file costs is
// a function of its 16 kHz output, never of the source's rate or width. A
// 30 s 192 kHz 8-bit file (5.8 M source frames, 23 MB as float32) read in
// pieces allocates well under a MiB; read whole it allocates about its
// output (480 000 samples, 1.9 MB), not its source.
func TestMemoryFollowsOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("resamples 30 s at 192 kHz")
	}
	path := sparseWAV(t, 192000, 8, 30)
	const out = 30 * pcm.SampleRate

	var before, after runtimeMem
	before.read()
	r, err := OpenFile16k(path)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]float32, 4096)
	total := 0
	for {
		n, err := r.Read(buf)
		total += n
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	after.read()
	if total != out {
		t.Errorf("read %d samples, want %d", total, out)
	}
	if a := after.total - before.total; a > 1<<20 {
		t.Errorf("reading 30 s of 192 kHz audio in pieces allocated %d bytes, want under 1 MiB", a)
	}

	before.read()
	got, _, err := ReadFile16k(path, 3600*pcm.SampleRate)
	after.read()
	if err != nil || len(got) != out {
		t.Fatalf("ReadFile16k = %d samples, %v; want %d", len(got), err, out)
	}
	if a, limit := after.total-before.total, uint64(3*4*out+(1<<20)); a > limit {
		t.Errorf("ReadFile16k of 30 s of 192 kHz audio allocated %d bytes, want under %d (three times its output)", a, limit)
	}
}
