// Package asking is the ask_human method on the daemon's children and
// state: its entry (the least timeout, questions off, the crash marker
// unwritten), its audit lines, the person's side of a question (its turn
// behind the others, the wait for a hold to end, the question being asked
// and its phase on the watch stream), the children's ends as package
// question's interfaces (ends.go), and the budget on the daemon's side:
// budget.status, and a reload's new cap (the gate told, the questions not
// yet asked cut). The question itself (its walk, the slot and its
// settling, the answer window) is package question's; the daemon's state,
// where a hold's start finds the question being asked, is package
// daemon's (the Daemon interface).
package asking

import (
	"context"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/yazses/yazses/cmd/yazsesd/internal/child"
	"github.com/yazses/yazses/cmd/yazsesd/internal/detect"
	"github.com/yazses/yazses/cmd/yazsesd/internal/livestate"
	"github.com/yazses/yazses/cmd/yazsesd/internal/mic"
	"github.com/yazses/yazses/cmd/yazsesd/internal/question"
	"github.com/yazses/yazses/cmd/yazsesd/internal/rpc"
	"github.com/yazses/yazses/cmd/yazsesd/internal/turn"
	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/gate"
	"github.com/yazses/yazses/lib/jsonrpc"
	"github.com/yazses/yazses/lib/untrusted"
)

// Daemon is what a question needs of the daemon besides its children:
// the settings, the person's side of its state, the crash marker, the
// audit log and the notifications.
type Daemon interface {
	// Config is the configuration in force.
	Config() config.Config
	// Holding reports whether a hold is open, and a channel closed at the
	// next change.
	Holding() (bool, <-chan struct{})
	// Enter makes r the question being asked and calls show, under the
	// lock a hold's start takes: from then on a hold that starts, or the
	// daemon's stop, interrupts r (Asked.Interrupt). question.ErrClosing
	// while the daemon stops, question.ErrHolding while a hold is open:
	// then neither is done.
	Enter(r *Asked, show func()) error
	// Leave calls show and makes no question be asked, under that lock,
	// if r is (still) the question being asked.
	Leave(r *Asked, show func())
	// WhileAsked calls show under that lock if r is (still) the question
	// being asked.
	WhileAsked(r *Asked, show func())
	// MarkRunning writes the crash marker (package marker) again and
	// reports whether it is written.
	MarkRunning() bool
	// Audit writes an audit event; a failure is logged, never fatal.
	Audit(audit.Event)
	// Tally is audit.Log.Tally, its failure logged: an error when the log
	// is not open or the write failed.
	Tally(audit.Event) error
	// Notify shows a notification of kind (when notifications are on).
	Notify(kind string)
}

// Deps are the daemon and its children that questions are put with.
type Deps struct {
	Daemon  Daemon
	Gate    *child.Gate
	Speaker *child.Speaker
	Mic     *mic.Mic
	Detect  *detect.Source
	Decoder *child.Decoder
	Live    *livestate.State // the watch stream
	// Life ends when the daemon stops: the answers' detector uses end
	// with it.
	Life context.Context
	Log  *slog.Logger
}

// Asker puts the ask_human questions to the person, one at a time.
type Asker struct {
	deps  Deps
	d     Daemon
	turns turn.Queue // questions, one at a time, in order

	mu sync.Mutex
	// cut ends at a reload that lowers the cap or turns questions off
	// (cutWaiting): the questions not yet asked give their slots back.
	cut    context.Context
	endCut context.CancelFunc
}

// New returns the daemon's Asker.
func New(deps Deps) *Asker {
	a := &Asker{deps: deps, d: deps.Daemon}
	a.cut, a.endCut = context.WithCancel(context.Background())
	return a
}

// Asked is the question being asked (the daemon's state holds it; Daemon
// Enter): a hold's start or the daemon's stop interrupts it. It is the
// question's question.Barge.
type Asked struct {
	once   sync.Once
	stop   chan struct{}
	reason string
}

// Interrupt stops the question being asked, for reason; a second call
// changes nothing.
func (r *Asked) Interrupt(reason string) {
	r.once.Do(func() {
		r.reason = reason
		close(r.stop)
	})
}

// Done is closed by Interrupt.
func (r *Asked) Done() <-chan struct{} { return r.stop }

// Reason is Interrupt's reason, once Done is closed.
func (r *Asked) Reason() string { return r.reason }

