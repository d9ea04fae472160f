package inject

import (
	"context"
	"errors"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/lib/typewire"
)

// Outcome is what a Type call came to, in the typing child's closed
// vocabulary (lib/typewire): used is the backend Type returned, chars the
// text's length in characters. It never holds any of the text.
func Outcome(used string, err error, chars int) typewire.Event {
	ev := typewire.Event{Backend: used, Chars: chars}
	var partial *backend.PartialError
	switch {
	case err == nil:
		ev.Outcome = typewire.OutcomeTyped
	case errors.Is(err, ErrPasted):
		ev.Outcome = typewire.OutcomePasted
	case errors.Is(err, backend.ErrUnconfirmed):
		ev.Outcome = typewire.OutcomeCommitted
	case errors.Is(err, backend.ErrRefused):
		ev.Outcome = typewire.OutcomeRefused
	case errors.Is(err, ErrNoTarget):
		ev.Outcome = typewire.OutcomeNoTarget
	case errors.As(err, &partial):
		ev.Outcome, ev.Cause, ev.Arrived = typewire.OutcomePartial, partial.Cause, partial.Arrived
		if ev.Arrived == 0 {
			// Nothing arrived: stopped before the first key.
			ev.Outcome = typewire.OutcomeFailed
		}
	case errors.Is(err, backend.ErrDisplayGone):
		ev.Outcome, ev.Cause = typewire.OutcomeFailed, typewire.CauseDisplayGone
	case errors.Is(err, ErrInterrupted):
		ev.Outcome, ev.Cause = typewire.OutcomeFailed, typewire.CauseInterrupted
	case errors.Is(err, backend.ErrNoRoute):
		ev.Outcome, ev.Cause = typewire.OutcomeFailed, typewire.CauseNoRoute
	case errors.Is(err, ErrUnavailable):
		ev.Outcome, ev.Cause = typewire.OutcomeFailed, typewire.CauseUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		ev.Outcome, ev.Cause = typewire.OutcomeFailed, typewire.CauseTimeout
	default:
		ev.Outcome, ev.Cause = typewire.OutcomeFailed, typewire.CauseError
	}
	return ev
}

// PreeditOutcome is what a Preedit call came to: shown, or failed with a
// cause (no_preedit where the route shows none; no_target, refused as
// for a text).
func PreeditOutcome(used string, err error) typewire.Event {
	switch {
	case err == nil:
		return typewire.Event{Backend: used, Outcome: typewire.OutcomeShown}
	case errors.Is(err, backend.ErrNoPreedit):
		return typewire.Event{Backend: used, Outcome: typewire.OutcomeFailed, Cause: typewire.CauseNoPreedit}
	}
	return Outcome(used, err, 0)
}
