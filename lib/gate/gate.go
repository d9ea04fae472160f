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
// The Client sends one request at a time: a call waits for its turn,
// writes its request and reads the reply, which must echo its id. It starts
// no goroutine. Properties:
//
//   - A call abandoned to its context returns the context's error at once.
//     If its request was not written yet (it was still waiting for its
//     turn, or its own write was interrupted before the first byte), it is
//     never sent. If it was, the next call reads its late reply and drops
//     it: known by its place and its id, it is never taken for the reply
//     to another request. A reserve whose reply was abandoned leaves its
//     slot reserved, and charged once its lease passes: abandoning a
//     Reserve costs a slot, so give it a deadline, not the caller's
//     cancellation.
//   - A reply read before the context ended is returned.
//   - Anything out of step (a reply that is not JSON, one that answers
//     another request than the oldest pending, a reserve granted without a
//     token, a status without the budget), a write cut short, or the
//     connection ending breaks the Client: the call under way fails with
//     ErrBroken and so does every later one. The connection is closed.
//
// Why one at a time: a question takes seconds to speak, and the daemon
// socket's own round trip, not the gate's, dominates. An earlier client
// pipelined its callers' requests (a batching writer, a direct-write fast
// path, a reader goroutine; 421 lines) to chase a p99 of 1 ms at 10
// clients, a target since retired. Through the daemon socket at 10
// clients (make bench, BenchmarkDaemonRoundTrip, 19 runs of each client
// taking turns on the shared 2-core machine at a load of 5 to 12), the
// serialised client's p99 stayed under 5 ms in the median of the runs
// (ask_human 4.5 ms, budget.status 3.8 ms; pipelined 3.7 and 2.6 ms),
// and its p50 was about 0.6 ms higher (1.0–1.5 ms against 0.6–0.8 ms for
// ask_human): ten callers now wait for each other's gate round trips
// (50–90 µs each). See the README's speed section.
//
// The budget is only in the gate, and a slot is granted only by the gate's
// atomic check-and-reserve.
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
// newline included (a "\r" before it is not counted). Longer requests are
// answered bad_request.
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
