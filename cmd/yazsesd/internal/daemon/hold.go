package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/yazses/yazses/cmd/yazsesd/internal/child"
	"github.com/yazses/yazses/cmd/yazsesd/internal/inject"
	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/cmd/yazsesd/internal/vadlink"
	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/untrusted"
	"github.com/yazses/yazses/lib/vadspan"
)

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

// holdRec is one open hold: the audio it collects.
type holdRec struct {
	l       *child.Listener
	started time.Time
	stop    chan struct{}
	done    chan struct{}
	samples []int16
	// max bounds samples: dictation.max_hold_s with the longest pre-roll
	// and tail, and a second to spare. The limit timer ends the hold
	// before, so this only guards against a hold that outlives it.
	max   int
	limit *time.Timer // ends the hold at dictation.max_hold_s
	// stopping: a stop is recording the tail; a new hold.start opens a
	// new hold. taken: a stop or cancel has ended it. Both under
	// stateT.mu.
	stopping, taken bool

	// det is the hold's use of the voice detector (detect.go): collect
	// feeds it every block it keeps (the pre-roll first), watch reads
	// its events until the channel closes, then closes watched.
	det      *detUse
	autoStop time.Duration // dictation.auto_stop_ms for a toggled hold; 0: none
	watched  chan struct{}
	micEnded chan struct{} // closed by collect when the capture stream ends (no more audio to wait for)
	said     bool          // a span was heard; set by watch, read after watched
	failed   bool          // the detector failed: decode anyway (fail open)
	// abandon is closed by heard when the detector did not answer within
	// holdSettle: watch returns at once, and silent is set (after
	// watched): the hold is decoded as if speech ran to its end.
	abandon chan struct{}
	silent  bool
	fed     atomic.Int64
	smu     sync.Mutex // samples, while collect appends (eager pieces read them); tail
	// tail is the energy detector that decides a tail the hold's own
	// detector can no longer decide (it failed); collect feeds it too.
	tail  *detUse
	eager *eagerRun // pieces (dictation.eager_pause_ms) and speculation (Silero); nil: neither

	// The last silence of tailQuiet the detector reported (watch sets
	// it): where it was seen, and a channel closed at the next one.
	qmu     sync.Mutex
	quietAt int64
	quietCh chan struct{}
}

func (h *holdRec) collect() {
	defer close(h.done)
	add := func(s []int16) {
		if s == nil { // the capture child's stream ended
			select {
			case <-h.micEnded:
			default:
				close(h.micEnded)
			}
			return
		}
		s = s[:min(len(s), max(0, h.max-len(h.samples)))]
		h.smu.Lock()
		h.samples = append(h.samples, s...)
		if h.tail != nil && len(s) > 0 {
			h.tail.Feed(s) // never blocks
		}
		h.smu.Unlock()
		h.fed.Add(int64(len(s)))
		if len(s) > 0 {
			h.det.Feed(s) // never blocks; a detector that fell behind fails the use
		}
	}
	for {
		select {
		case s := <-h.l.Audio():
			add(s)
		case <-h.stop:
			for { // what is already queued belongs to the hold too
				select {
				case s := <-h.l.Audio():
					add(s)
				default:
					return
				}
			}
		}
	}
}

// watch reads the hold's detector events until the use ends; autoStop is
// called (once) at the hold's dictation.auto_stop_ms of silence.
func (h *holdRec) watch(autoStop func()) {
	defer close(h.watched)
	if h.eager != nil {
		defer close(h.eager.ends)
	}
	events := h.det.Events()
	for {
		var e vadlink.Event
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			e = ev
		case <-h.abandon: // the detector did not answer in time (heard)
			return
		}
		switch e.Kind {
		case vadlink.SpeechEnd:
			if h.eager != nil && h.eager.pieces {
				h.eager.pieceAt(e.At, e.Since)
			}
		case vadlink.SpeechStart:
			h.said = true
		case vadlink.Ended:
			h.said = h.said || e.Said
			if h.eager != nil {
				h.eager.endedAt(e.Since)
			}
		case vadlink.Failed:
			h.failed = true
		case vadlink.Silence:
			if h.autoStop > 0 && e.For == h.autoStop && autoStop != nil {
				autoStop()
				autoStop = nil
			}
			if e.For == tailQuiet {
				if h.eager != nil {
					h.eager.quietAt(e.At, e.Since)
				}
				h.qmu.Lock()
				h.quietAt = e.At
				close(h.quietCh)
				h.quietCh = make(chan struct{})
				h.qmu.Unlock()
			}
		}
	}
}

