// Package question puts one ask_human question to the person and brings
// back the answer, under the interruption budget (docs/design.md's ten
// invariants). One question is one call of [Run], in the caller's own
// goroutine: its state (the slot, what was heard, the answer's audio, the
// detector in use) lives in that call's locals, and it selects over the
// speaker's events, the microphone's audio, the detector's events, the
// answer window's clock, barge-in (a hold starting) and cancellation. It
// starts no goroutine and ends with one result, once everything it began
// (the speech, the detector use, the listener, the decoding) has ended.
//
// The walk of a question:
//
//  1. Timeout: the caller's timeout_s, 0 for ask.default_timeout_s, cut
//     to ask.max_timeout_s ([Timeout]; the one place this is decided).
//  2. Never during a hold: wait for it to end, free of charge (deferred
//     holding when it outlasts the timeout).
//  3. Reserve a slot in the gate, the one way to a slot; audit the
//     reservation (a question that cannot be audited is not asked).
//  4. Take the question's turn (one question at a time, in order), and
//     enter: the daemon marks it as asked unless a hold began meanwhile
//     (then wait again) or the daemon is closing. A question that has
//     less time left than it needs to be spoken and answered
//     (daemonapi.AskTiming.Need) is not started: deferred timeout, its
//     slot given back (checked before the reservation too, so that none
//     is taken for a question that could never use it). Until it enters,
//     a reload that lowers the cap or turns questions off (House.Cut)
//     makes it give its slot back and reserve again under the new cap
//     (refused disabled when questions are off, refused as the gate says
//     when the new cap is spent); the question being asked goes on.
//  5. Speak "An MCP client asks: …". The slot follows the speaker: charged
//     (committed at once) from its "started" on, or when it dies, fails
//     after starting or falls silent; released only when it proved that
//     nothing was played. A hold (barge-in), the timeout or a cancel skips
//     the speech.
//  6. After the device played the question out and a guard pause, listen:
//     the microphone's audio from now on goes through a voice detector;
//     the answer is the first span, up to a pause of ask.answer_silence_ms,
//     the answer window (ask.max_answer_s) or the timeout. A detector
//     that fails or stops answering is replaced by the energy detector
//     with the audio so far (fail open).
//  7. Decode the answer, once more on a restarted decoder if the decoder
//     died, within the caller's deadline or a short grace after it.
//
// The children are behind the small interfaces below; package asking
// adapts the daemon's children to them and keeps the wiring (the RPC
// method, audit lines, notifications, the status stream).
package question

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/vadlink"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/tts"
	"github.com/yazses/yazses/lib/untrusted"
	"github.com/yazses/yazses/lib/vadspan"
)

// Label is what the person hears before every question (invariant 7): an
// honest label, never a client-supplied name.
const Label = daemonapi.AskLabel

// House is the daemon's side of a question: holds, the turn, audit and
// the status stream.
type House interface {
	// WaitNoHold waits until no hold is open; false if ctx ended first.
	WaitNoHold(ctx context.Context) bool
	// Take waits for the question's turn: one question at a time, in
	// order. release gives the turn back.
	Take(ctx context.Context) (release func(), err error)
	// Enter marks the question as the one being asked: from now on a
	// hold that starts closes the Barge. ErrHolding: a hold began just
	// now (wait again); ErrClosing: the daemon is stopping. leave undoes
	// it (the status shows idle again).
	Enter() (b Barge, leave func(), err error)
	// SetPhase shows the question's phase (daemonapi.StateSpeaking, …)
	// in the status stream.
	SetPhase(phase string)
	// Tally audits what any client may cause without limit and the
	// person never heard (a reservation, a release), counted past a few
	// lines; an error means the audit log cannot be written.
	Tally(kind, reason string) error
	// Audit writes one audit line.
	Audit(kind, reason string)
	// Cut returns a context that ends at the next reload that lowers
	// the cap or turns questions off (once the gate has the new cap): a
	// question not yet being asked then gives its slot back and, unless
	// questions are off, reserves one again under the new cap.
	Cut() context.Context
	// Off reports whether questions are off now ([mcp] ask_human =
	// false since a reload).
	Off() bool
}

