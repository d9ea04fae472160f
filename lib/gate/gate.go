// Package gate is the wire protocol of yaz-gate, the one holder of the
// interruption budget, and the client yazsesd talks to it with.
//
// The protocol is JSON Lines over a stream socket (the socketpair end that
// yazsesd passes to yaz-gate as fd 3): one compact request object per line,
// answered by exactly one reply line, in request order. Requests:
//
//	{"op":"reserve"}
//	{"op":"commit","token":"…"}
//	{"op":"release","token":"…"}
//	{"op":"status"}
//	{"op":"limit","per_hour":N}      (a configuration reload changes the cap)
//
// Replies:
//
//	{"ok":true,"token":"…"}                              reserve granted
//	{"ok":true}                                          commit, release done
//	{"ok":true,"per_hour":N,"used":N,"next_free_s":N}    status
//	{"ok":false,"reason":R,"retry_after_s":N}            refused
//
// R is one of budget_exhausted (retry_after_s > 0 says when a slot frees),
// disabled (per_hour is 0; retry_after_s is 0), unknown_token (commit or
// release of a token that is not in a state allowing it: unknown, already
// committed or released, or a release after its lease; nothing changed) and
// bad_request (a line that is not a valid request; the gate keeps serving).
// Blank lines are ignored and get no reply.
//
// A request may carry "id" (a positive integer); the reply then echoes it.
//
// A client may pipeline: send further requests before the earlier ones are
// answered. The gate still takes them one at a time, in the order they
// arrive, each check-and-reserve atomic on the one budget, and answers them
// in that order; it may write several replies at once, but never holds a
// reply back while it waits for input.
//
// The Client pipelines the calls of its concurrent callers. A call made
// while no write is under way writes its request itself; one made during
// a write is queued, and a writer goroutine sends all that was queued in
// one write. A reader goroutine hands each reply to the oldest request not
// yet answered, whose id it must echo. Properties:
//
//   - A call abandoned to its context returns the context's error at once.
//     If its request was not written yet (still queued, or its own write
//     interrupted before the first byte), it is never sent. If it was, its
//     late reply is dropped when it comes: known by its place and its id,
//     it is never taken for the reply to another request. A reserve whose
//     reply was abandoned leaves its slot reserved, and charged once its
//     lease passes: abandoning a Reserve costs a slot, so give it a
//     deadline, not the caller's cancellation.
//   - A reply that came before the context ended is never thrown away.
//   - Anything out of step (a reply that is not JSON, one that answers
//     another request than the oldest pending, or none, a reserve granted
//     without a token, a status without the budget), a failed write, or
//     the connection ending breaks the Client: every pending call fails
//     with ErrBroken and so does every later one. The connection is closed.
//
// The pipelining changes the cost of a call, not its meaning: the budget
// is only in the gate, and a slot is granted only by the gate's atomic
// check-and-reserve.
//
// Seconds are whole and rounded up, so a client that waits retry_after_s or
// next_free_s finds the slot free.
//
// This package knows nothing of the budget itself (it cannot import
// yaz-gate's internal budget package) and is pure Go.
package gate

import (
	"encoding/json"
	"time"
)

// Ops.
const (
	OpReserve = "reserve"
	OpCommit  = "commit"
	OpRelease = "release"
	OpStatus  = "status"
	// OpLimit changes the cap; what was spent stays spent.
	OpLimit = "limit"
)

// Reason is why a request was refused: a closed vocabulary.
type Reason string

// Reasons.
const (
	ReasonBudgetExhausted Reason = "budget_exhausted"
	ReasonDisabled        Reason = "disabled"
	ReasonUnknownToken    Reason = "unknown_token"
	ReasonBadRequest      Reason = "bad_request"
)

// MaxLine is the longest request or reply line either side accepts,
// newline included. Longer requests are answered bad_request.
const MaxLine = 4096

// MaxPerHour is the highest cap a limit request may set (as
// budget.ask_human_per_hour in the configuration).
const MaxPerHour = 60

// Request is one request line.
type Request struct {
	Op    string `json:"op"`
	Token string `json:"token,omitempty"`
	// PerHour is the new cap of a limit request (0 to 60).
	PerHour *int   `json:"per_hour,omitempty"`
	ID      uint64 `json:"id,omitempty"`
}

// Status is the budget's state as the status op reports it.
type Status struct {
	PerHour   int `json:"per_hour"`
	Used      int `json:"used"`
	NextFreeS int `json:"next_free_s"`
}

// NextFree returns NextFreeS as a duration.
func (s Status) NextFree() time.Duration { return time.Duration(s.NextFreeS) * time.Second }

// Reply is one reply line. Status is set only in the reply to status.
type Reply struct {
	OK          bool   `json:"ok"`
	Token       string `json:"token,omitempty"`
	Reason      Reason `json:"reason,omitempty"`
	RetryAfterS int    `json:"retry_after_s,omitempty"`
	*Status
	ID uint64 `json:"id,omitempty"`
}

// MarshalJSON writes the reply in its canonical shape: a refusal always
// carries retry_after_s (0 where it has no meaning), a success never does.
func (r Reply) MarshalJSON() ([]byte, error) {
	type wire struct {
		OK          bool   `json:"ok"`
		Token       string `json:"token,omitempty"`
		Reason      Reason `json:"reason,omitempty"`
		RetryAfterS *int   `json:"retry_after_s,omitempty"`
		*Status
		ID uint64 `json:"id,omitempty"`
	}
	w := wire{OK: r.OK, Token: r.Token, Reason: r.Reason, Status: r.Status, ID: r.ID}
	if !r.OK {
		w.RetryAfterS = &r.RetryAfterS
	}
	return json.Marshal(w)
}

// Seconds rounds d up to whole seconds (0 for d <= 0), the unit of
// retry_after_s and next_free_s.
func Seconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}
