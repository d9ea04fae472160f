package silero

import (
	"math"
)

// QuietSkip is the cheap pre-gate: windows that are quiet by level alone are not
// run through the network. The zero QuietSkip is off (every window runs, and
// the results are whisper.cpp's to the bit).
//
// A window is quiet when its RMS level is at or below Level dBFS. After
// Hangover quiet windows in a row the detector idles: each further quiet
// window gets probability 0 without running. The first window above Level
// wakes it: its LSTM state restarts from zero and the Warmup quiet windows
// just before run first (their probabilities are dropped, 0 stands), so the
// network sees the onset in context. So a span stays open at most Hangover
// windows (and then MinSilence) past the last window above Level.
//
// What it is for: digital silence (Level −90 or so: zeros and dither, as in
// edited or generated files) and, with Level some dB above a quiet room's
// noise floor (−60 over a −70 dBFS floor, say), the idle stretches of an
// always-open microphone. Speech quieter than Level is lost, so keep it
// well below the quietest speech. Measured effect: see BenchmarkQuietSkip and
// the README.
type QuietSkip struct {
	Level    float64 // dBFS; 0: the gate is off
	Hangover int     // quiet windows that still run after a loud one; 0: 16 (512 ms)
	Warmup   int     // quiet windows run again before a loud one after idling; 0: 8 (256 ms)
}

// DigitalSilence is a QuietSkip that skips only (near) digital silence.
var DigitalSilence = QuietSkip{Level: -90}

type gate struct {
	on         bool
	power      float64 // mean square at Level
	hang, warm int
}

func (g QuietSkip) resolve() gate {
	if g.Level == 0 {
		return gate{}
	}
	r := gate{on: true, power: math.Pow(10, g.Level/10), hang: g.Hangover, warm: g.Warmup}
	if r.hang <= 0 {
		r.hang = 16
	}
	if r.warm <= 0 {
		r.warm = 8
	}
	return r
}

// runner feeds whole windows to a detector context, through the gate.
type runner struct {
	v       vctx
	g       gate
	idle    bool
	quiet   int       // quiet windows in a row
	warm    []float32 // the last quiet windows while idle (up to g.warm), oldest first
	scratch []float32
	windows int64 // windows seen
	skipped int64 // windows not run
}

func newRunner(v vctx, g gate) *runner {
	r := &runner{v: v, g: g}
	r.restart()
	return r
}

// restart begins a new stream: state from zero, idle.
func (r *runner) restart() {
	r.v.reset()
	r.idle = r.g.on
	r.quiet = 0
	r.warm = r.warm[:0]
}

// run appends the probabilities of samples: whole windows, but for a last
// partial one, which is zero-padded as whisper.cpp pads.
func (r *runner) run(samples []float32, probs []float32) ([]float32, error) {
	n := (len(samples) + Window - 1) / Window
	r.windows += int64(n)
	if !r.g.on {
		return r.v.detect(samples, probs)
	}
	from := -1 // first window of a run of windows to detect in one call
	flush := func(to int) error {
		if from < 0 {
			return nil
		}
		var err error
		probs, err = r.v.detect(samples[from*Window:min(to*Window, len(samples))], probs)
		from = -1
		return err
	}
	for i := range n {
		w := samples[i*Window : min((i+1)*Window, len(samples))]
		var sum float64
		for _, x := range w {
			sum += float64(x) * float64(x)
		}
		if sum/Window > r.g.power {
			r.quiet = 0
			if r.idle {
				if err := r.wake(); err != nil {
					return probs, err
				}
			}
			if from < 0 {
				from = i
			}
			continue
		}
		r.quiet++
		if !r.idle && r.quiet > r.g.hang {
			r.idle = true
			r.warm = r.warm[:0]
		}
		if !r.idle {
			if from < 0 {
				from = i
			}
			continue
		}
		if err := flush(i); err != nil {
			return probs, err
		}
		r.keep(w)
		probs = append(probs, 0)
		r.skipped++
	}
	return probs, flush(n)
}

// keep remembers a quiet window for a later warm-up.
func (r *runner) keep(w []float32) {
	if r.g.warm == 0 {
		return
	}
	if len(r.warm) == r.g.warm*Window {
		copy(r.warm, r.warm[Window:])
		r.warm = r.warm[:len(r.warm)-Window]
	}
	r.warm = append(r.warm, w...)
	if pad := len(w); pad < Window {
		r.warm = append(r.warm, make([]float32, Window-pad)...)
	}
}

// wake restarts the state and runs the remembered quiet windows.
func (r *runner) wake() error {
	r.v.reset()
	r.idle = false
	if len(r.warm) > 0 {
		var err error
		r.scratch, err = r.v.detect(r.warm, r.scratch[:0])
		r.warm = r.warm[:0]
		r.skipped -= int64(len(r.scratch)) // they ran after all
		return err
	}
	return nil
}