// Ask is the ask_human method. q was checked where it entered (the
// method's handler); timeoutS is the caller's, which package question
// clamps.
func (a *Asker) Ask(ctx context.Context, q untrusted.Question, timeoutS int) (daemonapi.AskResult, error) {
	if timeoutS < 0 {
		return daemonapi.AskResult{}, jsonrpc.Errorf(jsonrpc.InvalidParams, "timeout_s must not be negative")
	}
	// A timeout too short for any answer is refused before anything is
	// reserved (yaz-mcp checks the same rule).
	if least := daemonapi.AskTimingOf(a.d.Config()).MinTimeoutS(); timeoutS > 0 && timeoutS < least {
		return daemonapi.AskResult{}, jsonrpc.Errorf(jsonrpc.InvalidParams, daemonapi.TimeoutTooShort, least)
	}
	h := &house{a: a, peer: rpc.PeerOf(ctx), start: time.Now()}
	res := a.ask(ctx, h, q, timeoutS) // settles the slot
	a.deps.Live.EndAsk(res.Result)    // the result only: the phase is the asked question's
	a.deps.Live.RefreshBudget()
	switch res.Result {
	case daemonapi.Answered:
		a.d.Audit(audit.Event{Kind: "ask.answered", Count: utf8.RuneCountInString(res.Answer),
			PeerPID: h.peer.PID, PeerUID: h.peer.UID, Duration: time.Since(h.start)})
	case daemonapi.NoAnswer: // spoken: one line each, as ask.spoken
		h.Audit("ask."+string(res.Result), res.Reason)
	default: // never spoken: counted
		_ = h.Tally("ask."+string(res.Result), res.Reason)
	}
	a.deps.Log.Info("ask_human", "result", res.Result, "reason", res.Reason, "peer_pid", h.peer.PID,
		"duration_ms", time.Since(h.start).Milliseconds())
	return res, nil
}

// ask runs the question, unless questions are off or the crash marker
// cannot be written.
func (a *Asker) ask(ctx context.Context, h *house, q untrusted.Question, timeoutS int) daemonapi.AskResult {
	cfg := a.d.Config()
	if !cfg.MCP.AskHuman {
		return daemonapi.AskResult{Result: daemonapi.Refused, Reason: daemonapi.ReasonDisabled}
	}
	// A daemon that could not record that it runs would hand out a fresh
	// budget after a crash: no question until the marker is written
	// (package marker); this tries again.
	if !a.d.MarkRunning() {
		return daemonapi.AskResult{Result: daemonapi.Unavailable, Reason: daemonapi.ReasonStateUnavailable}
	}
	env := question.Env{
		House:    h,
		Gate:     askGate{a.deps.Gate, a.deps.Live},
		Speaker:  askSpeaker{a.deps.Speaker},
		Mic:      askMic{a.deps.Mic},
		Detector: askDetector{a.deps.Detect, a.deps.Life},
		Decoder:  askDecoder{a.deps.Decoder},
		Log:      a.deps.Log,
	}
	return question.Run(ctx, env, cfg, q, timeoutS)
}

// Waiting is status's count of the questions waiting: for the hold to end
// (counted by Live, which watch streams) and for their turn behind
// another question (the queue they wait in). Each is counted once, where
// it waits.
func (a *Asker) Waiting() int {
	_, queued := a.turns.State()
	return a.deps.Live.Current().Waiting + queued
}

