package daemonapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/yazses/yazses/lib/jsonrpc"
)

// MethodWatch streams the daemon's live state for status bars: a
// streaming method (see package jsonrpc), without parameters. The first
// event is the state at the time of the call; then one event follows each
// change, as a notification {"jsonrpc":"2.0","method":"watch","params":
// WatchEvent}. A watcher that reads slowly gets the latest state, never a
// stale one: the events it missed are skipped, and the gap in Seq shows
// it. The stream ends when the client closes its connection (or its
// writing side) or the daemon stops. At most 16 watchers are served at
// once (more get server busy); a watch connection has no idle clock.
const MethodWatch = "watch"

// The live states, WatchEvent.State.
const (
	StateIdle      = "idle"      // nothing happens
	StateListening = "listening" // a hold records (or an answer is listened for)
	StateDecoding  = "decoding"  // a hold's (or an answer's) audio is being decoded
	StateTyping    = "typing"    // a hold's text is being typed
	StateSpeaking  = "speaking"  // a question is being spoken
	StateWaiting   = "waiting"   // a question waits for the hold to end
)

// States lists the live states.
var States = []string{StateIdle, StateListening, StateDecoding, StateTyping, StateSpeaking, StateWaiting}

// WatchEvent is one event of watch: the whole live state after a change.
type WatchEvent struct {
	// Seq numbers the daemon's state changes from 1; a watcher that sees
	// it jump by more than one skipped the changes between (it read too
	// slowly), and has the latest state all the same.
	Seq uint64 `json:"seq"`
	// AtMs is when the state changed, in Unix milliseconds.
	AtMs int64 `json:"at_ms"`
	// State is one of States. It is derived from the fields below, the
	// first that applies: speaking (Ask is speaking), waiting (Waiting >
	// 0), Hold when a hold is active, Ask when an answer is listened for
	// or decoded, else idle.
	State string `json:"state"`
	// Hold is the dictation's own phase: idle, listening, decoding or
	// typing.
	Hold string `json:"hold"`
	// Ask is the question's phase: idle, speaking, listening (for the
	// answer) or decoding (the answer).
	Ask string `json:"ask"`
	// Waiting counts the questions waiting for the hold to end.
	Waiting int `json:"waiting"`
	// Budget is the ask_human budget.
	Budget WatchBudget `json:"budget"`
	// LastHold is the outcome of the last hold (HoldResult.Outcome:
	// typed, kept, empty, too_short, cancelled, failed); "" before the
	// first.
	LastHold string `json:"last_hold,omitempty"`
	// LastAsk is the result kind of the last ask_human (answered,
	// no_answer, deferred, refused, unavailable); "" before the first.
	LastAsk string `json:"last_ask,omitempty"`
	// Preview is the text decoded so far in the current hold. Only with
	// the owner's opt-in, [dictation] preview = true; never otherwise.
	Preview string `json:"preview,omitempty"`
	// Pieces is the live text of the current hold (dictation.live): how
	// many pieces were decided and how many of them typed; absent
	// without live text or before the first piece. No text.
	Pieces WatchPieces `json:"pieces,omitzero"`
}

// WatchPieces are the pieces of a hold's live text, in order: the first
// Typed arrived whole in the window; the next ones are decided and
// wait for their typing, or, once Stopped (a piece did not arrive whole:
// the focus moved, a failure), are kept for `ctl last` and never typed.
type WatchPieces struct {
	Decided int  `json:"decided"`
	Typed   int  `json:"typed"`
	Stopped bool `json:"stopped,omitempty"`
}

// WatchBudget is the ask_human budget as a status bar shows it.
type WatchBudget struct {
	PerHour int `json:"per_hour"`
	Used    int `json:"used"`
	Left    int `json:"left"`
	// NextFreeAtMs is when the next slot frees, in Unix milliseconds; 0
	// when none is taken.
	NextFreeAtMs int64 `json:"next_free_at_ms,omitempty"`
	// FailClosed: the hour counts as spent (see BudgetStatus).
	FailClosed bool `json:"fail_closed,omitempty"`
	// Available is false while the gate is down.
	Available bool `json:"available"`
}

// ErrWatchEnded matches the error of Watch when the daemon ended the
// stream: it stopped, or closed the connection.
var ErrWatchEnded = errors.New("yazsesd ended the watch")

// Watch calls watch and passes each event to each, in order, until ctx
// ends (ctx's error), each fails (its error), or the daemon ends the
// stream (an error matching ErrWatchEnded). A refusal (too many watchers)
// is the daemon's *jsonrpc.Error. Close the Client after Watch: the
// daemon streams until the connection closes.
func (c *Client) Watch(ctx context.Context, each func(WatchEvent) error) error {
	var eachErr error
	err := c.rpc.Stream(ctx, MethodWatch, nil, func(p json.RawMessage) error {
		var ev WatchEvent
		if err := json.Unmarshal(p, &ev); err != nil {
			eachErr = fmt.Errorf("watch: decode event: %w", err)
			return eachErr
		}
		if err := each(ev); err != nil {
			eachErr = err
			return err
		}
		return nil
	})
	var rpcErr *jsonrpc.Error
	switch {
	case eachErr != nil:
		return eachErr
	case ctx.Err() != nil:
		return ctx.Err()
	case err == nil:
		return ErrWatchEnded
	case errors.As(err, &rpcErr):
		return err
	default:
		return fmt.Errorf("%w: %w", ErrWatchEnded, err)
	}
}
