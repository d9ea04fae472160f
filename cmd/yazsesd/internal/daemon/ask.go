package daemon

import (
	"context"
	"errors"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/yazses/yazses/cmd/yazsesd/internal/question"
	"github.com/yazses/yazses/cmd/yazsesd/internal/rpc"
	"github.com/yazses/yazses/cmd/yazsesd/internal/turn"
	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
	"github.com/yazses/yazses/lib/untrusted"
)

// The ask_human method: the question itself (its walk, the slot and its
// settling, the answer window) is package question's; here are its entry,
// its audit lines and the person's side of it (askHouse); the adapters
// from the daemon's children to the question's interfaces are in
// ends.go.

// askRun is the question being put to the person (state.asking); a hold
// interrupts it. It is the question's question.Barge.
type askRun struct {
	once   sync.Once
	stop   chan struct{}
	reason string
}

func (a *askRun) interrupt(reason string) {
	a.once.Do(func() {
		a.reason = reason
		close(a.stop)
	})
}

// Done is closed by interrupt.
func (a *askRun) Done() <-chan struct{} { return a.stop }

// Reason is interrupt's reason, once Done is closed.
func (a *askRun) Reason() string { return a.reason }

// askHuman is the ask_human method. q was checked where it entered (the
// method's handler); timeoutS is the caller's, which package question
// clamps.
func (d *Daemon) askHuman(ctx context.Context, q untrusted.Question, timeoutS int) (daemonapi.AskResult, error) {
	if timeoutS < 0 {
		return daemonapi.AskResult{}, jsonrpc.Errorf(jsonrpc.InvalidParams, "timeout_s must not be negative")
	}
	// A timeout too short for any answer is refused before anything is
	// reserved (yaz-mcp checks the same rule).
	if least := daemonapi.AskTimingOf(d.config()).MinTimeoutS(); timeoutS > 0 && timeoutS < least {
		return daemonapi.AskResult{}, jsonrpc.Errorf(jsonrpc.InvalidParams, daemonapi.TimeoutTooShort, least)
	}
	h := &askHouse{d: d, peer: rpc.PeerOf(ctx), start: time.Now()}
	res := d.ask(ctx, h, q, timeoutS) // settles the slot
	d.live.EndAsk(res.Result)         // the result only: the phase is the asked question's
	d.live.RefreshBudget()
	switch res.Result {
	case daemonapi.Answered:
		d.auditf(audit.Event{Kind: "ask.answered", Count: utf8.RuneCountInString(res.Answer),
			PeerPID: h.peer.PID, PeerUID: h.peer.UID, Duration: time.Since(h.start)})
	case daemonapi.NoAnswer: // spoken: one line each, as ask.spoken
		h.Audit("ask."+string(res.Result), res.Reason)
	default: // never spoken: counted
		_ = h.Tally("ask."+string(res.Result), res.Reason)
	}
	d.log.Info("ask_human", "result", res.Result, "reason", res.Reason, "peer_pid", h.peer.PID,
		"duration_ms", time.Since(h.start).Milliseconds())
	return res, nil
}

// ask runs the question, unless questions are off or the crash marker
// cannot be written.
func (d *Daemon) ask(ctx context.Context, h *askHouse, q untrusted.Question, timeoutS int) daemonapi.AskResult {
	cfg := d.config()
	if !cfg.MCP.AskHuman {
		return daemonapi.AskResult{Result: daemonapi.Refused, Reason: daemonapi.ReasonDisabled}
	}
	// A daemon that could not record that it runs would hand out a fresh
	// budget after a crash: no question until the marker is written
	// (package marker); this tries again.
	if d.marker == nil || d.marker.Write() != nil {
		return daemonapi.AskResult{Result: daemonapi.Unavailable, Reason: daemonapi.ReasonStateUnavailable}
	}
	env := question.Env{
		House:    h,
		Gate:     askGate{d},
		Speaker:  askSpeaker{d},
		Mic:      askMic{d},
		Detector: askDetector{d},
		Decoder:  askDecoder{d},
		Log:      d.log,
	}
	return question.Run(ctx, env, cfg, q, timeoutS)
}

