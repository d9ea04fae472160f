package stream

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/asr"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/decodetest"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/silero"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/voice"
	"github.com/yazses/yazses/internal/testvad"
	"github.com/yazses/yazses/lib/pcm"
)

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// nullRecognizer decodes nothing, at once: what stream mode costs besides
// whisper is left.
type nullRecognizer struct{}

func (nullRecognizer) Transcribe(context.Context, []float32, asr.Options) (asr.Result, error) {
	return asr.Result{}, nil
}

// BenchmarkStreamDetector: the CPU stream mode spends per second of audio
// besides whisper (reading the pipe, the detector, cutting utterances),
// with Silero (one thread, its −60 dBFS gate, as yaz-decode runs it) and
// with the energy detector, on a minute of speech (jfk.wav end to end), of
// speech and a quiet room's noise floor (−70 dBFS) in turns of 11 s, and
// of the quiet room alone.
func BenchmarkStreamDetector(b *testing.B) {
	one := decodetest.JFK(b)
	rng := rand.New(rand.NewPCG(9, 9))
	floor := func(n int) []int16 {
		out := make([]int16, n)
		for i := range out {
			out[i] = int16(rng.NormFloat64() * 10.4)
		}
		return out
	}
	minute := 60 * pcm.SampleRate
	var speech, half []int16
	for len(speech) < minute {
		speech = append(speech, one...)
	}
	for len(half) < minute {
		half = append(append(half, one...), floor(len(one))...)
	}
	inputs := []struct {
		name  string
		audio []int16
	}{
		{"speech", speech[:minute]},
		{"half-quiet", half[:minute]},
		{"quiet-room", floor(minute)},
	}
	m, err := silero.Load(testvad.Path(b), silero.Options{Skip: silero.QuietSkip{Level: voice.StreamGateDB}})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	for _, in := range inputs {
		raw := pcm.Encode(nil, in.audio)
		for _, det := range []struct {
			name string
			d    *voice.Detector
		}{{"energy", nil}, {"silero", voice.New(m)}} {
			b.Run(in.name+"/"+det.name, func(b *testing.B) {
				c := newConfig()
				c.VAD.Threshold = 0.5
				c.Detector = det.d
				b.ResetTimer()
				start := cpuTime()
				for range b.N {
					if err := c.Run(context.Background(), discard, nullRecognizer{}, bytes.NewReader(raw), io.Discard); err != nil {
						b.Fatal(err)
					}
				}
				perSec := float64(cpuTime()-start) / float64(b.N) / (float64(len(in.audio)) / pcm.SampleRate)
				b.ReportMetric(perSec/1e6, "cpu-ms/audio-s")
				b.ReportMetric(100*perSec/1e9, "%core")
			})
		}
	}
}
