// Package typewire is the contract between yazsesd and its typing child,
// `yaz-type --serve` (docs/design.md, "Typing child"):
//
//   - Readiness: the child's readiness line (lib/cli.ReadyWith) is one
//     [Ready] object: the route it types with, why, and every backend it
//     tries in order; or, where nothing can type in the session, an empty
//     list and the reason. A child that cannot type stays up and answers
//     every text with [OutcomeFailed] and [CauseUnavailable], so that a
//     route that appears later (a restart after the desktop came up) is
//     taken without a restart loop.
//   - Requests: one [Request] a line on the child's stdin (JSON). "type"
//     types Text into the focused window; "status" asks for the route's
//     state now (the portal's session and consent change after the start).
//     "preedit" shows Text as the focused field's tentative text (the
//     input method's preedit: underlined, not part of the field's text),
//     replacing the one shown; "" takes it away. Only a route whose Ready
//     says Preedit shows one (IBus); elsewhere the answer is failed,
//     cause no_preedit. The next "type" replaces the preedit with the
//     text it types. Texts and preedits are taken one at a time, in
//     order; a status is answered at once, also while a text is being
//     typed.
//   - Events: one [Event] a line on the child's stdout. Each request gets
//     exactly one answer with its ID: an outcome for a text, a status for
//     a status. Events with no ID are notifications the daemon shows (a
//     kind of package notify: the portal's "portal_consent" before its
//     dialog).
//
// No text is ever in an event, a log line or an error: outcomes carry
// counts and closed-vocabulary words only.
package typewire

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Typing bounds: a text gets BoundBase plus BoundPerChar for each of its
// characters (the slowest route, the portal, types about a character a
// millisecond; x11 about 25 µs), after which the daemon takes its typing
// child for hung and restarts it, and yaz-type in a pipeline gives the
// text up.
const (
	BoundBase    = 10 * time.Second
	BoundPerChar = 2 * time.Millisecond
)

// Bound is how long a text of n characters may take to type.
func Bound(n int) time.Duration { return BoundBase + time.Duration(n)*BoundPerChar }

// Ready is the child's readiness line.
type Ready struct {
	// Backends are tried in order; empty: nothing can type here, Error
	// says why and what to install or allow.
	Backends []string `json:"backends"`
	Route    string   `json:"route,omitempty"` // the first backend
	Why      string   `json:"why,omitempty"`   // why it was chosen
	Error    string   `json:"error,omitempty"`
	// Preedit: the route can show tentative text (OpPreedit).
	Preedit bool `json:"preedit,omitempty"`
}

// Request operations.
const (
	OpType    = "type"
	OpStatus  = "status"
	OpPreedit = "preedit"
)

// Request is one line on the child's stdin.
type Request struct {
	ID   string `json:"id"`
	Op   string `json:"op"`
	Text string `json:"text,omitempty"`
	// Window, when set, is the window the text must go to (an earlier
	// text's Event.Window): where another window has the focus, nothing
	// is typed and the outcome is failed, cause focus_moved.
	// Only a route that names windows (x11) checks it, and a bound text
	// goes by no other (never pasted, never by a tool).
	Window string `json:"window,omitempty"`
}

// Outcomes of a text: the closed vocabulary of Event.Outcome.
const (
	// OutcomeTyped: every character was delivered as typed keys (or
	// committed), to the window that had the focus when typing began.
	OutcomeTyped = "typed"
	// OutcomePasted: the text went through the clipboard and the paste
	// chord, and whether the window took it cannot be seen.
	OutcomePasted = "pasted"
	// OutcomeCommitted: the text went to the focused input context
	// through the input method (IBus) in one commit, and whether a text
	// field had it cannot be seen (the field reports no surrounding text).
	OutcomeCommitted = "committed"
	// OutcomePartial: typing stopped part-way (the focus moved, the
	// window went away); Arrived characters were delivered before it
	// stopped, and nothing after went anywhere.
	OutcomePartial = "partial"
	// OutcomeNoTarget: no window had the focus; nothing was typed.
	OutcomeNoTarget = "no_target"
	// OutcomeRefused: the focused field refused the text (a password or
	// PIN field on a route that can tell); nothing was typed.
	OutcomeRefused = "refused"
	// OutcomeFailed: nothing that can be shown arrived; Cause says why.
	OutcomeFailed = "failed"
	// OutcomeShown: a preedit is shown (or, for "", taken away). Never
	// the outcome of a text.
	OutcomeShown = "shown"
)

