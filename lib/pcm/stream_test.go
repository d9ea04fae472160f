package pcm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestResamplerMatchesResample: the streaming resampler gives Resample's
// samples to the bit, for every rate kind (equal, table, per-tap, up and
// down) and any way of cutting the input into blocks, including blocks of
// one sample and blocks shorter than the filter.
func TestResamplerMatchesResample(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, from := range []int{8000, 11025, 16000, 22050, 44100, 44099, 48000, 96000, 192000} {
		for _, n := range []int{0, 1, 5, 33, 400, 20000} {
			in := make([]float32, n)
			for i := range in {
				in[i] = float32(rng.Float64()*2 - 1)
			}
			want := Resample(in, from, SampleRate)
			for _, blocks := range []string{"whole", "ones", "random"} {
				r := NewResampler(from, SampleRate)
				var got []float32
				switch blocks {
				case "whole":
					got = r.Write(got, in)
				case "ones":
					for i := range in {
						got = r.Write(got, in[i:i+1])
					}
				default:
					for rest := in; len(rest) > 0; {
						k := min(len(rest), 1+rng.IntN(3000))
						got = r.Write(got, rest[:k])
						rest = rest[k:]
					}
				}
				got = r.Flush(got)
				if len(got) != len(want) {
					t.Errorf("%d Hz, %d samples, %s: %d out, want %d", from, n, blocks, len(got), len(want))
					continue
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Errorf("%d Hz, %d samples, %s: sample %d = %v, want %v", from, n, blocks, i, got[i], want[i])
						break
					}
				}
				if more := r.Flush(r.Write(nil, in)); len(more) != 0 {
					t.Errorf("%d Hz: %d samples after Flush", from, len(more))
				}
			}
		}
	}
}

// TestResamplerKeepsLittle: however long the stream, the resampler holds a
// few dozen input samples, not the stream.
func TestResamplerKeepsLittle(t *testing.T) {
	for _, from := range []int{8000, 44100, 192000} {
		r := NewResampler(from, SampleRate)
		block := make([]float32, 4096)
		var out []float32
		for range 500 { // 10 s at 192 kHz, 4 min at 8 kHz
			out = r.Write(out[:0], block)
		}
		if limit := 2*r.k.lo + 2 + len(block); len(r.buf) > limit {
			t.Errorf("%d Hz: %d input samples kept, want at most %d", from, len(r.buf), limit)
		}
	}
}
