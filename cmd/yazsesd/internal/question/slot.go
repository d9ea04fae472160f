package question

import (
	"context"
	"errors"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/gate"
)

// gateWait bounds a gate call.
const gateWait = 5 * time.Second

// slot is the question's reservation in the gate, from reserve to its one
// settlement (settle). Its state only moves forward: reserved, then
// audible (audio may have reached the output device) or silent (proven
// that none did, with the reason). Audible is final and wins over an
// earlier silent: when in doubt, charged.
type slot struct {
	tok     string
	state   slotState
	reason  string // why silent
	settled bool   // settle ran: charged or refunded, for good
}

type slotState int

const (
	slotNone     slotState = iota // nothing reserved
	slotReserved                  // reserved; nothing known about audio yet
	slotAudible                   // audio may have been heard
	slotSilent                    // proven that no audio was played
)

// audible records that audio may have been heard: the slot is charged,
// whatever happens next.
func (s *slot) audible() {
	if s.state != slotNone {
		s.state, s.reason = slotAudible, ""
	}
}

// silent records a proven pre-output failure (the speaker never started,
// or the question was never sent to it), for reason.
func (s *slot) silent(reason string) {
	if s.state == slotReserved {
		s.state, s.reason = slotSilent, reason
	}
}

// gateCtx bounds a gate call. It is not the caller's cancellation: an
// abandoned reserve would leave a slot charged for its whole lease.
func gateCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), gateWait)
}

// reserve takes the slot: the one way to a slot is the gate's atomic
// check-and-reserve. ok is false with the result when there is none.
func (a *asking) reserve(ctx context.Context) (r daemonapi.AskResult, ok bool) {
	gctx, cancel := gateCtx(ctx)
	tok, err := a.env.Gate.Reserve(gctx)
	cancel()
	var ref *gate.Refused
	switch {
	case errors.As(err, &ref):
		r := result(daemonapi.Refused, string(ref.Reason))
		if ref.Reason == gate.ReasonBudgetExhausted {
			r.RetryAfterS = max(1, gate.Seconds(ref.RetryAfter))
		}
		return r, false
	case err != nil:
		a.log.Warn("ask_human: no gate", "err", err)
		return result(daemonapi.Unavailable, daemonapi.ReasonGateUnavailable), false
	}
	a.slot.tok, a.slot.state = tok, slotReserved
	return r, true
}

// settle is docs/design.md's invariant 3, once per reserved question: as soon as
// audio may have been heard (charge), else when the call ends. A slot
// proven silent is released (refunded; audit ask.released with the
// reason); every other one, audible or not known to be silent, is
// committed (charged; audit ask.spoken). Until then the slot is reserved,
// which the budget counts as used; a daemon that dies before it settles
// leaves the reservation to the gate's lease (charged) and its successor
// starts spent (the daemon's crash marker).
func (a *asking) settle(ctx context.Context) {
	if a.slot.state == slotNone || a.slot.settled {
		return
	}
	a.slot.settled = true
	gctx, cancel := gateCtx(ctx)
	defer cancel()
	if a.slot.state == slotSilent {
		if err := a.env.Gate.Release(gctx, a.slot.tok); err != nil {
			a.log.Warn("release refused: the slot stays charged", "err", err)
		}
		_ = a.env.House.Tally("ask.released", a.slot.reason)
		return
	}
	if err := a.env.Gate.Commit(gctx, a.slot.tok); err != nil {
		// The gate died with our reservation: it restarts fully spent, so
		// nothing is undercharged.
		a.log.Warn("commit failed; the gate charges the slot anyway", "err", err)
	}
	a.env.House.Audit("ask.spoken", "")
}

// charge records that the question's audio may have been heard and
// settles the slot at once: audible is final, so the charge and its audit
// line (ask.spoken: the question is playing) do not wait for the end of
// the call, and a daemon that dies later has already committed it.
func (a *asking) charge(ctx context.Context) {
	a.slot.audible()
	a.settle(ctx)
}