// Causes of a failed or partial text: the closed vocabulary of
// Event.Cause.
const (
	// CauseUnavailable: no backend can type in this session.
	CauseUnavailable = "unavailable"
	// CauseNoRoute: no route could be opened in this session yet (the
	// child tries again at each text).
	CauseNoRoute = "no_route"
	// CauseInterrupted: typing stopped part-way and how much arrived is
	// not known (a tool that died, the display gone after keys went out).
	CauseInterrupted = "interrupted"
	// CauseFocusMoved: the focus moved to another window while typing.
	CauseFocusMoved = "focus_moved"
	// CauseDisplayGone: the display server closed the connection or
	// stopped answering.
	CauseDisplayGone = "display_gone"
	// CauseTimeout: the typing child did not answer within its bound; the
	// daemon restarted it.
	CauseTimeout = "timeout"
	// CauseChildGone: the typing child ended (or was not up) before it
	// answered; the daemon restarts it.
	CauseChildGone = "child_gone"
	// CauseNoPreedit: a preedit asked of a route that shows none.
	CauseNoPreedit = "no_preedit"
	// CauseError: any other failure of every backend.
	CauseError = "error"
)

// Event is one line on the child's stdout.
type Event struct {
	ID      string `json:"id,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	Backend string `json:"backend,omitempty"` // the backend used (the last one tried when all failed)
	Cause   string `json:"cause,omitempty"`
	// Chars is the text's length in characters (after cleaning);
	// Arrived, for partial, how many of them were delivered.
	Chars   int `json:"chars,omitempty"`
	Arrived int `json:"arrived,omitempty"`
	// Window names the window the text went to, where the route can
	// name it (x11: the X window id); empty where it cannot (the Wayland
	// virtual keyboard, the portal, the input method, the tools).
	Window string  `json:"window,omitempty"`
	Status *Status `json:"status,omitempty"` // the answer to a status request
	Notify string  `json:"notify,omitempty"` // a notification kind, on an event with no ID
}

// Status is the route's state now, for `yazsesd status`.
type Status struct {
	Route    string   `json:"route,omitempty"`
	Why      string   `json:"why,omitempty"`
	Backends []string `json:"backends"`
	Error    string   `json:"error,omitempty"`
	// For the portal route: its session's state, whether the desktop
	// keeps the person's consent, and why the session is not ready.
	Session string `json:"session,omitempty"`
	Consent string `json:"consent,omitempty"`
	Cause   string `json:"cause,omitempty"`
	// Preedit: the route can show tentative text (OpPreedit).
	Preedit bool `json:"preedit,omitempty"`
}

// Errors for an outcome other than typed, as the daemon's typing end
// returns them (errors.Is; an *Error carries the event).
var (
	ErrPasted    = errors.New("pasted through the clipboard: whether the window took it cannot be seen")
	ErrCommitted = errors.New("committed through the input method: whether a field took it cannot be seen")
	ErrNoTarget  = errors.New("no focused window to type into")
	ErrPartial   = errors.New("typing stopped part-way")
	ErrRefused   = errors.New("the focused field refused the text")
	ErrFailed    = errors.New("typing failed")
)

// Error is an outcome other than typed.
type Error struct{ Event Event }

func (e *Error) Error() string {
	switch e.Event.Outcome {
	case OutcomePartial:
		return fmt.Sprintf("typing stopped part-way (%s): %d of %d characters arrived", e.Event.Cause, e.Event.Arrived, e.Event.Chars)
	case OutcomeFailed:
		return fmt.Sprintf("typing failed (%s)", e.Event.Cause)
	}
	return e.Unwrap().Error()
}

// Unwrap returns the sentinel error of the outcome.
func (e *Error) Unwrap() error {
	switch e.Event.Outcome {
	case OutcomePasted:
		return ErrPasted
	case OutcomeCommitted:
		return ErrCommitted
	case OutcomeNoTarget:
		return ErrNoTarget
	case OutcomePartial:
		return ErrPartial
	case OutcomeRefused:
		return ErrRefused
	}
	return ErrFailed
}

// Target is the window of one text, carried in its context (WithTarget)
// from the daemon's caller to its typing end, and from yaz-type's
// server to the route: Want is Request.Window, Got is Event.Window.
type Target struct {
	Want string
	Got  string
}

type targetKey struct{}

// WithTarget returns ctx carrying t: the text typed with it goes only to
// t.Want (when set), and t.Got is set to the window it went to.
func WithTarget(ctx context.Context, t *Target) context.Context {
	return context.WithValue(ctx, targetKey{}, t)
}

// TargetOf is the Target ctx carries, or nil.
func TargetOf(ctx context.Context) *Target {
	t, _ := ctx.Value(targetKey{}).(*Target)
	return t
}

// Err is the event's outcome as an error: nil for typed.
func (ev Event) Err() error {
	if ev.Outcome == OutcomeTyped {
		return nil
	}
	return &Error{Event: ev}
}
