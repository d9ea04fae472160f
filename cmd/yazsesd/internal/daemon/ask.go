package daemon

import (
	"errors"

	"github.com/yazses/yazses/cmd/yazsesd/internal/asking"
	"github.com/yazses/yazses/cmd/yazsesd/internal/question"
	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/config"
)

// The ask_human method is package asking's (its entry, its audit lines,
// the person's side of a question, the children as package question's
// interfaces); here is the daemon as a question sees it (asking.Daemon):
// the question being asked is state.asking, under the lock a hold's start
// takes, so that a hold that starts either finds the question asked and
// interrupts it (holdOpen) or is found by the question's Enter.
type askSide struct{ d *Daemon }

// interrupter is the question being asked (state.asking, an
// *asking.Asked): a hold's start and the daemon's stop interrupt it.
type interrupter interface{ Interrupt(reason string) }

func (a askSide) Config() config.Config            { return a.d.config() }
func (a askSide) Holding() (bool, <-chan struct{}) { return a.d.state.holding() }
func (a askSide) Audit(e audit.Event)              { a.d.auditf(e) }
func (a askSide) Notify(kind string)               { a.d.notify(kind) }

func (a askSide) Enter(r *asking.Asked, show func()) error {
	s := &a.d.state
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closing:
		return question.ErrClosing
	case s.hold != nil:
		return question.ErrHolding
	}
	s.asking = r
	show()
	return nil
}

func (a askSide) Leave(r *asking.Asked, show func()) {
	s := &a.d.state
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.asking == r {
		s.asking = nil
		show()
	}
}

func (a askSide) WhileAsked(r *asking.Asked, show func()) {
	s := &a.d.state
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.asking == r {
		show()
	}
}

// MarkRunning writes the crash marker again: until it is written no
// question is spoken.
func (a askSide) MarkRunning() bool { return a.d.marker != nil && a.d.marker.Write() == nil }

// Tally audits what any client may cause without limit (audit.Log.Tally).
func (a askSide) Tally(e audit.Event) error {
	d := a.d
	if d.audit == nil {
		return errors.New("audit log not open")
	}
	err := d.audit.Tally(e)
	if err != nil {
		d.log.Warn("audit write failed", "kind", e.Kind, "err", err)
	}
	return err
}
