// Package testsound generates the sounds the voice-detector tests play:
// silence, white and pink noise, mains hum, at a level in dBFS, as float32
// samples at the wire rate (16 kHz). Seeded generators give the same
// samples on every run. Tests only.
package testsound

import (
	"math"
	"math/rand/v2"

	"github.com/yazses/yazses/lib/pcm"
)

const sr = pcm.SampleRate

// Silence is secs of digital silence.
func Silence(secs float64) []float32 { return make([]float32, int(secs*sr)) }

// DBFS is the amplitude of db decibels below full scale.
func DBFS(db float64) float64 { return math.Pow(10, db/20) }

// White is Gaussian white noise at an RMS of db dBFS.
func White(rng *rand.Rand, secs, db float64) []float32 {
	out := make([]float32, int(secs*sr))
	a := DBFS(db)
	for i := range out {
		out[i] = float32(rng.NormFloat64() * a)
	}
	return out
}

// Pink is 1/f noise (Paul Kellet's filter over white noise) at an RMS of
// db dBFS: what a fan or a room sounds like to a detector.
func Pink(rng *rand.Rand, secs, db float64) []float32 {
	out := make([]float32, int(secs*sr))
	var b0, b1, b2, b3, b4, b5, b6 float64
	for i := range out {
		w := rng.NormFloat64()
		b0 = 0.99886*b0 + w*0.0555179
		b1 = 0.99332*b1 + w*0.0750759
		b2 = 0.96900*b2 + w*0.1538520
		b3 = 0.86650*b3 + w*0.3104856
		b4 = 0.55000*b4 + w*0.5329522
		b5 = -0.7616*b5 - w*0.0168980
		out[i] = float32(b0 + b1 + b2 + b3 + b4 + b5 + b6 + w*0.5362)
		b6 = w * 0.115926
	}
	return ScaleTo(out, db)
}

// Hum is mains hum: 50 Hz with its odd harmonics, at an RMS of db dBFS.
func Hum(secs, db float64) []float32 {
	out := make([]float32, int(secs*sr))
	for i := range out {
		x := 2 * math.Pi * 50 * float64(i) / sr
		out[i] = float32(math.Sin(x) + 0.5*math.Sin(3*x) + 0.25*math.Sin(5*x))
	}
	return ScaleTo(out, db)
}

// RMS is the root mean square of s (0 for none).
func RMS(s []float32) float64 {
	var sum float64
	for _, x := range s {
		sum += float64(x) * float64(x)
	}
	return math.Sqrt(sum / float64(max(1, len(s))))
}

// ScaleTo scales s in place to an RMS of db dBFS and returns it.
func ScaleTo(s []float32, db float64) []float32 {
	g := DBFS(db) / RMS(s)
	for i := range s {
		s[i] = float32(float64(s[i]) * g)
	}
	return s
}

// Concat joins parts in order.
func Concat(parts ...[]float32) []float32 {
	var out []float32
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
