package daemon

import (
	"context"
	"errors"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/yazses/yazses/cmd/yazsesd/internal/child"
	"github.com/yazses/yazses/cmd/yazsesd/internal/vadlink"
	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/gate"
	"github.com/yazses/yazses/lib/jsonrpc"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/tts"
	"github.com/yazses/yazses/lib/untrusted"
	"github.com/yazses/yazses/lib/vadspan"
)

// Label is what the person hears before every question (invariant 7): an
// honest label, never a client-supplied name.
const Label = "An MCP client asks: "

// Timing of the ask flow.
const (
	gateWait       = 5 * time.Second  // longest wait for a (re)starting gate
	speakerWait    = 5 * time.Second  // and for a (re)starting speaker
	settleWait     = 5 * time.Second  // for the speaker's final event after a skip
	decodeTimeout  = 2 * time.Minute  // for the answer's decoding
	decoderWait    = 30 * time.Second // for a restarted decoder, once
	maxAnswerAudio = 29 * time.Second // whisper's window is 30 s
)

// askRun is the question being put to the person; a hold interrupts it.
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

// ask is one ask_human call in progress.
type ask struct {
	d     *Daemon
	cfg   config.Config
	peer  peer
	start time.Time
	slot  slot
	// deadline is the end of the caller's timeout_s (set by run).
	deadline time.Time
}

// slot is the question's reservation in the gate, from reserve to its one
// settlement (settle). Its state only moves forward: reserved, then
// audible (audio may have reached the output device) or silent (proven
// that none did, with the reason). Audible is final and wins over an
// earlier silent: when in doubt, charged.
type slot struct {
	tok     string
	state   slotState
	reason  string // why silent
	settled bool   // settle ran: charged or refunded, for good
}

type slotState int

const (
	slotNone     slotState = iota // nothing reserved
	slotReserved                  // reserved; nothing known about audio yet
	slotAudible                   // audio may have been heard
	slotSilent                    // proven that no audio was played
)

// audible records that audio may have been heard: the slot is charged,
// whatever happens next.
func (s *slot) audible() {
	if s.state != slotNone {
		s.state, s.reason = slotAudible, ""
	}
}

// silent records a proven pre-output failure (the speaker never started,
// or the question was never sent to it), for reason.
func (s *slot) silent(reason string) {
	if s.state == slotReserved {
		s.state, s.reason = slotSilent, reason
	}
}

func (a *ask) audit(kind, reason string) { a.d.auditf(a.event(kind, reason)) }

// tally audits what any client may cause without limit and the person
// never heard (a reservation, a release, a question refused, deferred or
// unavailable): a few lines per kind and reason, then a count (audit.Log
// Tally), so a flood cannot rotate away the record of what was spoken.
func (a *ask) tally(kind, reason string) error {
	if a.d.audit == nil {
		return errors.New("audit log not open")
	}
	err := a.d.audit.Tally(a.event(kind, reason))
	if err != nil {
		a.d.log.Warn("audit write failed", "kind", kind, "err", err)
	}
	return err
}

func (a *ask) event(kind, reason string) audit.Event {
	return audit.Event{Kind: kind, Reason: reason, PeerPID: a.peer.pid, PeerUID: a.peer.uid,
		Duration: time.Since(a.start)}
}

// gateCtx bounds a gate call. It is not the caller's cancellation: an
// abandoned reserve would leave a slot charged for its whole lease.
func gateCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), gateWait)
}

// settle is DESIGN.md invariant 3, once per reserved question: as soon as
// audio may have been heard (heard), else when the call ends. A slot proven
// silent is released (refunded; audit
// ask.released with the reason); every other one, audible or not known to
// be silent, is committed (charged; audit ask.spoken). Until then the
// slot is reserved, which the budget counts as used; a daemon that dies
// before it settles leaves the reservation to the gate's lease (charged)
// and its successor starts spent (marker.go).
func (a *ask) settle(ctx context.Context) {
	if a.slot.state == slotNone || a.slot.settled {
		return
	}
	a.slot.settled = true
	gctx, cancel := gateCtx(ctx)
	defer cancel()
	if a.slot.state == slotSilent {
		err := a.d.gate.Do(gctx, gateWait, false, func(c *gate.Client) error { return c.Release(gctx, a.slot.tok) })
		if err != nil {
			a.d.log.Warn("release refused: the slot stays charged", "err", err)
		}
		_ = a.tally("ask.released", a.slot.reason)
		return
	}
	err := a.d.gate.Do(gctx, gateWait, false, func(c *gate.Client) error { return c.Commit(gctx, a.slot.tok) })
	if err != nil {
		// The gate died with our reservation: it restarts fully spent, so
		// nothing is undercharged.
		a.d.log.Warn("commit failed; the gate charges the slot anyway", "err", err)
	}
	a.audit("ask.spoken", "")
}

