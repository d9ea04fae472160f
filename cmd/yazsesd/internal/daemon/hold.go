package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/yazses/yazses/cmd/yazsesd/internal/child"
	"github.com/yazses/yazses/cmd/yazsesd/internal/detect"
	"github.com/yazses/yazses/cmd/yazsesd/internal/health"
	"github.com/yazses/yazses/cmd/yazsesd/internal/hold"
	"github.com/yazses/yazses/cmd/yazsesd/internal/inject"
	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/cmd/yazsesd/internal/vadlink"
	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/untrusted"
	"github.com/yazses/yazses/lib/vadspan"
)

// Holds. The hold itself (its audio, its detector, its tail, its eager
// pieces and speculation, its decoding) is package hold: one goroutine
// per hold, which this file starts with the child ends behind hold's
// interfaces (ends.go), and Run waits for (waitWork). What stays here is
// the wiring: the socket's hold.* calls, the refusal while the decoder is
// down, the person's side of the state (stateT), typing the text, audit
// lines, notifications and the watch stream.

// stateT is the person's side of the daemon: whether they hold the
// push-to-talk key, which question is being put to them, and the last
// dictation transcript.
type stateT struct {
	mu      sync.Mutex
	hold    *holdRec      // nil when idle
	changed chan struct{} // closed and replaced whenever hold changes
	asking  *askRun       // the question being spoken or answered
	closing bool
	last    daemonapi.Last
}

func (s *stateT) init() { s.changed = make(chan struct{}) }

// holding reports whether a hold is open, and a channel closed at the next
// change.
func (s *stateT) holding() (bool, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hold != nil, s.changed
}

func (s *stateT) broadcastLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *stateT) shutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	if s.asking != nil {
		s.asking.interrupt(daemonapi.ReasonInterrupted)
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
}

// holdParams are the detector's parameters for a hold: [vad]'s
// (vadlink.FromConfig), reporting the tail's silence.
func holdParams(cfg config.Config) vadspan.Params {
	p := vadlink.FromConfig(cfg.VAD)
	p.Silences = []time.Duration{hold.TailQuiet}
	return p
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
		if d.decode.Status().State.Failed() {
			cause, reason := d.decodeFailure("decoder_down")
			note := d.refusalNotes.allow(cause, time.Now())
			d.log.Warn("hold refused: the decoder is down", "cause", cause, "notified", note)
			if note {
				d.notify(refusedKind(cause))
			}
			return daemonapi.HoldResult{Hold: daemonapi.HoldIdle, Outcome: "failed", Cause: cause, Reason: reason}, nil
		}
	default:
	}
	// A hold in its tail goes on collecting the tail and is typed; the
	// key pressed again meanwhile opens a new one.
	cfg := d.config()
	maxHold := time.Duration(cfg.Dictation.MaxHoldS) * time.Second
	if maxHold <= 0 { // a configuration not made by config.Load
		maxHold = time.Duration(config.Default().Dictation.MaxHoldS) * time.Second
	}
	h := &holdRec{ctl: hold.NewControl(), started: time.Now(), final: make(chan struct{})}
	if ms := cfg.Dictation.AutoStopMs; toggled && ms > 0 {
		h.autoStop = time.Duration(ms) * time.Millisecond
	}
	p := holdParams(cfg)
	if h.autoStop > 0 {
		p.Silences = append(p.Silences, h.autoStop)
	}
	eagerMs := cfg.Dictation.EagerPauseMs
	if eagerMs > 0 {
		p.MinSilence = time.Duration(eagerMs) * time.Millisecond
	}
	det := d.detect.Begin(d.life, p)
	if det == nil {
		return daemonapi.HoldResult{}, errShuttingDown
	}
	params := hold.Params{
		MaxHold:  maxHold,
		AutoStop: h.autoStop,
		Pieces:   eagerMs > 0,
		// The speculation trusts the detector's word that nothing was
		// said after a silence: only the trained one's. The energy
		// detector takes the soft end of a word ("Americans"' s) for
		// silence, and what the key's release would have kept would be
		// cut.
		Speculate: det.Engine() == detect.Silero,
		Ending:    d.holdEnding,
	}
	l := d.mic.Listen(d.mic.Always())
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
		d.state.asking.interrupt(daemonapi.ReasonInterrupted)
	}
	d.auditf(audit.Event{Kind: "hold.started"})
	d.notify("listening")
	return daemonapi.HoldResult{Hold: daemonapi.HoldHolding}, nil
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
	d.state.mu.Unlock()
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
	case hold.Shutdown: // the daemon stops: the audio is dropped
		h.res = daemonapi.HoldResult{Hold: daemonapi.HoldIdle}
	case hold.Cancelled:
		d.auditf(audit.Event{Kind: "dictation.cancelled", Duration: time.Since(h.started)})
		h.res = daemonapi.HoldResult{Hold: daemonapi.HoldIdle, Outcome: "cancelled"}
	default:
		h.res = d.dictate(d.config(), r)
	}
}

