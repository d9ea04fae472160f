package pcm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"testing"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	in := []int16{0, 1, -1, 32767, -32768, 1234, -4321}
	b := Encode(nil, in)
	if len(b) != len(in)*FrameBytes {
		t.Fatalf("Encode: %d bytes, want %d", len(b), len(in)*FrameBytes)
	}
	if b[6] != 0xff || b[7] != 0x7f {
		t.Errorf("Encode(32767) = % x, want little-endian ff 7f", b[6:8])
	}
	got := Decode(nil, append(b, 0x55)) // a trailing odd byte is ignored
	for i := range in {
		if got[i] != in[i] {
			t.Fatalf("Decode(Encode(x))[%d] = %d, want %d", i, got[i], in[i])
		}
	}
	if len(got) != len(in) {
		t.Errorf("Decode kept %d samples, want %d", len(got), len(in))
	}
}

func TestFloatConversion(t *testing.T) {
	in := []int16{-32768, -16384, 0, 16384, 32767}
	f := ToFloat32(nil, in)
	if f[0] != -1 || f[2] != 0 || f[3] != 0.5 {
		t.Errorf("ToFloat32 = %v, want s/32768", f)
	}
	back := FromFloat32(nil, f)
	for i := range in {
		if back[i] != in[i] {
			t.Errorf("FromFloat32(ToFloat32(%d)) = %d", in[i], back[i])
		}
	}
	if c := FromFloat32(nil, []float32{2, -2}); c[0] != 32767 || c[1] != -32768 {
		t.Errorf("FromFloat32 clipping = %v", c)
	}
}

func TestWAVHeader(t *testing.T) {
	h := WAVHeader(32000)
	if len(h) != 44 || string(h[:4]) != "RIFF" || string(h[8:16]) != "WAVEfmt " || string(h[36:40]) != "data" {
		t.Fatalf("WAVHeader = % x", h)
	}
	for off, want := range map[int]uint32{4: 36 + 32000, 24: SampleRate, 28: BytesPerSecond, 40: 32000} {
		if got := binary.LittleEndian.Uint32(h[off:]); got != want {
			t.Errorf("WAVHeader field at %d = %d, want %d", off, got, want)
		}
	}
	s := StreamWAVHeader()
	if binary.LittleEndian.Uint32(s[4:]) != 0xFFFFFFFF || binary.LittleEndian.Uint32(s[40:]) != 0xFFFFFFFF {
		t.Errorf("StreamWAVHeader sizes are not 0xFFFFFFFF: % x", s)
	}
}

type shortWriter struct{ n int }

func (w *shortWriter) Write(p []byte) (int, error) { return min(len(p), w.n), nil }

func TestFrameWriter(t *testing.T) {
	var b bytes.Buffer
	w := NewFrameWriter(&b)
	if err := w.Write([]int16{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if w.Samples() != 3 || b.Len() != 6 {
		t.Errorf("after 3 samples: Samples() = %d, %d bytes", w.Samples(), b.Len())
	}
	sw := NewFrameWriter(&shortWriter{n: 3})
	if err := sw.Write([]int16{1, 2}); !errors.Is(err, io.ErrShortWrite) {
		t.Errorf("short write: err = %v, want io.ErrShortWrite", err)
	}
}

func tone(freq float64, rate int, secs float64) []float32 {
	out := make([]float32, int(float64(rate)*secs))
	for i := range out {
		out[i] = float32(0.5 * math.Sin(2*math.Pi*freq*float64(i)/float64(rate)))
	}
	return out
}

func rms(s []float32) float64 {
	var sum float64
	for _, v := range s {
		sum += float64(v) * float64(v)
	}
	return math.Sqrt(sum / float64(len(s)))
}

func crossings(s []float32) int {
	n := 0
	for i := 1; i < len(s); i++ {
		if (s[i-1] < 0) != (s[i] < 0) {
			n++
		}
	}
	return n
}

func TestResample(t *testing.T) {
	for _, tc := range []struct {
		from   int
		freq   float64
		wantDB float64 // output level relative to input; 0 = passes
	}{
		{44100, 1000, 0},
		{16000, 1000, 0}, // equal rates: a copy
		{22050, 3000, 0},
		{48000, 440, 0},
		{8000, 440, 0},      // upsampling
		{11025, 1000, 0},    // 640 phases: the table
		{44100, 12000, -40}, // above the new Nyquist: must not fold to 4 kHz
		{22050, 10000, -40},
	} {
		in := tone(tc.freq, tc.from, 1)
		out := Resample(in, tc.from, SampleRate)
		if want := SampleRate; len(out) < want-1 || len(out) > want {
			t.Errorf("%d Hz → 16 kHz: %d samples, want %d", tc.from, len(out), want)
		}
		body := out[200 : len(out)-200]
		db := 20 * math.Log10(rms(body)/rms(in))
		if tc.wantDB == 0 {
			if math.Abs(db) > 0.2 {
				t.Errorf("%d Hz tone from %d Hz: level %.2f dB, want 0", int(tc.freq), tc.from, db)
			}
			wantX := 2 * tc.freq * float64(len(body)) / SampleRate
			if got := float64(crossings(body)); math.Abs(got-wantX) > 3 {
				t.Errorf("%d Hz tone from %d Hz: %v zero crossings, want %v", int(tc.freq), tc.from, got, wantX)
			}
		} else if db > tc.wantDB {
			t.Errorf("%d Hz tone from %d Hz: level %.1f dB, want below %.0f dB (aliasing)", int(tc.freq), tc.from, db, tc.wantDB)
		}
	}
}

// TestResampleTableMatchesDirect: the precomputed phase table and the
// per-tap computation give the same samples.
func TestResampleTableMatchesDirect(t *testing.T) {
	in := tone(700, 22050, 0.2)
	k := newKernel(22050, SampleRate)
	if k.table == nil {
		t.Fatal("22050→16000 did not get a table")
	}
	direct := *k
	direct.table = nil
	for i := 0; i < int(0.2*SampleRate)-1; i++ {
		if a, b := k.at(in, 0, int64(i)), direct.at(in, 0, int64(i)); math.Abs(float64(a-b)) > 1e-6 {
			t.Fatalf("sample %d: table %v, direct %v", i, a, b)
		}
	}
}

func BenchmarkResample44k(b *testing.B) {
	in := tone(440, 44100, 11)
	for b.Loop() {
		Resample(in, 44100, SampleRate)
	}
}