// heard records that the question's audio may have been heard and
// settles the slot at once: audible is final, so the charge and its audit
// line (ask.spoken: the question is playing) do not wait for the end of
// the call, and a daemon that dies later has already committed it.
func (a *ask) heard(ctx context.Context) {
	a.slot.audible()
	a.settle(ctx)
}

func result(o daemonapi.Outcome, reason string) daemonapi.AskResult {
	return daemonapi.AskResult{Result: o, Reason: reason}
}

// askHuman is the ask_human method.
func (d *Daemon) askHuman(ctx context.Context, p daemonapi.AskParams) (daemonapi.AskResult, error) {
	q := untrusted.Line(p.Question, 0)
	if q == "" {
		return daemonapi.AskResult{}, jsonrpc.Errorf(jsonrpc.InvalidParams, "question is empty")
	}
	if utf8.RuneCountInString(q) > daemonapi.MaxQuestionRunes {
		return daemonapi.AskResult{}, jsonrpc.Errorf(jsonrpc.InvalidParams, "question is longer than %d characters", daemonapi.MaxQuestionRunes)
	}
	if p.TimeoutS < 0 {
		return daemonapi.AskResult{}, jsonrpc.Errorf(jsonrpc.InvalidParams, "timeout_s must not be negative")
	}
	a := &ask{d: d, cfg: d.config(), peer: peerOf(ctx), start: time.Now()}
	res := a.run(ctx, q, p.TimeoutS) // settles the slot
	d.live.EndAsk(res.Result)
	d.live.RefreshBudget()
	switch res.Result {
	case daemonapi.Answered:
		a.d.auditf(audit.Event{Kind: "ask.answered", Count: utf8.RuneCountInString(res.Answer),
			PeerPID: a.peer.pid, PeerUID: a.peer.uid, Duration: time.Since(a.start)})
	case daemonapi.NoAnswer: // spoken: one line each, as ask.spoken
		a.audit("ask."+string(res.Result), res.Reason)
	default: // never spoken: counted
		_ = a.tally("ask."+string(res.Result), res.Reason)
	}
	d.log.Info("ask_human", "result", res.Result, "reason", res.Reason, "peer_pid", a.peer.pid,
		"duration_ms", time.Since(a.start).Milliseconds())
	return res, nil
}