// dictate turns a hold that ended with a text, or without one, into its
// result, and types the text.
func (d *Daemon) dictate(cfg config.Config, r hold.Result) (res daemonapi.HoldResult) {
	res = daemonapi.HoldResult{Hold: daemonapi.HoldIdle}
	defer func() { d.live.EndHold(res.Outcome) }()
	ev := audit.Event{Duration: r.Audio}
	switch r.Outcome {
	case hold.TooShort:
		res.Outcome = "too_short"
	case hold.Empty:
		res.Outcome = "empty" // without a decoder turn
	}
	if res.Outcome != "" {
		ev.Kind = "dictation." + res.Outcome
		d.auditf(ev)
		return res
	}
	// A detector that failed or went silent during the hold said nothing
	// of the rest: all of it is decoded, and the outcome says so.
	switch {
	case r.DetectorSilent:
		res.Cause, res.Reason = "vad_timeout", "the voice detector did not answer during this hold: all of its audio was decoded, and the detector is restarted"
	case r.DetectorFailed:
		res.Cause, res.Reason = "vad_failed", "the voice detector failed during this hold: all of its audio was decoded"
	}
	if r.Outcome == hold.Failed {
		d.decodeLost(&res, &ev, r)
		return res
	}
	text := cleanText(applyReplacements(strings.TrimSpace(r.Text), cfg.Dictation.Replace))
	if text == "" {
		res.Outcome = "empty"
		ev.Kind = "dictation.empty"
		d.auditf(ev)
		return res
	}
	res.Chars = utf8.RuneCountInString(text)
	ev.Count = res.Chars
	res.Outcome = "kept"
	if inj := d.injector(); inj != nil {
		d.live.SetHold(daemonapi.StateTyping)
		backend, err := inj.Type(context.WithoutCancel(d.life), text)
		switch {
		case err == nil:
			res.Outcome, res.Backend = "typed", backend
		case errors.Is(err, inject.ErrNoTarget):
			ev.Reason = "no_target"
			d.log.Info("no focused window: nothing was typed; the text is kept for `yazsesd ctl last`", "chars", res.Chars)
			d.notify("no_target")
		default:
			ev.Reason = "inject_failed"
			d.log.Warn("typing failed: the text is kept for `yazsesd ctl last`", "backend", backend)
			d.notify("typing_failed")
		}
		if audit.ValidWord(backend) {
			ev.Backend = backend
		}
	} else {
		ev.Reason = "no_backend"
	}
	ev.Kind = "dictation." + res.Outcome
	d.auditf(ev)
	d.state.mu.Lock()
	d.state.last = daemonapi.Last{Text: text, AtMs: time.Now().UnixMilli(), Outcome: res.Outcome}
	d.state.mu.Unlock()
	return res
}