// tailQuiet is the silence after which a tail ends: released after this
// much silence, a hold closes at once; released during speech, it records
// until the speaker has been quiet this long, or dictation.tail_ms.
const tailQuiet = 150 * time.Millisecond

// vadWindow is the detector's window: positions are answered in whole
// windows.
const vadWindow = 512

// recordTail records the tail of hold h released now: nothing when the
// detector already heard tailQuiet of silence at the release, else until
// it hears that much silence after it, the capture stream ends (a file
// ran out, the device went away: no more audio will come), or for at most
// tail (ctx ending cuts it short). A detector that does not answer within
// the tail leaves it at its maximum (the speaker is taken to speak to the
// end); one that has failed hands the tail to the energy detector. The
// debug log says which ("quiet", "silence", "ended", "max") and how much
// audio it added.
func (d *Daemon) recordTail(ctx context.Context, h *holdRec, tail time.Duration) {
	start := time.Now()
	released := h.fed.Load()
	p := released - released%vadWindow // the whole windows the detector can answer
	tctx, cancel := context.WithTimeout(ctx, tail)
	defer cancel()
	why := "max"
	detector := h.det.engine
	st, err := h.det.Wait(tctx, p)
	switch {
	case err == nil && st.Silent() >= tailQuiet:
		why = "quiet" // the speaker had stopped: no tail
	case err != nil && tctx.Err() == nil: // the detector failed
		why, detector = d.energyTail(tctx, h, released), "energy"
	case err != nil: // no answer within the tail: it ran its maximum
	default:
	wait:
		for {
			h.qmu.Lock()
			at, ch := h.quietAt, h.quietCh
			h.qmu.Unlock()
			if at > p {
				why = "silence" // the speaker stopped during the tail
				break
			}
			select {
			case <-ch:
			case <-h.micEnded:
				why = "ended" // nothing more to record
				break wait
			case <-h.watched: // the detector failed during the tail
				why, detector = d.energyTail(tctx, h, released), "energy"
				break wait
			case <-tctx.Done():
				break wait
			}
		}
	}
	d.log.Debug("hold tail", "why", why, "tail_ms", time.Since(start).Milliseconds(),
		"tail_audio_ms", pcm.Duration(int(h.fed.Load()-released)).Milliseconds(), "max_ms", tail.Milliseconds(), "detector", detector)
}

// energyTail decides the tail of hold h, released at sample released,
// with the energy detector, its own detector having failed: it hears the
// last second before the release and then the tail as collect keeps it,
// until tailQuiet of silence, the end of the capture stream, or ctx.
func (d *Daemon) energyTail(ctx context.Context, h *holdRec, released int64) string {
	p := holdParams(d.config())
	p.Silences = []time.Duration{tailQuiet}
	u := d.beginEnergy(p)
	if u == nil { // the daemon stops
		return "max"
	}
	defer u.release()
	h.smu.Lock()
	base := max(0, released-int64(pcm.Samples(time.Second)))
	u.Feed(h.samples[base:]) // never blocks
	h.tail = u
	h.smu.Unlock()
	defer func() {
		h.smu.Lock()
		h.tail = nil
		h.smu.Unlock()
	}()
	at := released - base
	at -= at % vadWindow
	if st, err := u.Wait(ctx, at); err == nil && st.Silent() >= tailQuiet {
		return "quiet"
	}
	events := u.Events()
	for {
		select {
		case e, ok := <-events:
			if !ok { // the energy detector cannot fail but with the daemon
				events = nil
			} else if e.Kind == vadlink.Silence && e.At > at {
				return "silence"
			}
		case <-h.micEnded:
			return "ended"
		case <-ctx.Done():
			return "max"
		}
	}
}

// heard ends the hold's detector use and reports whether anything was
// said: a span heard, or the detector failed or did not answer within
// holdSettle (then the decoder decides, as before the detector). A
// detector that did not answer is given up (watch ends: the eager
// decoding has no more pieces, and the whole hold is decoded as if speech
// ran to its end) and restarted.
func (d *Daemon) heard(h *holdRec) bool {
	defer h.det.release()
	h.det.End()
	t := time.NewTimer(holdSettle)
	defer t.Stop()
	select {
	case <-h.watched:
	case <-t.C:
		close(h.abandon)
		<-h.watched // watch returns at once
		h.silent = true
		d.log.Warn("the voice detector did not answer in time: all of the hold is decoded", "detector", h.det.engine,
			"settle_ms", holdSettle.Milliseconds())
		d.restartSilent(h.det)
		return true
	}
	d.log.Debug("hold: voice detector", "detector", h.det.engine, "said", h.said, "failed", h.failed)
	return h.said || h.failed
}