// Errors of House.Enter.
var (
	ErrHolding = errors.New("a hold began")
	ErrClosing = errors.New("the daemon is stopping")
)

// Barge is barge-in: Done is closed when a hold starts (or the daemon
// stops) while the question is asked; Reason then says why.
type Barge interface {
	Done() <-chan struct{}
	Reason() string
}

// Gate is the interruption budget (the one yaz-gate). A refusal is a
// *gate.Refused.
type Gate interface {
	// Reserve takes a slot, waiting for a (re)starting gate.
	Reserve(ctx context.Context) (token string, err error)
	// Commit charges the slot for good.
	Commit(ctx context.Context, token string) error
	// Release refunds it: only for a proven pre-output failure.
	Release(ctx context.Context, token string) error
}

// Speaker plays text (the yaz-speak child).
type Speaker interface {
	// Ready waits (briefly) for a speaker that is starting; false when
	// it is down or ctx ended.
	Ready(ctx context.Context) bool
	// Speak sends text. Its events (started, then done or failed) come
	// on the channel, which closes after the final one, or without one
	// when the speaker died. An error means nothing was sent.
	Speak(text string) (<-chan tts.Event, error)
	// Skip stops the speech in progress; it then ends with failed.
	Skip()
}

// Mic is the microphone.
type Mic interface {
	// Listen delivers what is said from now on; a nil chunk means the
	// capture stream ended. stop ends the listening (twice is a no-op).
	Listen() (audio <-chan []int16, stop func())
}

// Detector begins uses of the voice detector.
type Detector interface {
	// Begin begins a use on the trained detector when it is up and free,
	// else on the energy detector. nil only when the daemon is stopping.
	Begin(p vadspan.Params) Detection
	// BeginEnergy begins a use on a new energy detector; nil only when
	// the daemon is stopping.
	BeginEnergy(p vadspan.Params) Detection
}

// Detection is one use of the voice detector (a vadlink.Use).
type Detection interface {
	Feed(samples []int16)
	// End ends the audio: the last answers and an Ended event follow.
	End()
	// Events closes after Ended or Failed.
	Events() <-chan vadlink.Event
	State() vadlink.State
	// Energy reports the in-process energy detector (it has no fallback).
	Energy() bool
	// Engine names the detector, for the debug log.
	Engine() string
	// Restart restarts the detector child when it still runs this use,
	// which did not answer in time.
	Restart()
	// Release closes the use; its events are dropped from now on.
	Release()
}

// Decoder decodes the answer (the resident yaz-decode).
type Decoder interface {
	// Decode returns the transcript of samples, at the answer's
	// priority; ErrLost when the decoder died with it.
	Decode(ctx context.Context, samples []int16) (string, error)
	// WaitUp waits for a (re)started decoder.
	WaitUp(ctx context.Context) error
}

// ErrLost: the decoder died while it had the answer.
var ErrLost = errors.New("decoder lost the answer")

// Env is what a question runs on.
type Env struct {
	House    House
	Gate     Gate
	Speaker  Speaker
	Mic      Mic
	Detector Detector
	Decoder  Decoder
	Log      *slog.Logger
}

// Timeout is how long a question may take: timeoutS seconds, 0 for the
// configured default, never more than the configured maximum. The daemon
// decides this alone; callers pass their timeout_s on as given.
func Timeout(ask config.Ask, timeoutS int) time.Duration {
	if timeoutS == 0 {
		timeoutS = ask.DefaultTimeoutS
	}
	return time.Duration(min(timeoutS, ask.MaxTimeoutS)) * time.Second
}

