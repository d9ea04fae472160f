package pcm

import "math"

// resampleHalfTaps is the one-sided length of the windowed-sinc kernel, in
// input samples at the lower of the two rates.
const resampleHalfTaps = 16

// maxPhases bounds the precomputed kernel table: rate pairs whose reduced
// ratio has at most this many output phases (22050→16000 has 320,
// 44100→16000 160, 48000→16000 1) use the table; others compute each tap.
const maxPhases = 4096

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
	k := newKernel(from, to)
	n := int(int64(len(in)) * int64(to) / int64(from))
	out := make([]float32, n)
	for i := range out {
		out[i] = k.at(in, 0, int64(i))
	}
	return out
}

// kernel holds the filter for one rate pair. Output sample i sits at input
// position i·from/to = base + frac/to; its taps depend only on frac, so for
// rational ratios they are computed once per phase.
type kernel struct {
	from, to int64 // reduced ratio
	cutoff   float64
	half     float64 // kernel half-width in input samples
	lo       int     // taps run from base-lo to base+lo
	table    [][]float32
}

func newKernel(from, to int) *kernel {
	g := gcd(from, to)
	k := &kernel{from: int64(from / g), to: int64(to / g)}
	k.cutoff = math.Min(1, float64(to)/float64(from))
	k.half = float64(resampleHalfTaps) / k.cutoff
	k.lo = int(math.Ceil(k.half))
	if k.to <= maxPhases {
		k.table = make([][]float32, k.to)
		for ph := range k.table {
			k.table[ph] = k.taps(float64(ph) / float64(k.to))
		}
	}
	return k
}

// taps computes the weights of input samples base-lo..base+lo for an
// output position frac (0 ≤ frac < 1) past base, normalised to sum to 1.
func (k *kernel) taps(frac float64) []float32 {
	w := make([]float32, 2*k.lo+1)
	var sum float64
	ws := make([]float64, len(w))
	for j := range ws {
		x := float64(j-k.lo) - frac
		v := k.cutoff * sinc(k.cutoff*x) * blackman(x/k.half)
		ws[j] = v
		sum += v
	}
	for j := range w {
		w[j] = float32(ws[j] / sum)
	}
	return w
}

// at is output sample i, from a window of the signal: in holds the input
// samples from index off on (Resample: the whole signal, off 0), and every
// tap of output i that lies inside the signal lies inside in. Resample and
// the Resampler both compute every sample here, so a stream's samples are
// Resample's to the bit.
func (k *kernel) at(in []float32, off, i int64) float32 {
	pos := i * k.from
	base := pos / k.to
	ph := pos % k.to
	var w []float32
	if k.table != nil {
		w = k.table[ph]
	} else {
		w = k.taps(float64(ph) / float64(k.to))
	}
	start := int(base - off - int64(k.lo))
	if start >= 0 && start+len(w) <= len(in) {
		var acc float32
		for j, v := range w {
			acc += v * in[start+j]
		}
		return acc
	}
	// At the edges of the signal, renormalise over the taps inside it.
	var acc, wsum float64
	for j, v := range w {
		if p := start + j; p >= 0 && p < len(in) {
			acc += float64(v) * float64(in[p])
			wsum += float64(v)
		}
	}
	if wsum == 0 {
		return 0
	}
	return float32(acc / wsum)
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
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