// decodeLost fills in the result of a hold whose decoding failed: its
// utterance is lost, and the cause says why. A decoder that did not
// answer within the hold's bound (hold.DecodeBound) is taken for hung and
// restarted, as the supervisor restarts one that dies; the holds, answers
// and file pieces behind it are served by the new one.
func (d *Daemon) decodeLost(res *daemonapi.HoldResult, ev *audit.Event, r hold.Result) {
	res.Outcome = "failed"
	ev.Kind, ev.Reason = "dictation.lost", "decoder_failed"
	switch {
	case r.Hung:
		ev.Reason = "decoder_timeout"
		res.Cause = ev.Reason
		secs := int(r.Bound / time.Second)
		if st := d.decode.Status().State; st != supervise.StateRunning {
			// Starting or restarting: its supervisor bounds that.
			res.Reason = fmt.Sprintf("decode: the decoder was not up within %d s (%s); this utterance is lost: say it again", secs, st)
			break
		}
		// Up, and silent (stopped, or looping): the restart does what a
		// crash would have done, and whatever waits behind this hold is
		// served by the new decoder.
		d.decode.Restart()
		res.Reason = fmt.Sprintf("decode: the decoder did not answer within %d s; it is restarted, and this utterance is lost: say it again", secs)
	case !errors.Is(r.Err, child.ErrLost) && !errors.Is(r.Err, errDecodeEnded):
		ev.Reason = "decode_error"
		fallthrough
	default:
		res.Cause, res.Reason = d.decodeFailure(ev.Reason)
	}
	d.log.Error("dictation lost: the decoder failed", "reason", ev.Reason, "cause", res.Cause,
		"audio_ms", r.Audio.Milliseconds(), "bound_ms", r.Bound.Milliseconds())
	d.auditf(*ev)
	d.notify("lost")
}

// holdPrompt is dictation.prompt as the daemon started with it
// (restart-only), or nil.
func (d *Daemon) holdPrompt() *string {
	if p := d.opt.Config.Dictation.Prompt; p != "" {
		return &p
	}
	return nil
}

// decodeFailure says why a hold's decoding failed: the decoder's own cause
// when it is down for one, else the kind of failure (decoder_failed: it
// ended before answering; decode_error: it answered with an error).
func (d *Daemon) decodeFailure(kind string) (cause, reason string) {
	st := d.decode.Status()
	if st.State.Failed() {
		cause = st.Cause
		if cause == "" {
			cause = "decoder_down"
		}
		return cause, "decode: " + health.Reason(st)
	}
	if kind == "decode_error" {
		return kind, "decode: the decoder could not decode this utterance; see its log lines"
	}
	return kind, "decode: the decoder ended before answering; it is restarted"
}

// refusalNoteEvery is the least time between two notifications of a
// refused hold.start for one cause.
const refusalNoteEvery = 30 * time.Second

// noteLimit lets a notification through at most once per
// refusalNoteEvery for each cause. Its zero value is ready.
type noteLimit struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// allow reports whether a notification for cause may be shown at now, and
// if so counts it.
func (l *noteLimit) allow(cause string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.last[cause]; ok && now.Sub(t) < refusalNoteEvery && !now.Before(t) {
		return false
	}
	if l.last == nil {
		l.last = make(map[string]time.Time)
	}
	l.last[cause] = now
	return true
}

// refusedKind is the notification of a hold refused for cause.
func refusedKind(cause string) string {
	switch cause {
	case "model_missing", "model_invalid", "language_unsupported":
		return "refused_" + cause
	}
	return "refused_decoder_down"
}

func (d *Daemon) notify(kind string) {
	if d.opt.Notify != nil && d.config().Notify.Enabled {
		d.opt.Notify(kind)
	}
}

// cleanText is the transcript rule of package untrusted: a transcript
// never presses Enter.
func cleanText(s string) string { return untrusted.Transcript(s) }

// applyReplacements replaces each exact word or phrase From with To, in
// order; a match must not be part of a longer word.
func applyReplacements(s string, reps []config.Replacement) string {
	for _, r := range reps {
		if r.From == "" {
			continue
		}
		var b strings.Builder
		pos, last := 0, 0
		for {
			i := strings.Index(s[pos:], r.From)
			if i < 0 {
				break
			}
			i += pos
			end := i + len(r.From)
			before, _ := utf8.DecodeLastRuneInString(s[:i])
			after, _ := utf8.DecodeRuneInString(s[end:])
			if (i > 0 && isWordRune(before)) || (end < len(s) && isWordRune(after)) {
				pos = i + 1
				continue
			}
			b.WriteString(s[last:i])
			b.WriteString(r.To)
			last, pos = end, end
		}
		b.WriteString(s[last:])
		s = b.String()
	}
	return s
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }
