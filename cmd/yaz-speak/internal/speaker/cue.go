package speaker

import (
	"math"

	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/tts"
)

// The sound cues (tts.CueStart, tts.CueEnd): a sine burst of CueLength
// at a third of full scale, faded in and out over CueFade (a raised
// cosine) so that it does not click. Generated here, never recorded.
const (
	CueLength    = 80  // ms
	CueFade      = 10  // ms
	CueStartHz   = 880 // a hold starts listening
	CueEndHz     = 660 // a hold's recording ended
	cueAmplitude = 0.33
)

// CueSamples are the 16 kHz samples of a cue; false for an unknown cue.
func CueSamples(cue string) ([]int16, bool) {
	var hz float64
	switch cue {
	case tts.CueStart:
		hz = CueStartHz
	case tts.CueEnd:
		hz = CueEndHz
	default:
		return nil, false
	}
	n := CueLength * pcm.SampleRate / 1000
	fade := CueFade * pcm.SampleRate / 1000
	out := make([]int16, n)
	for i := range out {
		g := 1.0
		switch {
		case i < fade:
			g = 0.5 - 0.5*math.Cos(math.Pi*float64(i)/float64(fade))
		case i >= n-fade:
			g = 0.5 - 0.5*math.Cos(math.Pi*float64(n-1-i)/float64(fade))
		}
		v := g * cueAmplitude * math.Sin(2*math.Pi*hz*float64(i)/pcm.SampleRate)
		out[i] = int16(math.Round(v * math.MaxInt16))
	}
	return out, true
}
