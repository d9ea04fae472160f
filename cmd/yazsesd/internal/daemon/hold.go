package daemon

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/child"
	"github.com/yazses/yazses/cmd/yazsesd/internal/dictation"
	"github.com/yazses/yazses/cmd/yazsesd/internal/hold"
	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/bcast"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/tts"
)

// Holds. The hold itself (its audio, its detector, its tail, its eager
// pieces and speculation, its decoding) is package hold: one goroutine
// per hold, which this file starts with the child ends behind hold's
// interfaces (ends.go), and Run waits for (waitWork). What a hold starts
// with and ends as is package dictation's. What stays here is the wiring:
// the socket's hold.* calls, the person's side of the state (stateT),
// the audit lines of a hold's start and its limits, and the watch stream.

// stateT is the person's side of the daemon: whether they hold the
// push-to-talk key, which question is being put to them, and the last
// dictation transcript.
type stateT struct {
	mu      sync.Mutex
	hold    *holdRec     // nil when idle
	changed bcast.Signal // broadcast under mu whenever hold or closing changes
	asking  interrupter  // the question being spoken or answered (ask.go)
	closing bool
	stopAt  time.Time // when closing began
	last    daemonapi.Last
}

// holding reports whether a hold is open, and a channel closed at the next
// change.
func (s *stateT) holding() (bool, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hold != nil, s.changed.C()
}

func (s *stateT) broadcastLocked() { s.changed.Broadcast() }

func (s *stateT) shutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing, s.stopAt = true, time.Now()
	if s.asking != nil {
		s.asking.Interrupt(daemonapi.ReasonInterrupted)
	}
	s.broadcastLocked()
}

// holdRec is the daemon's side of one hold: it is state.hold from its
// start until it stops listening (after its tail, or a cancel).
type holdRec struct {
	ctl      *hold.Control
	started  time.Time
	autoStop time.Duration // dictation.auto_stop_ms of a toggled hold; 0: none
	// stopping: a release, the limit or the auto stop began the hold's
	// end; a new hold.start opens a new hold. Under state.mu.
	stopping bool
	// final is closed once the hold has ended and its text is typed;
	// res and why are set before.
	final chan struct{}
	res   daemonapi.HoldResult
	why   hold.Why
	// live types the pieces decided while the key is held
	// (dictation.live); nil without live text.
	live *dictation.Live
}

// holdStart opens a hold. A question being spoken stops at once
// (barge-in); one being answered stops listening.
func (d *Daemon) holdStart(ctx context.Context) (daemonapi.HoldResult, error) {
	return d.holdOpen(ctx, false)
}

