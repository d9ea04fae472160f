package vadlink

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/vad"
	"github.com/yazses/yazses/lib/vadspan"
	"github.com/yazses/yazses/lib/vadwire"
)

// holdBack is how many windows the energy detector keeps before it
// reports them (128 ms): it takes MinSpeech (120 ms) of loud frames to
// decide that speech started, and then reports those windows as speech
// too, so a span starts where the speech did.
const holdBack = 4

// NewEnergy returns a Link to the energy detector (package vad), for when
// there is no Silero model: it runs in process behind the same wire
// format, each window's "probability" 1 while the energy detector hears
// speech and 0 otherwise (with Params.Span's thresholds anywhere in
// between, the same spans whatever they are). Its noise floor and its
// 120 ms to decide are the energy detector's; its answers come 128 ms
// behind the audio (holdBack), so that a span starts where the speech did.
func NewEnergy(ctx context.Context) *Link {
	l := newLink(ctx)
	fr, fw := io.Pipe()
	lr, lw := io.Pipe()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		err := runEnergy(fr, lw)
		fr.CloseWithError(err)
		lw.CloseWithError(err) // the reader sees EOF (nil) or err
	}()
	l.start(fw, lr)
	return l
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

// runEnergy is the energy detector's side of the wire: frames in, lines
// out, until EOF on frames (nil) or an error.
func runEnergy(frames io.Reader, lines io.Writer) error {
	fr := frame.NewReader(frames)
	w := vadwire.NewWriter(lines)
	e := newEnergyUse()
	for {
		f, err := fr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch f.Type {
		case frame.Audio:
			e.write(pcm.Decode(nil, f.Payload))
			if err := w.Probs(e.take(false)); err != nil {
				return err
			}
		case frame.End:
			e.flush()
			if err := w.Probs(e.take(true)); err != nil {
				return err
			}
			if err := w.End(); err != nil {
				return err
			}
			e = newEnergyUse()
		default:
			return errors.New("energy detector: a frame other than audio or end")
		}
	}
}

// energyUse is one use of the energy detector.
type energyUse struct {
	seg  *vad.Segmenter
	pend []int16   // a partial window
	held []float32 // decided, not yet reported
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
func (e *energyUse) take(all bool) []float32 {
	n := len(e.held)
	if !all {
		n = max(0, n-holdBack)
	}
	out := append([]float32(nil), e.held[:n]...)
	e.held = append(e.held[:0], e.held[n:]...)
	return out
}
