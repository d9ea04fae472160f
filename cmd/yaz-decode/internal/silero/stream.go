package silero

import (
	"fmt"

	"github.com/yazses/yazses/lib/vadspan"
)

// Stream detects speech on a stream of 16 kHz mono float32 samples, given
// in blocks of any size. It is not safe for concurrent use.
type Stream struct {
	v     vctx
	r     *runner
	tr    *vadspan.Tracker
	pend  []float32 // a partial window
	probs []float32 // the probabilities of the last Write or Flush
	ev    []vadspan.Event
	pos   int64 // samples written since the start (or Reset)
}

// NewStream returns a Stream at the start of a stream, with its own
// detector state, that finds spans with parameters p.
func (m *Model) NewStream(p vadspan.Params) (*Stream, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.buf.p == nil {
		return nil, errClosed
	}
	v, err := newVctx(m.buf, m.threads)
	if err != nil {
		return nil, fmt.Errorf("new VAD stream: %w", err)
	}
	return &Stream{v: v, r: newRunner(v, m.gate), tr: vadspan.NewTracker(p), pend: make([]float32, 0, Window)}, nil
}

// Close frees the Stream's detector.
func (s *Stream) Close() error {
	s.v.free()
	return nil
}

// Write runs the whole windows that samples complete through the detector
// and returns the span events they settle (vadspan.Tracker.Push), or nil.
// A partial window waits for the next Write or Flush. The slice is reused
// by the next call.
func (s *Stream) Write(samples []float32) ([]vadspan.Event, error) {
	if s.v.c == nil {
		return nil, errClosed
	}
	s.probs = s.probs[:0]
	s.pos += int64(len(samples))
	var err error
	if len(s.pend) > 0 {
		n := min(Window-len(s.pend), len(samples))
		s.pend = append(s.pend, samples[:n]...)
		samples = samples[n:]
		if len(s.pend) == Window {
			if s.probs, err = s.r.run(s.pend, s.probs); err != nil {
				return nil, fmt.Errorf("detect speech: %w", err)
			}
			s.pend = s.pend[:0]
		}
	}
	if whole := len(samples) / Window * Window; whole > 0 {
		if s.probs, err = s.r.run(samples[:whole], s.probs); err != nil {
			return nil, fmt.Errorf("detect speech: %w", err)
		}
		samples = samples[whole:]
	}
	s.pend = append(s.pend, samples...)
	s.ev = append(s.ev[:0], s.tr.Push(s.probs...)...)
	return s.ev, nil
}

// Flush ends the stream: the partial window, zero-padded, goes through the
// detector, and every open span ends (vadspan.Tracker.Flush). Call Reset
// to go on with another stream.
func (s *Stream) Flush() ([]vadspan.Event, error) {
	if s.v.c == nil {
		return nil, errClosed
	}
	s.probs = s.probs[:0]
	if len(s.pend) > 0 {
		var err error
		if s.probs, err = s.r.run(s.pend, s.probs); err != nil {
			return nil, fmt.Errorf("detect speech: %w", err)
		}
		s.pend = s.pend[:0]
	}
	s.ev = append(s.ev[:0], s.tr.Push(s.probs...)...)
	s.ev = append(s.ev, s.tr.Flush()...)
	return s.ev, nil
}

// Reset starts a new stream: the detector's state from scratch, sample
// offsets from 0.
func (s *Stream) Reset() {
	s.r.restart()
	s.tr.Reset()
	s.pend = s.pend[:0]
	s.probs = s.probs[:0]
	s.pos = 0
}

// Probs are the probabilities of the windows the last Write or Flush ran.
func (s *Stream) Probs() []float32 { return s.probs }

// Skipped is the number of windows the gate did not run (Options.Skip).
func (s *Stream) Skipped() int64 { return s.r.skipped }

// Pos is the number of samples written since the start.
func (s *Stream) Pos() int64 { return s.pos }

// Speaking is the detector's immediate state (vadspan.Tracker.Speaking).
func (s *Stream) Speaking() bool { return s.tr.Speaking() }

// InSpan reports whether a span has started and not yet ended.
func (s *Stream) InSpan() bool { return s.tr.InSpan() }

// Earliest is the earliest sample a later SpeechStart can name.
func (s *Stream) Earliest() int64 { return s.tr.Earliest() }