// holdOpen opens a hold; a toggled one (hold.toggle, a toggle hotkey)
// ends by itself after dictation.auto_stop_ms of silence when it is set.
func (d *Daemon) holdOpen(ctx context.Context, toggled bool) (daemonapi.HoldResult, error) {
	d.state.mu.Lock()
	defer d.state.mu.Unlock()
	if d.state.closing {
		return daemonapi.HoldResult{}, errShuttingDown
	}
	if d.state.hold != nil && !d.state.hold.stopping {
		return daemonapi.HoldResult{Hold: daemonapi.HoldHolding}, nil
	}
	// A decoder down for good (no usable model, a crash loop) could not
	// decode what the person is about to say: refused now, with its
	// cause, instead of after they have spoken. A person who pressed the
	// key learns why from a notification: one per cause in
	// refusalNoteEvery, however often the key is pressed or held.
	select {
	case <-d.decode.Down():
		if st := d.decode.Status(); st.State.Failed() {
			cause, reason := dictation.Failure(st, "decoder_down")
			note := d.refusalNotes.Allow(cause, time.Now())
			d.log.Warn("hold refused: the decoder is down", "cause", cause, "notified", note)
			if note {
				d.notify(dictation.RefusedKind(cause))
			}
			return daemonapi.HoldResult{Hold: daemonapi.HoldIdle, Outcome: "failed", Cause: cause, Reason: reason}, nil
		}
	default:
	}
	// A hold in its tail goes on collecting the tail and is typed; the
	// key pressed again meanwhile opens a new one.
	params, detParams := dictation.Settings(d.config(), toggled)
	// The detector's use outlives d.life: a hold past its recording when
	// the daemon stops still settles (the hold releases the use).
	det := d.detect.Begin(context.WithoutCancel(d.life), detParams)
	if det == nil {
		return daemonapi.HoldResult{}, errShuttingDown
	}
	params.Speculate = dictation.Speculate(det.Engine())
	// Guesses at the piece being spoken only where the typing route
	// shows them (a preedit: IBus), never for nothing.
	params.Tentative = params.Live && params.Speculate && dictation.Preedits(d.injector())
	params.Ending = d.holdEnding
	h := &holdRec{ctl: hold.NewControl(), started: time.Now(), autoStop: params.AutoStop, final: make(chan struct{})}
	if params.Live {
		// The pieces are typed as the hold decides them, into the window
		// that takes the first; finishHold waits for their typing.
		h.live = dictation.StartLive(d.typeCtx, d.dictationEnv())
	}
	l := d.mic.Listen(d.mic.Always())
	d.log.Debug("hold started", "pre_roll_ms", l.PreRoll().Milliseconds())
	if d.config().Dictation.Cues && d.state.asking == nil {
		d.cue(tts.CueStart, l)
	}
	deps := hold.Deps{
		Audio:    micAudio{d.mic, l},
		Detector: det,
		Energy:   d.tailEnergy,
		Decoder:  holdDecoder{d, d.holdPrompt()},
		Owner:    holdOwner{d, h},
		Log:      d.log,
	}
	// The hold's goroutine ends with the hold, or with d.life (the
	// daemon stops); Run waits for it (waitWork) before it closes the
	// audit.
	d.work.Add(1) // under state.mu, not closing: never after waitWork began
	go func() {
		defer d.work.Done()
		d.finishHold(h, hold.Run(d.life, deps, params, h.ctl))
	}()
	d.state.hold = h
	d.state.broadcastLocked()
	d.live.SetHold(daemonapi.StateListening)
	if d.state.asking != nil {
		d.state.asking.Interrupt(daemonapi.ReasonInterrupted)
	}
	d.auditf(audit.Event{Kind: "hold.started"})
	d.notify("listening")
	return daemonapi.HoldResult{Hold: daemonapi.HoldHolding}, nil
}

// The silence a hold's start cue makes of the hold's audio (child.Mic.
// Quiet): until cueAfter after the speaker played it out (what the
// microphone delivers a little after was recorded while it played), and
// never longer than cueQuiet from the start. "Played out" is the device's
// word, and a sound server may start a stream late (an idle PulseAudio
// null sink plays it about 1.9 s after it was handed over): the quiet
// follows the cue, not a guess of its length. The cue says "speak now":
// a person speaks after hearing it, and what they say then is kept.
const (
	cueAfter = 250 * time.Millisecond
	cueQuiet = 3 * time.Second
)

// cue plays a sound cue (dictation.cues) unless the speaker is saying
// something or is down; a start cue quiets the hold's listener l until it
// is played out (child.Mic.Quiet), so the hold does not hear it.
func (d *Daemon) cue(name string, l *child.Listener) {
	events, err := d.speak.Cue(name)
	if err != nil {
		d.log.Debug("sound cue left out", "cue", name, "err", err)
		return
	}
	if l != nil {
		d.mic.Quiet(l, events, cueAfter, cueQuiet)
	}
}

// holdEnding are the settings a hold ends with: dictation.tail_ms and
// dictation.min_utterance_ms as they are when it ends.
func (d *Daemon) holdEnding() hold.Ending {
	cfg := d.config()
	return hold.Ending{
		Tail:         time.Duration(cfg.Dictation.TailMs) * time.Millisecond,
		MinUtterance: time.Duration(cfg.Dictation.MinUtteranceMs) * time.Millisecond,
	}
}

