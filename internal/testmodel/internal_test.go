package testmodel

import (
	"math"
	"testing"
)

func TestF16(t *testing.T) {
	tests := []struct {
		in   float32
		want uint16
	}{
		{0, 0x0000},
		{float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{0.5, 0x3800},
		{65504, 0x7bff},
		{65520, 0x7c00},                 // rounds up to +Inf
		{1e6, 0x7c00},                   // overflow
		{6.103515625e-05, 0x0400},       // smallest normal
		{5.960464477539063e-08, 0x0001}, // smallest subnormal
		{2e-8, 0x0000},                  // below half the smallest subnormal
		{1 + 1.0/2048, 0x3c00},          // tie, rounds to even
		{1 + 3.0/2048, 0x3c02},          // tie, rounds to even (up)
		{float32(math.Inf(-1)), 0xfc00},
	}
	for _, tt := range tests {
		if got := f16(tt.in); got != tt.want {
			t.Errorf("f16(%g) = %#04x, want %#04x", tt.in, got, tt.want)
		}
	}
	if got := f16(float32(math.NaN())); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("f16(NaN) = %#04x, want a NaN", got)
	}
	// Every finite half survives a round trip.
	for h := range uint32(0x10000) {
		if h&0x7c00 == 0x7c00 {
			continue
		}
		if got := f16(f16ToF32(uint16(h))); got != uint16(h) && !(h == 0x8000 && got == 0x8000) {
			t.Fatalf("f16(f16ToF32(%#04x)) = %#04x", h, got)
		}
	}
}

func TestMelFilters(t *testing.T) {
	m := melFilters(80)
	if len(m) != 80*nFFTBins {
		t.Fatalf("len(melFilters(80)) = %d, want %d", len(m), 80*nFFTBins)
	}
	// librosa.filters.mel(sr=16000, n_fft=400, n_mels=80)[0] is zero except
	// bin 1 (40 Hz), which lies on the rising edge 0..37.2 Hz..74.5 Hz.
	for k := range nFFTBins {
		want := float32(0)
		if k == 1 {
			want = 0.024862
		}
		if d := math.Abs(float64(m[k] - want)); d > 1e-5 {
			t.Errorf("filter 0 bin %d = %g, want %g", k, m[k], want)
		}
	}
	// Every filter is non-negative, has weight, and peaks after the previous one.
	prevPeak := -1
	for r := range 80 {
		peak, sum := 0, float32(0)
		for k := range nFFTBins {
			v := m[r*nFFTBins+k]
			if v < 0 {
				t.Fatalf("filter %d bin %d = %g < 0", r, k, v)
			}
			sum += v
			if v > m[r*nFFTBins+peak] {
				peak = k
			}
		}
		if sum == 0 || peak < prevPeak {
			t.Errorf("filter %d: sum %g, peak bin %d after %d", r, sum, peak, prevPeak)
		}
		prevPeak = peak
	}
}

func TestVocabWords(t *testing.T) {
	for _, s := range []Size{Mini, Tiny} {
		h, _ := s.Hparams()
		words := vocabWords(h)
		for i, w := range words {
			for _, c := range []byte(w) {
				if c < ' ' || c > '~' {
					t.Fatalf("%v: token %d = %q is not printable ASCII", s, i, w)
				}
			}
		}
	}
}
