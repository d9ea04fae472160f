package vadlink

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/yazses/yazses/lib/vad"
	"github.com/yazses/yazses/lib/vadspan"
)

// holdBack is how many windows the energy detector keeps before it
// reports them (128 ms): it takes MinSpeech (120 ms) of loud frames to
// decide that speech started, and then reports those windows as speech
// too, so a span starts where the speech did.
const holdBack = 4

// NewEnergy returns a Link to the energy detector (package vad), for when
// there is no Silero model. It runs in process, in the caller's goroutine:
// Feed hands the samples to the detector and its decisions straight to the
// use's tracking, each window's "probability" 1 while the energy detector
// hears speech and 0 otherwise (with the use's thresholds anywhere in
// between, the same spans whatever they are). Its noise floor and its
// 120 ms to decide are the energy detector's; its answers come 128 ms
// behind the audio (holdBack), so that a span starts where the speech did.
// No goroutine runs for it; when ctx ends, a use still open fails (as a
// child's Link's uses do) and Done is closed.
func NewEnergy(ctx context.Context) *Link {
	l := newLink(ctx)
	l.energy = &energy{l: l}
	context.AfterFunc(l.ctx, l.energy.closed)
	return l
}

// energy is a Link's energy detector. mu orders Feed, End and the Link's
// end: the use's tracking and its channel are touched under it.
type energy struct {
	l   *Link
	mu  sync.Mutex
	cur *Use       // the use whose events are still open, or nil
	det *energyUse // its detector
}

// begin starts use u (with the Link's mu held: the Link's end waits).
func (e *energy) begin(u *Use) {
	e.mu.Lock()
	e.cur, e.det = u, newEnergyUse()
	e.mu.Unlock()
}

// feed runs the detector on samples of use u and delivers what they settle.
func (e *energy) feed(u *Use, samples []int16) error {
	return e.run(u, func() error {
		e.det.write(samples)
		return u.probs(e.det.take(false))
	})
}

// end runs the last windows of use u, after fed samples: its spans end,
// Ended, the channel closes.
func (e *energy) end(u *Use, fed int64) error {
	return e.run(u, func() error {
		e.det.flush()
		if err := u.probs(e.det.take(true)); err != nil {
			return err
		}
		if err := u.end(fed); err != nil {
			return err
		}
		e.cur, e.det = nil, nil
		return nil
	})
}

// run does step for use u while it is open; a failure ends the Link (and
// so fails the use, in closed).
func (e *energy) run(u *Use, step func() error) error {
	e.mu.Lock()
	err := ErrClosed
	if e.cur == u && e.l.ctx.Err() == nil {
		err = step()
	}
	e.mu.Unlock()
	if err != nil && !errors.Is(err, ErrClosed) {
		e.l.fail(err)
	}
	return err
}

// closed is the Link's end (its context done): a use still open fails
// with the Link's error, then Done is closed.
func (e *energy) closed() {
	e.l.fail(ErrClosed) // the first error stays
	err := e.l.Err()
	e.mu.Lock()
	if e.cur != nil {
		e.cur.failed(err)
		e.cur, e.det = nil, nil
	}
	e.mu.Unlock()
	close(e.l.done)
}

// energyConfig follows speech closely: one 20 ms frame of silence ends
// it; the Tracker applies the use's own durations.
func energyConfig() vad.Config {
	c := vad.DefaultConfig()
	c.MinSilence = 20 * time.Millisecond
	c.PostRoll = 20 * time.Millisecond
	c.PreRoll = time.Nanosecond // no audio kept before speech: only the decisions are used
	return c
}

// energyUse is one use of the energy detector: samples in, the
// probabilities of whole windows out.
type energyUse struct {
	seg  *vad.Segmenter
	pend []int16   // a partial window
	held []float32 // decided, not yet reported
	out  []float32 // take's result
	on   bool
}

func newEnergyUse() *energyUse {
	return &energyUse{seg: vad.NewSegmenter(energyConfig()), pend: make([]int16, 0, vadspan.Window)}
}

func (e *energyUse) write(s []int16) {
	for len(s) > 0 {
		n := min(len(s), vadspan.Window-len(e.pend))
		e.pend = append(e.pend, s[:n]...)
		s = s[n:]
		if len(e.pend) == vadspan.Window {
			e.window(e.pend)
			e.pend = e.pend[:0]
		}
	}
}

// flush runs the partial window, zero-padded.
func (e *energyUse) flush() {
	if len(e.pend) > 0 {
		e.window(append(e.pend, make([]int16, vadspan.Window-len(e.pend))...))
		e.pend = e.pend[:0]
	}
}

func (e *energyUse) window(w []int16) {
	e.seg.Write(w)
	on := e.seg.InSpeech()
	if on && !e.on {
		for i := max(0, len(e.held)-holdBack); i < len(e.held); i++ {
			e.held[i] = 1 // the loud frames that decided it
		}
	}
	e.on = on
	p := float32(0)
	if on {
		p = 1
	}
	e.held = append(e.held, p)
}

// take returns the windows to report: all but the last holdBack, or all.
// The slice is reused by the next call.
func (e *energyUse) take(all bool) []float32 {
	n := len(e.held)
	if !all {
		n = max(0, n-holdBack)
	}
	e.out = append(e.out[:0], e.held[:n]...)
	e.held = append(e.held[:0], e.held[n:]...)
	return e.out
}