// holdOwner is what the hold tells the daemon (hold.Owner).
type holdOwner struct {
	d *Daemon
	h *holdRec
}

func (o holdOwner) Stopping(hold.Why) {
	o.d.state.mu.Lock()
	o.h.stopping = true
	o.d.state.mu.Unlock()
}

func (o holdOwner) Collected(why hold.Why) {
	d, h := o.d, o.h
	d.state.mu.Lock()
	if d.state.hold == h { // else a new hold began during the tail
		d.state.hold = nil
		d.state.broadcastLocked()
		switch why {
		case hold.Cancelled, hold.Shutdown:
			d.live.EndHold("cancelled")
		default:
			d.live.SetHold(daemonapi.StateDecoding)
		}
	}
	cue := why != hold.Shutdown && d.config().Dictation.Cues && d.state.asking == nil
	d.state.mu.Unlock()
	if cue {
		d.cue(tts.CueEnd, nil)
	}
	if h.live != nil && why != hold.Cancelled && why != hold.Shutdown {
		h.live.Clear() // the guesses end with the listening
	}
	switch why {
	case hold.AtLimit:
		d.log.Info("the hold reached dictation.max_hold_s and ended as if released", "max_hold_s", d.config().Dictation.MaxHoldS)
		d.auditf(audit.Event{Kind: "hold.max_reached", Duration: time.Since(h.started)})
	case hold.AutoStopped:
		d.log.Info("the toggled hold ended by itself after dictation.auto_stop_ms of silence", "auto_stop_ms", h.autoStop.Milliseconds())
		d.auditf(audit.Event{Kind: "hold.auto_stopped", Duration: time.Since(h.started)})
	}
}

// Preview: the owner's opt-in (dictation.preview): the text so far, on
// the watch stream only; livestate drops it otherwise.
func (o holdOwner) Preview(text string) { o.d.live.SetPreview(text) }

// Piece: a piece decided while the key is held, typed at once
// (dictation.live).
func (o holdOwner) Piece(text string) {
	if o.h.live != nil {
		o.h.live.Piece(text)
	}
}

// Tentative: a guess at the piece being spoken, shown as the field's
// preedit (dictation.live, where the typing route shows one).
func (o holdOwner) Tentative(text string) {
	if o.h.live != nil {
		o.h.live.Tentative(text)
	}
}

// holdStop ends the hold, decodes it and types the text. The tail is
// recorded in full unless the daemon stops: a caller that hangs up after
// hold.stop still gets its words typed.
func (d *Daemon) holdStop(context.Context) (daemonapi.HoldResult, error) {
	h := d.holdRelease()
	if h == nil {
		return daemonapi.HoldResult{Hold: daemonapi.HoldIdle}, nil
	}
	<-h.final
	if h.why == hold.Cancelled || h.why == hold.Shutdown { // a cancel took it in its tail
		return daemonapi.HoldResult{Hold: daemonapi.HoldIdle}, nil
	}
	return h.res, nil
}

// holdRelease ends the open hold's recording as the key's release does:
// once it returns the hold is in its tail, and its own goroutine decodes
// and types it (h.final closes then). nil when no hold was open, or it
// was already ending.
func (d *Daemon) holdRelease() *holdRec {
	d.state.mu.Lock()
	h := d.state.hold
	if h == nil || h.stopping {
		d.state.mu.Unlock()
		return nil
	}
	h.stopping = true
	d.state.mu.Unlock()
	if !h.ctl.Release() { // it ended by itself meanwhile
		return nil
	}
	return h
}

// holdCancel ends the hold and drops its audio; a hold in its tail too.
func (d *Daemon) holdCancel(context.Context) (daemonapi.HoldResult, error) {
	d.state.mu.Lock()
	h := d.state.hold
	d.state.mu.Unlock()
	if h == nil || !h.ctl.Cancel() {
		return daemonapi.HoldResult{Hold: daemonapi.HoldIdle}, nil
	}
	<-h.final
	return h.res, nil
}

