package pcm

import "math"

// resampleHalfTaps is the one-sided length of the windowed-sinc kernel, in
// input samples at the lower of the two rates.
const resampleHalfTaps = 16

// Resample converts mono float samples from one rate to another with a
// Blackman-windowed sinc low-pass (cut-off at the lower Nyquist frequency), so
// that downsampling does not fold high frequencies into the speech band. Equal
// rates return a copy of in.
func Resample(in []float32, from, to int) []float32 {
	if from <= 0 || to <= 0 || len(in) == 0 {
		return nil
	}
	if from == to {
		return append([]float32(nil), in...)
	}
	ratio := float64(to) / float64(from)
	n := int(math.Floor(float64(len(in)) * ratio))
	out := make([]float32, n)
	// Cut-off relative to the input rate.
	cutoff := math.Min(1, ratio)
	half := float64(resampleHalfTaps) / cutoff // kernel half-width in input samples
	for i := range out {
		center := float64(i) / ratio
		lo := int(math.Ceil(center - half))
		hi := int(math.Floor(center + half))
		if lo < 0 {
			lo = 0
		}
		if hi >= len(in) {
			hi = len(in) - 1
		}
		var acc, wsum float64
		for j := lo; j <= hi; j++ {
			x := float64(j) - center
			w := cutoff * sinc(cutoff*x) * blackman(x/half)
			acc += w * float64(in[j])
			wsum += w
		}
		if wsum != 0 {
			acc /= wsum
		}
		out[i] = float32(acc)
	}
	return out
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	px := math.Pi * x
	return math.Sin(px) / px
}

// blackman is the Blackman window on [-1, 1].
func blackman(t float64) float64 {
	if t <= -1 || t >= 1 {
		return 0
	}
	a := math.Pi * (t + 1)
	return 0.42 - 0.5*math.Cos(a) + 0.08*math.Cos(2*a)
}