func (a *ask) run(ctx context.Context, q string, timeoutS int) daemonapi.AskResult {
	d, cfg := a.d, a.cfg
	if !cfg.MCP.AskHuman {
		return result(daemonapi.Refused, daemonapi.ReasonDisabled)
	}
	// A daemon that could not record that it runs would hand out a fresh
	// budget after a crash: no question until the marker is written
	// (marker.go); this tries again.
	if d.marker == nil || d.marker.write() != nil {
		return result(daemonapi.Unavailable, daemonapi.ReasonStateUnavailable)
	}
	if timeoutS == 0 {
		timeoutS = cfg.Ask.DefaultTimeoutS
	}
	timeoutS = min(timeoutS, cfg.Ask.MaxTimeoutS)
	dctx, cancel := context.WithTimeout(ctx, time.Duration(timeoutS)*time.Second)
	defer cancel()
	a.deadline, _ = dctx.Deadline()

	// Never during a hold: wait for it to end, free of charge.
	if !d.waitNoHold(dctx) {
		return a.notAsked(ctx, daemonapi.ReasonHolding)
	}

	// The one way to a slot: the gate's atomic check-and-reserve.
	gctx, gcancel := gateCtx(ctx)
	err := d.gate.Do(gctx, gateWait, true, func(c *gate.Client) error {
		tok, err := c.Reserve(gctx)
		a.slot.tok = tok
		return err
	})
	gcancel()
	var ref *gate.Refused
	switch {
	case errors.As(err, &ref):
		r := result(daemonapi.Refused, string(ref.Reason))
		if ref.Reason == gate.ReasonBudgetExhausted {
			r.RetryAfterS = max(1, gate.Seconds(ref.RetryAfter))
		}
		return r
	case err != nil:
		d.log.Warn("ask_human: no gate", "err", err)
		return result(daemonapi.Unavailable, daemonapi.ReasonGateUnavailable)
	}
	a.slot.state = slotReserved
	defer a.settle(ctx) // the one place the slot is charged or refunded
	d.live.RefreshBudget()
	// A question that cannot be audited is not asked: the reservation is
	// its first record, so a failing log refunds the slot before any audio.
	if err := a.tally("ask.reserved", ""); err != nil {
		a.slot.silent(daemonapi.ReasonAuditUnavailable)
		return result(daemonapi.Unavailable, daemonapi.ReasonAuditUnavailable)
	}
	if ctx.Err() != nil { // the caller left while we reserved
		a.slot.silent(daemonapi.ReasonCancelled)
		return result(daemonapi.Deferred, daemonapi.ReasonCancelled)
	}

	// One question at a time, in order.
	turn, err := d.asks.Take(dctx, child.PrioAnswer)
	if err != nil {
		a.slot.silent(daemonapi.ReasonBusy)
		return a.notAsked(ctx, daemonapi.ReasonBusy)
	}
	defer turn.Release()

	run := &askRun{stop: make(chan struct{})}
	for {
		if !d.waitNoHold(dctx) {
			a.slot.silent(daemonapi.ReasonHolding)
			return a.notAsked(ctx, daemonapi.ReasonHolding)
		}
		d.state.mu.Lock()
		if d.state.closing {
			d.state.mu.Unlock()
			a.slot.silent(daemonapi.ReasonShuttingDown)
			return result(daemonapi.Unavailable, daemonapi.ReasonShuttingDown)
		}
		if d.state.hold == nil {
			d.state.asking = run
			d.live.SetAsk(daemonapi.StateSpeaking)
			d.state.mu.Unlock()
			break
		}
		d.state.mu.Unlock() // a hold began just now: wait again
	}
	defer func() {
		d.live.SetAsk(daemonapi.StateIdle)
		d.state.mu.Lock()
		if d.state.asking == run {
			d.state.asking = nil
		}
		d.state.mu.Unlock()
	}()

	if r, spoken := a.speak(ctx, dctx, run, q); !spoken {
		return r
	}
	return a.listen(ctx, dctx, run)
}

// notAsked is the result of a question that was never spoken: deferred,
// with reason cancelled when the caller itself went away.
func (a *ask) notAsked(ctx context.Context, reason string) daemonapi.AskResult {
	if ctx.Err() != nil {
		return result(daemonapi.Deferred, daemonapi.ReasonCancelled)
	}
	return result(daemonapi.Deferred, reason)
}