// waitNoHold waits until no hold is open; false if ctx ended first. While
// it waits the question counts as waiting, in d.live alone: watch streams
// that count and status reads it (waiting).
func (d *Daemon) waitNoHold(ctx context.Context) bool {
	if on, _ := d.state.holding(); !on {
		return true
	}
	d.live.AddWaiting(1)
	defer d.live.AddWaiting(-1)
	d.notify("question_waiting") // shown, not spoken
	for {
		on, changed := d.state.holding()
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

// askHouse is the daemon's side of one question (question.House).
type askHouse struct {
	d     *Daemon
	peer  rpc.Peer
	start time.Time
	run   *askRun // set by Enter: this question is state.asking
}

func (h *askHouse) WaitNoHold(ctx context.Context) bool { return h.d.waitNoHold(ctx) }

func (h *askHouse) Take(ctx context.Context) (func(), error) {
	turn, err := h.d.asks.Take(ctx, turn.Answer)
	if err != nil {
		return nil, err
	}
	return turn.Release, nil
}

func (h *askHouse) Enter() (question.Barge, func(), error) {
	d := h.d
	d.state.mu.Lock()
	defer d.state.mu.Unlock()
	switch {
	case d.state.closing:
		return nil, nil, question.ErrClosing
	case d.state.hold != nil:
		return nil, nil, question.ErrHolding
	}
	run := &askRun{stop: make(chan struct{})}
	d.state.asking = run
	h.run = run
	// The watch stream's question phase follows state.asking, the one
	// the daemon acts on: set with it, under its lock, by this question
	// alone.
	d.live.SetAsk(daemonapi.StateSpeaking)
	leave := func() {
		d.state.mu.Lock()
		if d.state.asking == run {
			d.state.asking = nil
			d.live.SetAsk(daemonapi.StateIdle)
		}
		d.state.mu.Unlock()
	}
	return run, leave, nil
}

// SetPhase shows the phase of this question while it is the one being
// asked; a call that is not (any more) changes nothing.
func (h *askHouse) SetPhase(phase string) {
	d := h.d
	d.state.mu.Lock()
	defer d.state.mu.Unlock()
	if h.run != nil && d.state.asking == h.run {
		d.live.SetAsk(phase)
	}
}

// Tally audits what any client may cause without limit and the person
// never heard (a reservation, a release, a question refused, deferred or
// unavailable): a few lines per kind and reason, then a count (audit.Log
// Tally), so a flood cannot rotate away the record of what was spoken.
func (h *askHouse) Tally(kind, reason string) error {
	if h.d.audit == nil {
		return errors.New("audit log not open")
	}
	err := h.d.audit.Tally(h.event(kind, reason))
	if err != nil {
		h.d.log.Warn("audit write failed", "kind", kind, "err", err)
	}
	return err
}

func (h *askHouse) Audit(kind, reason string) { h.d.auditf(h.event(kind, reason)) }

func (h *askHouse) Cut() context.Context { return h.d.cutContext() }

func (h *askHouse) Off() bool { return !h.d.config().MCP.AskHuman }

// cutContext returns the context that the next reload lowering the cap or
// turning questions off ends (question.House.Cut).
func (d *Daemon) cutContext() context.Context {
	d.cfgMu.Lock()
	defer d.cfgMu.Unlock()
	return d.cut
}

// cutWaiting ends the cut context (a reload lowered the cap or turned
// questions off, and the gate has the new cap): every question not yet
// asked gives its slot back and, unless questions are off, reserves again
// under the new cap. The question being asked goes on.
func (d *Daemon) cutWaiting() {
	d.cfgMu.Lock()
	defer d.cfgMu.Unlock()
	d.endCut()
	d.cut, d.endCut = context.WithCancel(context.Background())
}

func (h *askHouse) event(kind, reason string) audit.Event {
	return audit.Event{Kind: kind, Reason: reason, PeerPID: h.peer.PID, PeerUID: h.peer.UID,
		Duration: time.Since(h.start)}
}