// asking is one question in progress; it belongs to the goroutine that
// runs it.
type asking struct {
	env  Env
	log  *slog.Logger
	cfg  config.Config
	slot slot
	// deadline is the end of the caller's timeout.
	deadline time.Time
	// cut ends at a reload that cuts the questions not yet asked
	// (House.Cut); taken again after each.
	cut context.Context
	// need is the least time the question needs once started.
	need time.Duration
}

// Run puts q to the person and returns the result. ctx is the caller's:
// when it ends the question stops (result cancelled). The slot it
// reserves is settled before Run returns, whatever the way out.
func Run(ctx context.Context, env Env, cfg config.Config, q untrusted.Question, timeoutS int) daemonapi.AskResult {
	dctx, cancel := context.WithTimeout(ctx, Timeout(cfg.Ask, timeoutS))
	defer cancel()
	a := &asking{env: env, log: env.Log, cfg: cfg, need: daemonapi.AskTimingOf(cfg).Need(q.Text())}
	a.deadline, _ = dctx.Deadline()
	return a.run(ctx, dctx, q)
}

func result(o daemonapi.Outcome, reason string) daemonapi.AskResult {
	return daemonapi.AskResult{Result: o, Reason: reason}
}

func (a *asking) run(ctx, dctx context.Context, q untrusted.Question) daemonapi.AskResult {
	h := a.env.House
	// Never during a hold: wait for it to end, free of charge.
	if !h.WaitNoHold(dctx) {
		return notAsked(ctx, daemonapi.ReasonHolding)
	}
	// The cut is taken before Off is read and the slot reserved: a reload
	// that turns questions off sets the settings before it ends the cut,
	// so one that comes after is seen either here by Off or later by the
	// cut.
	a.cut = h.Cut()
	if h.Off() { // turned off while it waited
		return result(daemonapi.Refused, daemonapi.ReasonDisabled)
	}
	if a.tooLate() { // no slot is taken that could never be used
		return notAsked(ctx, daemonapi.ReasonTimeout)
	}
	// The one place the slot is charged or refunded (a.slot is the latest
	// reservation: recut takes a new one).
	defer func() { a.settle(ctx) }()
	if r, ok := a.reserve(ctx); !ok {
		return r
	}
	if r, ok := a.reserved(ctx); !ok {
		return r
	}
	// One question at a time, in order.
	release, r, ok := a.take(ctx, dctx)
	if !ok {
		return r
	}
	defer release()
	barge, leave, r, ok := a.enter(ctx, dctx)
	if !ok {
		return r
	}
	defer leave()
	if r, spoken := a.speak(ctx, dctx, barge, q); !spoken {
		return r
	}
	return a.listen(ctx, dctx, barge)
}

// reserved records the reservation just made: a question that cannot be
// audited is not asked (the reservation is its first record, so a failing
// log refunds the slot before any audio), nor one whose caller left
// meanwhile.
func (a *asking) reserved(ctx context.Context) (r daemonapi.AskResult, ok bool) {
	if err := a.env.House.Tally("ask.reserved", ""); err != nil {
		a.slot.silent(daemonapi.ReasonAuditUnavailable)
		return result(daemonapi.Unavailable, daemonapi.ReasonAuditUnavailable), false
	}
	if ctx.Err() != nil { // the caller left while we reserved
		a.slot.silent(daemonapi.ReasonCancelled)
		return result(daemonapi.Deferred, daemonapi.ReasonCancelled), false
	}
	return r, true
}

// untilCut is ctx, ended also by the reload cut (a.cut); stop releases it.
func (a *asking) untilCut(ctx context.Context) (c context.Context, stop func()) {
	c, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(a.cut, cancel)
	return c, func() { unhook(); cancel() }
}

// recut handles a reload that cut the questions not yet asked: the slot
// is given back (audit ask.released, reason reload), and reserved again
// under the new settings unless questions are now off (refused disabled)
// or the gate refuses (its refusal). ok: the question goes on waiting.
func (a *asking) recut(ctx context.Context) (r daemonapi.AskResult, ok bool) {
	a.slot.silent(ReasonReload)
	a.settle(ctx)
	a.slot = slot{}
	a.cut = a.env.House.Cut()
	if a.env.House.Off() {
		return result(daemonapi.Refused, daemonapi.ReasonDisabled), false
	}
	if r, ok := a.reserve(ctx); !ok {
		return r, false
	}
	return a.reserved(ctx)
}

// ReasonReload is the audit reason of a slot given back because a reload
// lowered the cap or turned questions off before the question was asked.
const ReasonReload = "reload"

// take waits for the question's turn, giving the slot back and taking it
// again at each reload cut meanwhile (recut).
func (a *asking) take(ctx, dctx context.Context) (release func(), r daemonapi.AskResult, ok bool) {
	for {
		tctx, stop := a.untilCut(dctx)
		release, err := a.env.House.Take(tctx)
		stop()
		switch {
		case err == nil:
			return release, r, true
		case dctx.Err() == nil && a.cut.Err() != nil:
			if r, ok := a.recut(ctx); !ok {
				return nil, r, false
			}
		default:
			a.slot.silent(daemonapi.ReasonBusy)
			return nil, notAsked(ctx, daemonapi.ReasonBusy), false
		}
	}
}

// enter waits for no hold and enters the question (House.Enter), again
// when a hold began in between. A reload cut meanwhile gives the slot
// back and takes it again (recut); a question whose time left is shorter
// than it needs is not started (deferred timeout, its slot given back).
func (a *asking) enter(ctx, dctx context.Context) (b Barge, leave func(), r daemonapi.AskResult, ok bool) {
	for {
		wctx, stop := a.untilCut(dctx)
		free := a.env.House.WaitNoHold(wctx)
		stop()
		if a.cut.Err() != nil && dctx.Err() == nil {
			if r, ok := a.recut(ctx); !ok {
				return nil, nil, r, false
			}
			continue
		}
		if !free {
			a.slot.silent(daemonapi.ReasonHolding)
			return nil, nil, notAsked(ctx, daemonapi.ReasonHolding), false
		}
		if a.tooLate() {
			a.slot.silent(daemonapi.ReasonTimeout)
			return nil, nil, notAsked(ctx, daemonapi.ReasonTimeout), false
		}
		b, leave, err := a.env.House.Enter()
		switch {
		case err == nil:
			return b, leave, r, true
		case errors.Is(err, ErrClosing):
			a.slot.silent(daemonapi.ReasonShuttingDown)
			return nil, nil, result(daemonapi.Unavailable, daemonapi.ReasonShuttingDown), false
		}
		// a hold began just now: wait again
	}
}

// tooLate reports (and logs) that less of the timeout is left than the
// question needs to be spoken and answered: it is not started.
func (a *asking) tooLate() bool {
	left := time.Until(a.deadline)
	if left >= a.need {
		return false
	}
	a.log.Info("ask_human: too little time left to speak the question and hear an answer; not started",
		"left_ms", left.Milliseconds(), "need_ms", a.need.Milliseconds())
	return true
}

// notAsked is the result of a question that was never spoken: deferred,
// with reason cancelled when the caller itself went away.
func notAsked(ctx context.Context, reason string) daemonapi.AskResult {
	if ctx.Err() != nil {
		return result(daemonapi.Deferred, daemonapi.ReasonCancelled)
	}
	return result(daemonapi.Deferred, reason)
}

// stopped is the result of a spoken question that ended before an answer.
func stopped(ctx context.Context, why, fallback string) daemonapi.AskResult {
	if why == "" {
		why = fallback
	}
	if ctx.Err() != nil {
		why = daemonapi.ReasonCancelled
	}
	return result(daemonapi.NoAnswer, why)
}