// waitNoHold waits until no hold is open; false if ctx ended first. While
// it waits the question counts as waiting in status.
func (d *Daemon) waitNoHold(ctx context.Context) bool {
	if on, _ := d.state.holding(); !on {
		return true
	}
	d.holdWaiters.Add(1)
	defer d.holdWaiters.Add(-1)
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

// speak plays the question. spoken is false when the call ends here. The
// slot's state follows what the speaker says: audible from its "started"
// on (or when it dies or falls silent without a final event), silent only
// when it proved that nothing was played.
func (a *ask) speak(ctx, dctx context.Context, run *askRun, q string) (r daemonapi.AskResult, spoken bool) {
	d := a.d
	if !d.speakerReady(dctx) {
		a.slot.silent(daemonapi.ReasonTTSUnavailable)
		return result(daemonapi.Unavailable, daemonapi.ReasonTTSUnavailable), false
	}
	_, events, err := d.speak.Speak(Label + q)
	if err != nil {
		a.slot.silent(daemonapi.ReasonTTSUnavailable)
		return result(daemonapi.Unavailable, daemonapi.ReasonTTSUnavailable), false
	}
	// why is set once the question is being stopped: interrupted,
	// timeout or cancelled.
	why := ""
	stopNow := func(reason string) {
		if why == "" {
			why = reason
			d.speak.Skip()
		}
	}
	var settle <-chan time.Time
	interrupted := run.stop // the shared run is never written here
	started := false
	for {
		select {
		case ev, ok := <-events:
			switch {
			case !ok: // the speaker died without a final event: maybe heard
				a.heard(ctx)
				return a.stopped(ctx, why, daemonapi.ReasonSpeakFailed), false
			case ev.Event == tts.EventStarted:
				// Handed to the sound server, not heard yet: the server
				// may hold it back for a second or two. Listening waits
				// for "done".
				started = true
				a.heard(ctx)
			case ev.Event == tts.EventFailed && !ev.Audible && !started:
				a.slot.silent(daemonapi.ReasonTTSUnavailable)
				if why != "" {
					if why == daemonapi.ReasonInterrupted {
						return a.notAsked(ctx, daemonapi.ReasonHolding), false
					}
					return a.notAsked(ctx, daemonapi.ReasonTimeout), false
				}
				return result(daemonapi.Unavailable, daemonapi.ReasonTTSUnavailable), false
			case ev.Event == tts.EventFailed:
				a.heard(ctx)
				return a.stopped(ctx, why, daemonapi.ReasonSpeakFailed), false
			case ev.Event == tts.EventDone:
				// The device has played the question out (measured by
				// the speaker from the device's own requests for data,
				// before it closes the device): listen from now on,
				// after the guard.
				a.heard(ctx)
				if why != "" {
					return a.stopped(ctx, why, why), false
				}
				return daemonapi.AskResult{}, true
			}
		case <-interrupted:
			interrupted = nil // a nil channel blocks from now on
			stopNow(daemonapi.ReasonInterrupted)
			settle = time.After(settleWait)
		case <-dctx.Done():
			dctx = context.Background()
			if ctx.Err() != nil {
				stopNow(daemonapi.ReasonCancelled)
			} else {
				stopNow(daemonapi.ReasonTimeout)
			}
			settle = time.After(settleWait)
		case <-settle:
			// The speaker never said how it ended: charged.
			a.heard(ctx)
			return a.stopped(ctx, why, daemonapi.ReasonSpeakFailed), false
		}
	}
}

// speakerReady waits (up to speakerWait) for a speaker that is starting
// or restarting; one left down (crash loop, exited, stopped) is not
// waited for.
func (d *Daemon) speakerReady(ctx context.Context) bool {
	up, down := d.speak.Up(), d.speak.Down()
	select {
	case <-up:
		return true
	default:
	}
	t := time.NewTimer(speakerWait)
	defer t.Stop()
	select {
	case <-up:
		return true
	case <-down:
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// An answer's detector use: a span needs answerMinSpeech of speech, ends
// after ask.answer_silence_ms without a voiced window (hysteresis: once
// speech started, a window stays voiced down to vad.threshold − 0.15, so a
// soft word end or a thinking pause shorter than that keeps the answer
// open), and keeps answerPad of audio on each side. answerSettle bounds
// the wait for the detector's last answers once the audio ended.
const (
	answerMinSpeech = 250 * time.Millisecond
	answerPad       = 300 * time.Millisecond
	answerSettle    = 5 * time.Second
)

// answerParams are the detector's parameters for an answer.
func answerParams(cfg config.Config) vadlink.Params {
	return vadlink.Params{Span: vadspan.Params{
		Threshold:  float32(cfg.VAD.Threshold),
		MinSpeech:  answerMinSpeech,
		MinSilence: time.Duration(cfg.Ask.AnswerSilenceMs) * time.Millisecond,
		SpeechPad:  answerPad,
	}}
}

// stopped is the result of a spoken question that ended before listening.
func (a *ask) stopped(ctx context.Context, why, fallback string) daemonapi.AskResult {
	if why == "" {
		why = fallback
	}
	if ctx.Err() != nil {
		why = daemonapi.ReasonCancelled
	}
	return result(daemonapi.NoAnswer, why)
}

// listen records the answer after the guard pause and decodes it.
func (a *ask) listen(ctx, dctx context.Context, run *askRun) daemonapi.AskResult {
	d, cfg := a.d, a.cfg
	d.live.SetAsk(daemonapi.StateListening)
	guard := time.NewTimer(time.Duration(cfg.Ask.GuardMs) * time.Millisecond)
	select {
	case <-guard.C:
	case <-run.stop:
		guard.Stop()
		return a.stopped(ctx, run.reason, run.reason)
	case <-dctx.Done():
		guard.Stop()
		return a.stopped(ctx, daemonapi.ReasonTimeout, daemonapi.ReasonTimeout)
	}

	maxAnswer := time.Duration(cfg.Ask.MaxAnswerS) * time.Second
	capN := pcm.Samples(min(maxAnswer, maxAnswerAudio))
	p := answerParams(cfg)
	u := d.beginDetect(p)
	if u == nil {
		return result(daemonapi.NoAnswer, daemonapi.ReasonCancelled) // the daemon is stopping
	}
	defer func() { u.release() }()

	l := d.mic.Listen(false) // only what is said from now on
	defer d.mic.Unlisten(l)
	d.log.Debug("listening for the answer", "guard_ms", cfg.Ask.GuardMs, "detector", u.engine)
	window := time.NewTimer(maxAnswer)
	defer window.Stop()
	// samples is the answer's audio; the detector's positions are its
	// indexes. The answer is samples[from:to]: from the first span's
	// start to its end (a pause of ask.answer_silence_ms), or to the end
	// of the audio when it ended first.
	var samples []int16
	from, to := int64(-1), int64(-1)
	reason := daemonapi.ReasonSilence
	heard := 0 // samples the microphone delivered
	audio := l.Audio()
	events := u.Events()
	var settle <-chan time.Time // after End: the detector's last answers
	end := func() {
		audio = nil
		if settle == nil {
			u.End()
			settle = time.After(answerSettle)
		}
	}
	// Every wait on the detector is bounded. One that answers nothing
	// for answerSettle while audio waits for it (a stopped child), or
	// does not answer the end within answerSettle, is given up, as one
	// that failed is: the Silero child is restarted (a silent one) and
	// the energy detector decides from the audio so far (fail open). If
	// the energy detector itself did not answer, all of the recording is
	// the answer and the decoder decides.
	lastPos, moved := int64(0), time.Now() // the detector's progress
	toEnergy := func() bool {
		u.release()
		if u = d.beginEnergy(p); u == nil {
			return false
		}
		from, lastPos, moved = -1, 0, time.Now()
		u.Feed(samples)
		events = u.Events()
		if audio == nil {
			settle = nil
			end()
		}
		return true
	}
	silent := func() (giveUp bool) {
		if u.own != nil { // the energy detector did not answer
			d.log.Warn("the energy detector did not answer during an answer: all of the answer is decoded")
			from = max(from, 0)
			return true
		}
		d.log.Warn("the voice detector did not answer during an answer: the energy detector takes over",
			"settle_ms", answerSettle.Milliseconds())
		d.restartSilent(u)
		return false
	}
collect:
	for {
		select {
		case s := <-audio:
			if s == nil { // the microphone's stream ended: what was said is all
				if heard == 0 {
					// It never delivered a sample: not silence, a
					// microphone that did not open (the sound server
					// is gone, the device is missing).
					reason = daemonapi.ReasonCaptureFailed
				}
				end()
				continue
			}
			heard += len(s)
			s = s[:min(len(s), capN-len(samples))]
			samples = append(samples, s...)
			u.Feed(s)
			if st := u.State(); st.Pos != lastPos || int64(len(samples))-st.Pos < vadWindow {
				lastPos, moved = st.Pos, time.Now() // it keeps up
			} else if time.Since(moved) >= answerSettle {
				if silent() {
					break collect
				}
				if !toEnergy() {
					return result(daemonapi.NoAnswer, daemonapi.ReasonCancelled)
				}
			}
			if len(samples) >= capN {
				end()
			}
		case e, ok := <-events:
			if !ok && u.State().Ended {
				break collect
			}
			if !ok { // it failed with its Failed event dropped
				e.Kind = vadlink.Failed
			}
			switch e.Kind {
			case vadlink.SpeechStart:
				if from < 0 {
					from = max(e.At, 0)
				}
			case vadlink.SpeechEnd:
				to = e.At
				break collect
			case vadlink.Failed:
				// The detector child is gone: the energy detector
				// goes on from the audio so far (fail open).
				d.log.Warn("voice detector failed during an answer: the energy detector takes over", "err", e.Err)
				if u.own != nil { // the energy detector ends only with the daemon
					return result(daemonapi.NoAnswer, daemonapi.ReasonCancelled)
				}
				if !toEnergy() {
					return result(daemonapi.NoAnswer, daemonapi.ReasonCancelled)
				}
			}
		case <-settle:
			// A detector that did not answer the end of the audio.
			if silent() {
				break collect
			}
			if !toEnergy() {
				return result(daemonapi.NoAnswer, daemonapi.ReasonCancelled)
			}
		case <-run.stop:
			return a.stopped(ctx, run.reason, run.reason)
		case <-window.C:
			if heard == 0 {
				reason = daemonapi.ReasonCaptureFailed // a whole answer window without a sample
			}
			end()
		case <-dctx.Done():
			if ctx.Err() != nil {
				return result(daemonapi.NoAnswer, daemonapi.ReasonCancelled)
			}
			reason = daemonapi.ReasonTimeout
			end()
		}
	}
	if from < 0 || from >= int64(len(samples)) {
		return result(daemonapi.NoAnswer, reason)
	}
	if to < 0 || to > int64(len(samples)) {
		to = int64(len(samples))
	}
	utt := samples[from:to]
	d.mic.Unlisten(l)

	text, err := a.decode(ctx, utt)
	if err != nil {
		if ctx.Err() != nil {
			return result(daemonapi.NoAnswer, daemonapi.ReasonCancelled)
		}
		d.log.Error("answer lost: the decoder failed")
		return result(daemonapi.NoAnswer, daemonapi.ReasonDecodeFail)
	}
	if text == "" {
		return result(daemonapi.NoAnswer, daemonapi.ReasonSilence)
	}
	return daemonapi.AskResult{Result: daemonapi.Answered, Answer: text}
}

// answerDecodeGrace is the least time an answer's decoding gets after the
// answer ended, past the caller's deadline if need be.
const answerDecodeGrace = 5 * time.Second

// decode decodes the answer. It waits no longer than the caller's
// deadline, or answerDecodeGrace after the answer ended if that is later
// (an answer that ran into the deadline still gets its chance), and never
// more than decodeTimeout: a stopped or overloaded decoder makes the call
// end no_answer in time. If the decoder dies meanwhile the answer is tried
// once more on the restarted decoder (the audio is still here), within the
// same deadline.
func (a *ask) decode(ctx context.Context, utt []int16) (string, error) {
	now := time.Now()
	until := now.Add(answerDecodeGrace)
	if a.deadline.After(until) {
		until = a.deadline
	}
	if limit := now.Add(decodeTimeout); until.After(limit) {
		until = limit
	}
	dctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	a.d.live.SetAsk(daemonapi.StateDecoding)
	r, err := a.d.decode.Decode(dctx, child.PrioAnswer, utt, nil)
	if errors.Is(err, child.ErrLost) {
		a.d.log.Warn("decoder lost during an answer: retrying once on the restarted decoder")
		wctx, wcancel := context.WithTimeout(dctx, decoderWait)
		err = a.d.decode.WaitUp(wctx)
		wcancel()
		if err == nil {
			r, err = a.d.decode.Decode(dctx, child.PrioAnswer, utt, nil)
		}
	}
	if err != nil {
		return "", err
	}
	return cleanAnswer(r.Text), nil
}

// cleanAnswer trims the answer. Answers are untrusted data for the host
// and are never scrubbed beyond whitespace (invariant 9).
func cleanAnswer(s string) string {
	return cleanText(s)
}