// waitNoHold waits until no hold is open; false if ctx ended first. While
// it waits the question counts as waiting, in Live alone: watch streams
// that count and status reads it (Waiting).
func (a *Asker) waitNoHold(ctx context.Context) bool {
	if on, _ := a.d.Holding(); !on {
		return true
	}
	a.deps.Live.AddWaiting(1)
	defer a.deps.Live.AddWaiting(-1)
	a.d.Notify("question_waiting") // shown, not spoken
	for {
		on, changed := a.d.Holding()
		if !on {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

// cutContext returns the context that the next reload lowering the cap or
// turning questions off ends (question.House.Cut).
func (a *Asker) cutContext() context.Context {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cut
}

// cutWaiting ends the cut context (a reload lowered the cap or turned
// questions off, and the gate has the new cap): every question not yet
// asked gives its slot back and, unless questions are off, reserves again
// under the new cap. The question being asked goes on.
func (a *Asker) cutWaiting() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.endCut()
	a.cut, a.endCut = context.WithCancel(context.Background())
}

// Reloaded applies a reload from old to nc (the settings read, before
// the restart-only ones are put back) to the questions: a new cap is the
// gate's at its next start and now (a gate that does not take it is
// restarted fully spent), and then, when the cap is lower or questions
// are off, the questions not yet asked reserve again under it or are
// refused (cutWaiting).
func (a *Asker) Reloaded(ctx context.Context, old, nc config.Config) {
	g, log := a.deps.Gate, a.deps.Log
	if nc.Budget.AskHumanPerHour != old.Budget.AskHumanPerHour {
		n := nc.Budget.AskHumanPerHour
		g.SetPerHour(n) // for the next start of the gate
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := g.Do(cctx, 5*time.Second, false, func(c *gate.Client) error { return c.SetLimit(cctx, n) })
		cancel()
		if err != nil {
			if st := g.Status().State; st.Down() {
				// Nothing would restart: say what is true.
				log.Error("reload: the gate is down and was not restarted; no question is asked until yazsesd restarts", "gate", st)
			} else {
				log.Error("reload: the gate did not take the new cap; restarting it fully spent", "err", err)
				g.Restart()
			}
		}
	}
	if nc.Budget.AskHumanPerHour < old.Budget.AskHumanPerHour || (old.MCP.AskHuman && !nc.MCP.AskHuman) {
		// After the gate has the new cap: the questions not yet asked
		// reserve again under it, or are refused when questions are off.
		a.cutWaiting()
	}
}

// Budget is the budget.status method: the gate's budget; a gate that is
// down reports unavailable.
func (a *Asker) Budget(ctx context.Context) daemonapi.BudgetStatus {
	g := a.deps.Gate
	failClosed, why := g.FailClosed()
	b := daemonapi.BudgetStatus{PerHour: a.d.Config().Budget.AskHumanPerHour, FailClosed: failClosed, FailClosedReason: why}
	gctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	err := g.Do(gctx, 0, false, func(c *gate.Client) error {
		st, err := c.Status(gctx)
		if err == nil {
			b.PerHour, b.Used, b.NextFreeS, b.Available = st.PerHour, st.Used, st.NextFreeS, true
		}
		return err
	})
	if err != nil {
		b.Available = false
	}
	if b.FailClosed && b.Available && b.NextFreeS == 0 && b.Used < b.PerHour {
		b.FailClosed, b.FailClosedReason = false, "" // the spent hour has passed
	}
	return b
}

// house is the daemon's side of one question (question.House).
type house struct {
	a     *Asker
	peer  rpc.Peer
	start time.Time
	run   *Asked // set by Enter: this question is the one being asked
}

func (h *house) WaitNoHold(ctx context.Context) bool { return h.a.waitNoHold(ctx) }

func (h *house) Take(ctx context.Context) (func(), error) {
	turn, err := h.a.turns.Take(ctx, turn.Answer)
	if err != nil {
		return nil, err
	}
	return turn.Release, nil
}

func (h *house) Enter() (question.Barge, func(), error) {
	live := h.a.deps.Live
	run := &Asked{stop: make(chan struct{})}
	// The watch stream's question phase follows the question being
	// asked, the one the daemon acts on: set with it, under its lock, by
	// this question alone.
	if err := h.a.d.Enter(run, func() { live.SetAsk(daemonapi.StateSpeaking) }); err != nil {
		return nil, nil, err
	}
	h.run = run
	leave := func() { h.a.d.Leave(run, func() { live.SetAsk(daemonapi.StateIdle) }) }
	return run, leave, nil
}

// SetPhase shows the phase of this question while it is the one being
// asked; a call that is not (any more) changes nothing.
func (h *house) SetPhase(phase string) {
	if h.run != nil {
		h.a.d.WhileAsked(h.run, func() { h.a.deps.Live.SetAsk(phase) })
	}
}

// Tally audits what any client may cause without limit and the person
// never heard (a reservation, a release, a question refused, deferred or
// unavailable): a few lines per kind and reason, then a count (audit.Log
// Tally), so a flood cannot rotate away the record of what was spoken.
func (h *house) Tally(kind, reason string) error { return h.a.d.Tally(h.event(kind, reason)) }

func (h *house) Audit(kind, reason string) { h.a.d.Audit(h.event(kind, reason)) }

func (h *house) Cut() context.Context { return h.a.cutContext() }

func (h *house) Off() bool { return !h.a.d.Config().MCP.AskHuman }

func (h *house) event(kind, reason string) audit.Event {
	return audit.Event{Kind: kind, Reason: reason, PeerPID: h.peer.PID, PeerUID: h.peer.UID,
		Duration: time.Since(h.start)}
}