// holdSettle bounds the wait for the detector's last answers at the end of
// a hold (it answers a second of audio in about 3 ms).
const holdSettle = 5 * time.Second

// Bounds of a hold's audio besides dictation.max_hold_s (config ranges).
const (
	maxPreRoll = 2 * time.Second
	maxTail    = 2 * time.Second
)

// holdParams are the detector's parameters for a hold: vad.threshold,
// whisper.cpp's span defaults otherwise.
func holdParams(cfg config.Config) vadlink.Params {
	p := vadspan.DefaultParams()
	p.Threshold = float32(cfg.VAD.Threshold)
	return vadlink.Params{Span: p, Silences: []time.Duration{tailQuiet}}
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
		if isDown(d.decode.Status().State) {
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
	maxHold := time.Duration(d.config().Dictation.MaxHoldS) * time.Second
	if maxHold <= 0 { // a configuration not made by config.Load
		maxHold = time.Duration(config.Default().Dictation.MaxHoldS) * time.Second
	}
	h := &holdRec{started: time.Now(), stop: make(chan struct{}), done: make(chan struct{}),
		max: pcm.Samples(maxPreRoll + maxHold + maxTail + time.Second), watched: make(chan struct{}), quietCh: make(chan struct{}), micEnded: make(chan struct{}),
		abandon: make(chan struct{})}
	if ms := d.config().Dictation.AutoStopMs; toggled && ms > 0 {
		h.autoStop = time.Duration(ms) * time.Millisecond
	}
	p := holdParams(d.config())
	if h.autoStop > 0 {
		p.Silences = append(p.Silences, h.autoStop)
	}
	ms := d.config().Dictation.EagerPauseMs
	if ms > 0 {
		p.Span.MinSilence = time.Duration(ms) * time.Millisecond
	}
	if h.det = d.beginDetect(p); h.det == nil {
		return daemonapi.HoldResult{}, errShuttingDown
	}
	// The speculation trusts the detector's word that nothing was said
	// after a silence: only the trained one's. The energy detector takes
	// the soft end of a word ("Americans"' s) for silence, and what the
	// key's release would have kept would be cut.
	if speculate := h.det.engine == "silero"; ms > 0 || speculate {
		h.eager = d.startEager(h, d.holdPrompt(), ms > 0, speculate)
	}
	// watch ends when the use does (heard, or release); an auto stop
	// runs under spawn, as a release by the hotkey does.
	go h.watch(func() { d.spawn(func() { d.holdAutoStop(h) }) })
	h.l = d.mic.Listen(d.mic.Always())
	go h.collect() // ends when takeHold closes h.stop
	h.limit = time.AfterFunc(maxHold, func() { d.spawn(func() { d.holdLimit(h) }) })
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

// takeHold ends the open hold: after the tail (cut short when ctx ends)
// it stops collecting and returns the audio. nil when no hold was open, or
// (for a stop) when the open hold is already in another stop's tail, or
// when only is not nil and the open hold is another. A cancel (stop
// false) also takes a hold in its tail.
func (d *Daemon) takeHold(ctx context.Context, tail time.Duration, stop bool, only *holdRec) *holdRec {
	d.state.mu.Lock()
	h := d.state.hold
	if h == nil || (only != nil && h != only) || (stop && h.stopping) {
		d.state.mu.Unlock()
		return nil
	}
	h.stopping = h.stopping || stop
	d.state.mu.Unlock()
	if tail > 0 {
		d.recordTail(ctx, h, tail)
	}
	d.state.mu.Lock()
	if h.taken { // a cancel took it meanwhile
		d.state.mu.Unlock()
		return nil
	}
	h.taken = true
	h.limit.Stop()
	if d.state.hold == h { // else a new hold began during the tail
		d.state.hold = nil
		d.state.broadcastLocked()
		if stop {
			d.live.SetHold(daemonapi.StateDecoding)
		} else {
			d.live.EndHold("cancelled")
		}
	}
	d.state.mu.Unlock()
	close(h.stop)
	<-h.done
	d.mic.Unlisten(h.l)
	return h
}

// holdStop ends the hold, decodes it and types the text. The tail is
// recorded in full unless the daemon stops: a caller that hangs up after
// hold.stop still gets its words typed.
func (d *Daemon) holdStop(ctx context.Context) (daemonapi.HoldResult, error) {
	cfg := d.config()
	h := d.takeHold(d.life, time.Duration(cfg.Dictation.TailMs)*time.Millisecond, true, nil)
	if h == nil {
		return daemonapi.HoldResult{Hold: daemonapi.HoldIdle}, nil
	}
	return d.dictate(ctx, cfg, h), nil
}

// holdLimit ends hold h at dictation.max_hold_s, as if it were released:
// what was said is decoded and typed. A hold already stopped, or
// cancelled, is left alone.
func (d *Daemon) holdLimit(h *holdRec) {
	cfg := d.config()
	if d.takeHold(d.life, time.Duration(cfg.Dictation.TailMs)*time.Millisecond, true, h) == nil {
		return
	}
	d.log.Info("the hold reached dictation.max_hold_s and ended as if released", "max_hold_s", cfg.Dictation.MaxHoldS)
	d.auditf(audit.Event{Kind: "hold.max_reached", Duration: time.Since(h.started)})
	d.dictate(context.Background(), cfg, h)
}

// holdAutoStop ends toggled hold h after dictation.auto_stop_ms of
// silence, as if toggled off: what was said is decoded and typed. A hold
// already stopped, or cancelled, is left alone.
func (d *Daemon) holdAutoStop(h *holdRec) {
	cfg := d.config()
	if d.takeHold(d.life, time.Duration(cfg.Dictation.TailMs)*time.Millisecond, true, h) == nil {
		return
	}
	d.log.Info("the toggled hold ended by itself after dictation.auto_stop_ms of silence", "auto_stop_ms", h.autoStop.Milliseconds())
	d.auditf(audit.Event{Kind: "hold.auto_stopped", Duration: time.Since(h.started)})
	d.dictate(context.Background(), cfg, h)
}

// holdCancel ends the hold and drops its audio.
func (d *Daemon) holdCancel(ctx context.Context) (daemonapi.HoldResult, error) {
	h := d.takeHold(ctx, 0, false, nil)
	if h == nil {
		return daemonapi.HoldResult{Hold: daemonapi.HoldIdle}, nil
	}
	h.eager.drop()
	h.det.release()
	d.auditf(audit.Event{Kind: "dictation.cancelled", Duration: time.Since(h.started)})
	return daemonapi.HoldResult{Hold: daemonapi.HoldIdle, Outcome: "cancelled"}, nil
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

// dictate turns a finished hold into typed text.
func (d *Daemon) dictate(ctx context.Context, cfg config.Config, h *holdRec) (res daemonapi.HoldResult) {
	res = daemonapi.HoldResult{Hold: daemonapi.HoldIdle}
	defer func() { d.live.EndHold(res.Outcome) }()
	held := time.Since(h.started)
	audioDur := pcm.Duration(len(h.samples))
	ev := audit.Event{Duration: audioDur}
	switch {
	case held < time.Duration(cfg.Dictation.MinUtteranceMs)*time.Millisecond:
		h.eager.drop()
		h.det.release()
		res.Outcome = "too_short"
	case !d.heard(h):
		h.eager.drop()
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
	case h.silent:
		res.Cause, res.Reason = "vad_timeout", "the voice detector did not answer during this hold: all of its audio was decoded, and the detector is restarted"
	case h.failed:
		res.Cause, res.Reason = "vad_failed", "the voice detector failed during this hold: all of its audio was decoded"
	}
	var (
		r          frame.Result
		err        error
		hung, down bool
		bound      = holdDecodeBound(audioDur)
		eagerText  string
		eagerCut   int64
		eagerOK    bool
	)
	if h.eager != nil {
		eagerText, eagerCut, eagerOK = h.eager.finish(d.log)
	}
	audio, said := h.samples, ""
	switch {
	case eagerOK && res.Cause == "":
		r.Text = eagerText // decoded in pieces during the hold
	case eagerOK && eagerCut >= int64(len(h.samples)):
		r.Text = eagerText // the pieces hold all of it
	case eagerOK: // pieces until the detector failed: the rest, once
		audio, said = h.samples[eagerCut:], h.eager.said()
		d.log.Debug("hold: the audio after the last piece is decoded", "audio_ms", pcm.Duration(len(audio)).Milliseconds())
		fallthrough
	default:
		dctx, cancel := d.holdDecodeCtx(ctx, bound)
		r, err = d.decode.DecodeAfter(dctx, child.PrioHold, audio, d.holdPrompt(), said)
		hung = errors.Is(context.Cause(dctx), errHoldDecodeBound)
		down = dctx.Err() != nil
		cancel()
		if t := strings.TrimSpace(r.Text); err == nil && eagerText != "" && len(audio) < len(h.samples) {
			r.Text = strings.TrimSpace(eagerText + " " + t)
		}
	}
	if err != nil {
		res.Outcome = "failed"
		ev.Kind, ev.Reason = "dictation.lost", "decoder_failed"
		switch {
		case hung:
			ev.Reason = "decoder_timeout"
			res.Cause = ev.Reason
			secs := int(bound / time.Second)
			if st := d.decode.Status().State; st != supervise.StateRunning {
				// Starting or restarting: its supervisor bounds that.
				res.Reason = fmt.Sprintf("decode: the decoder was not up within %d s (%s); this utterance is lost: say it again", secs, st)
				break
			}
			// Up, and silent (stopped, or looping): the restart does
			// what a crash would have done, and whatever waits behind
			// this hold is served by the new decoder.
			d.decode.Restart()
			res.Reason = fmt.Sprintf("decode: the decoder did not answer within %d s; it is restarted, and this utterance is lost: say it again", secs)
		case !errors.Is(err, child.ErrLost) && !down:
			ev.Reason = "decode_error"
			fallthrough
		default:
			res.Cause, res.Reason = d.decodeFailure(ev.Reason)
		}
		d.log.Error("dictation lost: the decoder failed", "reason", ev.Reason, "cause", res.Cause,
			"audio_ms", audioDur.Milliseconds(), "bound_ms", bound.Milliseconds())
		d.auditf(ev)
		d.notify("lost")
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
		backend, err := inj.Type(context.WithoutCancel(ctx), text)
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

// holdPrompt is dictation.prompt as the daemon started with it
// (restart-only), or nil.
func (d *Daemon) holdPrompt() *string {
	if p := d.opt.Config.Dictation.Prompt; p != "" {
		return &p
	}
	return nil
}

// A hold's decoding is bounded: a decoder that answers nothing within
// holdDecodeBound of the stop (stopped by SIGSTOP, say, or looping) is
// taken for hung. The hold then ends failed (cause decoder_timeout, its
// utterance lost, and the reason says so) and the decoder is restarted,
// as the supervisor restarts one that dies; the holds, answers and file
// pieces behind it are served by the new one. The bound covers the wait
// for the decoder's turn too: a minute, plus four seconds for every
// second of audio (a large model on a slow CPU decodes at about twice
// real time, and a hold may wait behind an answer's decoding).
const (
	holdDecodeFloor    = time.Minute
	holdDecodePerAudio = 4
)

// errHoldDecodeBound is the cause of a hold's decode context that ended
// at its bound.
var errHoldDecodeBound = errors.New("the decoder did not answer within the hold's bound")

// holdDecodeBound is the longest a hold of audio takes to decode.
func holdDecodeBound(audio time.Duration) time.Duration {
	return holdDecodeFloor + holdDecodePerAudio*audio
}

// holdDecodeCtx is the context of a hold's decoding. It is not the
// caller's (a client that hangs up after hold.stop still gets its text
// typed), but it ends as decodeCtx's does, and at bound with cause
// errHoldDecodeBound.
func (d *Daemon) holdDecodeCtx(ctx context.Context, bound time.Duration) (context.Context, context.CancelFunc) {
	dctx, cancel := d.decodeCtx(context.WithoutCancel(ctx))
	tctx, tcancel := context.WithTimeoutCause(dctx, bound, errHoldDecodeBound)
	return tctx, func() { tcancel(); cancel() }
}

// decodeCtx is parent, ended also when the daemon stops or when the
// decoder child is down for good (exit 125, a crash loop, or exited 0 and
// not restarted): a hold or a transcribe then fails at once with the
// decoder's cause instead of waiting for a decoder that will not come up,
// holding the decoder's turn meanwhile.
func (d *Daemon) decodeCtx(parent context.Context) (context.Context, context.CancelFunc) {
	dctx, cancel := context.WithCancel(parent)
	go func() { // ends with dctx, which the caller cancels
		for {
			d.state.mu.Lock()
			closing, changed := d.state.closing, d.state.changed
			d.state.mu.Unlock()
			if closing {
				cancel()
				return
			}
			select {
			case <-dctx.Done():
				return
			case <-d.decode.Down():
				cancel()
				return
			case <-changed:
			}
		}
	}()
	return dctx, cancel
}

// decodeFailure says why a hold's decoding failed: the decoder's own cause
// when it is down for one, else the kind of failure (decoder_failed: it
// ended before answering; decode_error: it answered with an error).
func (d *Daemon) decodeFailure(kind string) (cause, reason string) {
	st := d.decode.Status()
	if isDown(st.State) {
		cause = st.Cause
		if cause == "" {
			cause = "decoder_down"
		}
		return cause, "decode: " + reasonOf(st)
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
