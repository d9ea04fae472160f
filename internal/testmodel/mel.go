package testmodel

import "math"

// nFFTBins is the number of frequency bins whisper.cpp expects per mel filter:
// a 400-sample FFT at 16 kHz gives 400/2+1 bins.
const nFFTBins = 201

// melFilters returns the real whisper mel filterbank, nMels rows of nFFTBins
// weights: the same as librosa.filters.mel(sr=16000, n_fft=400, n_mels=nMels)
// with the Slaney mel scale and Slaney area normalisation, which is how
// OpenAI's mel_filters.npz was made.
func melFilters(nMels int) []float32 { return melFiltersFFT(nMels, 400) }

// melFiltersFFT is librosa.filters.mel(sr=16000, n_fft=nFFT, n_mels=nMels)
// (Slaney scale and normalisation): nMels rows of nFFT/2+1 weights. NeMo's
// Parakeet preprocessor uses the same filters with n_fft 512.
func melFiltersFFT(nMels, nFFT int) []float32 {
	const sr = 16000.0
	bins := nFFT/2 + 1
	fftFreq := make([]float64, bins)
	for i := range fftFreq {
		fftFreq[i] = float64(i) * (sr / 2) / float64(bins-1)
	}
	minMel, maxMel := hzToMel(0), hzToMel(sr/2)
	melF := make([]float64, nMels+2)
	for i := range melF {
		melF[i] = melToHz(minMel + float64(i)*(maxMel-minMel)/float64(nMels+1))
	}
	out := make([]float32, nMels*bins)
	for m := range nMels {
		lowDiff := melF[m+1] - melF[m]
		highDiff := melF[m+2] - melF[m+1]
		enorm := 2 / (melF[m+2] - melF[m])
		for k, f := range fftFreq {
			lower := (f - melF[m]) / lowDiff
			upper := (melF[m+2] - f) / highDiff
			w := math.Max(0, math.Min(lower, upper))
			out[m*bins+k] = float32(w * enorm)
		}
	}
	return out
}

// Slaney mel scale: linear below 1 kHz, logarithmic above.
const (
	melFSP      = 200.0 / 3
	melMinLogHz = 1000.0
	melMinLog   = melMinLogHz / melFSP
)

var melLogStep = math.Log(6.4) / 27

func hzToMel(f float64) float64 {
	if f < melMinLogHz {
		return f / melFSP
	}
	return melMinLog + math.Log(f/melMinLogHz)/melLogStep
}

func melToHz(m float64) float64 {
	if m < melMinLog {
		return m * melFSP
	}
	return melMinLogHz * math.Exp(melLogStep*(m-melMinLog))
}