// holdToggle starts a hold when idle and stops it when holding.
func (d *Daemon) holdToggle(ctx context.Context) (daemonapi.HoldResult, error) {
	d.state.mu.Lock()
	open := d.state.hold != nil && !d.state.hold.stopping
	d.state.mu.Unlock()
	if open {
		return d.holdStop(ctx)
	}
	return d.holdOpen(ctx, true)
}

// finishHold turns the end of hold h into its result: audited, and typed
// when it has a text. It closes h.final.
func (d *Daemon) finishHold(h *holdRec, r hold.Result) {
	defer close(h.final)
	h.why = r.Why
	switch r.Why {
	case hold.Shutdown, hold.Cancelled:
		// The audio is dropped; live pieces not typed yet never are, and
		// those typed stay (kept for `last`).
		var lv dictation.LiveReport
		if h.live != nil {
			lv = h.live.Cancel()
			d.keepLast(strings.Join(lv.Texts, " "), "cancelled")
		}
		h.res = daemonapi.HoldResult{Hold: daemonapi.HoldIdle}
		if r.Why == hold.Cancelled {
			d.auditf(audit.Event{Kind: "dictation.cancelled", Duration: time.Since(h.started), Count: lv.Arrived})
			h.res.Outcome, h.res.Arrived = "cancelled", lv.Arrived
		}
	default:
		env := d.dictationEnv()
		if h.live != nil {
			lv := h.live.Close()
			env.Live = &lv
		}
		h.res = d.dictate(env, r)
	}
}

// dictationEnv is what a hold's text is shaped and typed with.
func (d *Daemon) dictationEnv() dictation.Env {
	cfg := d.config().Dictation
	return dictation.Env{
		Typer:     d.injector(),
		Decoder:   d.decode,
		Replace:   cfg.Replace,
		Separator: cfg.Separator,
		PostProcess: dictation.PostProcess{
			Argv:    cfg.PostProcess,
			Timeout: time.Duration(cfg.PostProcessTimeoutMs) * time.Millisecond,
		},
		Report: dictationReport{d},
		Log:    d.log,
	}
}

// keepLast keeps text (not empty) for `ctl last`.
func (d *Daemon) keepLast(text, outcome string) {
	if text == "" {
		return
	}
	d.state.mu.Lock()
	d.state.last = daemonapi.Last{Text: text, AtMs: time.Now().UnixMilli(), Outcome: outcome}
	d.state.mu.Unlock()
}

// dictate turns a hold that ended with a text, or without one, into its
// result (package dictation), typed with the injector, and keeps its
// text for `last`.
func (d *Daemon) dictate(env dictation.Env, r hold.Result) daemonapi.HoldResult {
	res, text := dictation.Finish(d.typeCtx, env, r)
	d.keepLast(text, res.Outcome)
	d.live.EndHold(res.Outcome)
	return res
}

// dictationReport is what a finished hold tells the daemon
// (dictation.Reporter).
type dictationReport struct{ d *Daemon }

func (r dictationReport) Audit(e audit.Event)            { r.d.auditf(e) }
func (r dictationReport) Notify(kind string)             { r.d.notify(kind) }
func (r dictationReport) Typing()                        { r.d.live.SetHold(daemonapi.StateTyping) }
func (r dictationReport) Pieces(p daemonapi.WatchPieces) { r.d.live.SetPieces(p) }

// holdPrompt is dictation.prompt as the daemon started with it
// (restart-only), or nil.
func (d *Daemon) holdPrompt() *string {
	if p := d.opt.Config.Dictation.Prompt; p != "" {
		return &p
	}
	return nil
}

// notify shows a notification of kind, unless notify.enabled is off.
func (d *Daemon) notify(kind string) {
	if d.opt.Desktop != nil && d.config().Notify.Enabled {
		d.opt.Desktop.Notify(d.life, kind)
	}
}
