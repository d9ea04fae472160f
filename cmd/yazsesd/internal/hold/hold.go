// Package hold is one push-to-talk hold, from the key going down to the
// text it decodes: one goroutine (Run) that owns the hold's state in its
// locals and selects over the audio, the voice detector's events, the
// decodes it started (eager pieces, the speculation, the whole hold), a
// release or a cancel (Control), the hold's limit and the auto stop of a
// toggled hold. It ends with one Result, and returns only once every
// goroutine it started has returned.
//
// The walk of a hold:
//
//   - Recording. Each audio block is kept (up to the hold's bound) and fed
//     to the detector. The detector's events say whether anything was said
//     (SpeechStart, Ended), where a piece ends (SpeechEnd: eager decoding,
//     eager.go), where the speaker has been quiet for tailQuiet (Silence:
//     the tail and the speculation) and, for a toggled hold, when
//     Params.AutoStop of silence has passed (the hold stops by itself). At
//     Params.MaxHold the hold ends as if released. A capture child that
//     dies (Audio.Failed) or sends no block for CaptureStall (stalled: it
//     is restarted) does not end the hold: what was heard before it and
//     after its restart is kept, and the Result says how much audio was
//     lost (CaptureFailed, CaptureLost).
//   - The tail (Ending.Tail, after a release, the limit or the auto stop):
//     recording goes on until the detector hears tailQuiet of silence
//     after the release, the capture stream ends, or the tail's maximum; a
//     detector that has already heard that silence at the release ends it
//     at once. A detector that fails in the tail hands it to the energy
//     detector (Deps.Energy), which hears the last second before the
//     release and the tail after it (fail open).
//   - Collected: the microphone is let go (Owner.Collected). A hold held
//     for less than Ending.MinUtterance ends TooShort.
//   - Settling: the detector's use ends (End) and its last events are read,
//     for at most settleWait; a detector that does not answer by then is
//     given up (Detector.Restart) and the whole hold counts as speech. A
//     hold in which nothing was said ends Empty, without a decode.
//   - Decoding: the eager pieces' text when they hold all of it, else one
//     decode of the whole (or of what follows the pieces). From the end of
//     the recording the hold has DecodeBound of its audio to settle and
//     decode, whatever it waits for (a speculation, a piece, the whole):
//     then it fails hung. Its failure is the Result's Err.
//
// A cancel (Control.Cancel) is taken while the hold records or is in its
// tail; afterwards the hold goes on to its text. The end of Run's context
// (the daemon stops) cancels a recording hold and cuts a tail short; a
// hold past its recording goes on to its text: its decodes do not end
// with that context (the Decoder bounds them while the daemon stops).
//
// The children stay processes behind the small interfaces below (Audio,
// Detector, Decoder), which the daemon implements over its child ends, so
// that the hold's policy can be driven by fakes.
package hold

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/vadlink"
	"github.com/yazses/yazses/lib/pcm"
)

// Audio is the microphone as a hold hears it.
type Audio interface {
	// Blocks delivers the audio as it arrives; a nil block means that the
	// capture stream ended (no more audio will come).
	Blocks() <-chan []int16
	// Failed delivers a value each time the capture child fails while
	// the hold listens: it died, or ended with an error (not a replayed
	// file's end, exit 0). Its supervisor restarts it.
	Failed() <-chan struct{}
	// Restart restarts the capture child, which stalled (CaptureStall).
	Restart()
	// Stop stops listening. The hold calls it once.
	Stop()
}

// Detector is the hold's use of the voice detector.
type Detector interface {
	// Engine names it ("silero" or "energy"), for the debug log.
	Engine() string
	// Feed sends audio; it never blocks (a detector that fell behind
	// fails the use).
	Feed(samples []int16)
	// Events carries the use's events; it closes after Ended or Failed.
	Events() <-chan vadlink.Event
	// Wait returns the detector's state once the windows up to pos are
	// answered, the use ended, ctx ended (ctx's error) or the detector
	// failed (its error).
	Wait(ctx context.Context, pos int64) (vadlink.State, error)
	// End ends the use: the last windows are answered and Ended follows.
	End()
	// Release closes the use; its events are dropped from then on.
	Release()
	// Restart restarts the detector behind the use, which did not answer
	// in time (stopped, or looping).
	Restart()
}

// Decoder decodes audio at the hold's priority.
type Decoder interface {
	// Decode decodes samples, which follow said (the text of the pieces so
	// far; "" for none), and returns the text. samples are the hold's to
	// give: Decode may keep them until it returns.
	Decode(ctx context.Context, samples []int16, said string) (string, error)
}

// Owner is told, from the hold's goroutine, what the hold does. Each call
// returns at once.
type Owner interface {
	// Stopping: the hold ends by itself (AtLimit, AutoStopped); its tail
	// begins.
	Stopping(why Why)
	// Collected: the hold stopped listening; why it ended. Its decoding
	// follows unless why is Cancelled or Shutdown.
	Collected(why Why)
	// Preview is the text decoded so far (eager pieces).
	Preview(text string)
	// Piece is a piece decided while the key is held (Params.Live): its
	// text, never empty, in order. A piece handed out is final: the
	// Result's Pieces begin with it, and no later decode covers its
	// audio again.
	Piece(text string)
	// Tentative is a guess at the piece still being spoken
	// (Params.Tentative): its text, never empty, to show until the next
	// Tentative or Piece replaces it. Nothing of it is final.
	Tentative(text string)
}

// Deps are what a hold works with.
type Deps struct {
	Audio    Audio
	Detector Detector
	// Energy begins a use of the energy detector, with tailQuiet among its
	// silences, for a tail that Detector can no longer decide; nil when
	// there is none (the daemon stops).
	Energy  func() Detector
	Decoder Decoder
	Owner   Owner
	Log     *slog.Logger
}

// Ending are the settings a hold ends with, read when it ends.
type Ending struct {
	Tail         time.Duration // dictation.tail_ms
	MinUtterance time.Duration // dictation.min_utterance_ms
}

// Params are one hold's settings.
type Params struct {
	// MaxHold ends the hold as if released (dictation.max_hold_s).
	MaxHold time.Duration
	// AutoStop ends a toggled hold after this much silence
	// (dictation.auto_stop_ms); 0: never. Params.AutoStop must be among
	// the detector's silences.
	AutoStop time.Duration
	// Pieces: decode in pieces at each span's end (dictation.eager_pause_ms).
	Pieces bool
	// Speculate: decode at the first tailQuiet of silence (the trained
	// detector only: the energy one takes a word's soft end for silence).
	Speculate bool
	// Live: each piece decided while the key is held goes to Owner.Piece
	// at once (dictation.live; with Pieces). A piece that fails then does
	// not make the hold decode its whole audio again: the audio after the
	// last piece decided is decoded once at the end, as when the detector
	// fails.
	Live bool
	// Tentative: while the key is held and a piece is being spoken, its
	// audio so far is decoded at most once per TentativeEvery of audio,
	// when no other decode of the hold runs, and the text goes to
	// Owner.Tentative (with Live: the typing route shows it as a
	// preedit). A piece, a speculation or the release abandons it.
	Tentative bool
	// Ending returns the settings in force when the hold ends.
	Ending func() Ending
}

// Why a hold ended.
type Why int

// Why a hold ended.
const (
	Released    Why = iota + 1 // Control.Release
	AtLimit                    // Params.MaxHold
	AutoStopped                // Params.AutoStop of silence in a toggled hold
	Cancelled                  // Control.Cancel
	Shutdown                   // Run's context ended while it recorded
)

// Outcome is what a hold came to.
type Outcome string

// Outcomes.
const (
	Decoded   Outcome = "decoded"   // Text is what was said (maybe empty)
	TooShort  Outcome = "too_short" // held for less than Ending.MinUtterance
	Empty     Outcome = "empty"     // the detector heard nothing: not decoded
	Failed    Outcome = "failed"    // the decoding failed: Err
	Dropped   Outcome = "cancelled" // Why is Cancelled or Shutdown
	undecided Outcome = ""
)

// Result is how a hold ended.
type Result struct {
	Why     Why
	Outcome Outcome
	Text    string // Decoded: the text, the pieces joined with a space
	// Live: the pieces handed to Owner.Piece, in order, and the text
	// decided after them (Decoded); Text is their join with one space.
	Pieces []string
	Rest   string
	Audio  time.Duration // the audio the hold kept
	// The detector failed (DetectorFailed) or did not answer in time
	// (DetectorSilent) during the hold: all of its audio was decoded.
	DetectorFailed, DetectorSilent bool
	// Failed: why the decoding failed; Hung when it did not answer within
	// Bound (a context ended with ErrDecodeBound).
	Err   error
	Hung  bool
	Bound time.Duration
	// CaptureFailed: the capture child died or stalled during the
	// recording; CaptureLost is how much audio that cost (the time
	// without audio). What was heard before and after was kept.
	CaptureFailed bool
	CaptureLost   time.Duration
}

// Control is the way into a running hold. Make it with NewControl; its
// methods may be called from any goroutine, before, during and after Run.
type Control struct {
	release chan chan bool
	cancel  chan chan bool
	done    chan struct{}
}

// NewControl returns a Control for one Run.
func NewControl() *Control {
	return &Control{release: make(chan chan bool), cancel: make(chan chan bool), done: make(chan struct{})}
}

// Release ends the hold as the key's release does: its tail, then its
// text. false when the hold was already ending (a release, its limit, the
// auto stop, a cancel) or had ended.
func (c *Control) Release() bool { return c.ask(c.release) }

// Cancel drops the hold: its audio, its decodes. true once it is dropped;
// false when it was past its tail (its text comes) or had ended.
func (c *Control) Cancel() bool { return c.ask(c.cancel) }

// Done is closed when Run has returned.
func (c *Control) Done() <-chan struct{} { return c.done }

func (c *Control) ask(ch chan chan bool) bool {
	reply := make(chan bool, 1)
	select {
	case ch <- reply:
		return <-reply // the hold answers before it selects again
	case <-c.done:
		return false
	}
}

// CaptureStall is how long a hold waits for the microphone's next block
// while it records (or records its tail) before it takes the capture
// child for stalled (stopped by SIGSTOP, or a device that delivers
// nothing) and restarts it. The capture owes 16,000 samples a second and
// hands them out in blocks of at most 100 ms (a replayed file's are
// 40 ms, the daemon reads up to 250 ms at once): a second without one is
// a second of audio missing, ten blocks or more, never the pace of a
// working microphone.
const CaptureStall = time.Second

// tailQuiet is the silence after which a tail ends: released after this
// much silence, a hold closes at once; released during speech, it records
// until the speaker has been quiet this long, or Ending.Tail. The detector
// must report it (Silence events).
const tailQuiet = 150 * time.Millisecond

// TailQuiet is tailQuiet, for the detector's parameters.
const TailQuiet = tailQuiet

// vadWindow is the detector's window: positions are answered in whole
// windows.
const vadWindow = 512

// settleWait bounds the wait for the detector's last answers at the end of
// a hold (it answers a second of audio in about 3 ms).
const settleWait = 5 * time.Second

// Bounds of a hold's audio besides Params.MaxHold (config ranges).
const (
	maxPreRoll = 2 * time.Second
	maxTail    = 2 * time.Second
)

// A hold's decoding is bounded: a decoder that answers nothing within
// DecodeBound (stopped by SIGSTOP, say, or looping) is taken for hung, and
// the context of that decode ends with cause ErrDecodeBound. The bound
// runs from the end of the hold's recording (its release and tail) and
// covers everything after: the detector's last answers, a speculation or
// piece the hold waits for, the wait for the decoder's turn: a minute,
// plus four seconds for every second of audio (a large model on a slow
// CPU decodes at about twice real time, and a hold may wait behind an
// answer's decoding). 2.4 s of audio: 69.6 s. Each eager piece and
// speculation has the bound of its own audio from its start besides.
const (
	decodeFloor    = time.Minute
	decodePerAudio = 4
)

// ErrDecodeBound is the cause of a decode context that ended at its bound.
var ErrDecodeBound = errors.New("the decoder did not answer within the hold's bound")

// DecodeBound is the longest a hold of audio takes to decode.
func DecodeBound(audio time.Duration) time.Duration {
	return decodeFloor + decodePerAudio*audio
}

// phase is where a hold is in its walk.
type phase int

const (
	recording phase = iota
	inTail
	settling // collected: the detector's last answers, the eager pieces
	decoding
)

// hold is the state of one Run, touched by its goroutine alone.
type hold struct {
	deps  Deps
	p     Params
	ctx   context.Context
	log   *slog.Logger
	phase phase
	why   Why
	end   Ending

	audio   <-chan []int16
	events  <-chan vadlink.Event // nil once closed (or given up)
	samples []int16
	max     int   // bound of samples: MaxHold, the longest pre-roll and tail, and a second
	fed     int64 // samples fed to the detector
	micEnd  bool  // the capture stream ended

	said, failed, silent bool
	quietAt              int64 // where the detector last heard tailQuiet of silence
	released             bool  // Detector.Release was called

	tail   tail
	eager  eager
	settle *time.Timer // settling: the detector's last answers

	// The capture stream: when its last block came, the stall timer
	// (armed by each block while the hold records or records its tail),
	// whether the child failed, since when the stream is down (zero while
	// it is up) and the audio lost so far.
	failedCh  <-chan struct{}
	lastBlock time.Time
	stall     *time.Timer
	stallC    <-chan time.Time
	capFailed bool
	downSince time.Time
	capLost   time.Duration

	// The decoding's bound (DecodeBound of the audio), from the end of
	// the recording: the hold fails hung at deadline, wherever it waits.
	bound    time.Duration
	deadline time.Time
	dlTimer  *time.Timer

	// Helpers: every goroutine the hold starts sends one message on
	// msgs and is counted in running until it has.
	msgs    chan any
	running int
	whole   *job // decoding: the decode of the whole (or the rest)
}

// Run runs one hold until it ends, and returns how. Deps.Detector's use
// must have begun and Deps.Audio must listen; the hold stops listening
// and releases the use. Run returns once every goroutine it started has
// returned.
func Run(ctx context.Context, deps Deps, p Params, ctl *Control) Result {
	defer close(ctl.done)
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if p.Ending == nil {
		p.Ending = func() Ending { return Ending{} }
	}
	h := &hold{deps: deps, p: p, ctx: ctx, log: deps.Log,
		audio: deps.Audio.Blocks(), events: deps.Detector.Events(), failedCh: deps.Audio.Failed(),
		lastBlock: time.Now(),
		max:       pcm.Samples(maxPreRoll + p.MaxHold + maxTail + time.Second),
		msgs:      make(chan any)}
	h.eager.init(p)
	r := h.run(ctl)
	h.drain()
	r.Audio = pcm.Duration(len(h.samples))
	r.CaptureFailed, r.CaptureLost = h.capFailed, h.capLost
	return r
}

func (h *hold) run(ctl *Control) Result {
	started := time.Now()
	limit := time.NewTimer(h.p.MaxHold)
	defer limit.Stop()
	ctxDone := h.ctx.Done()
	for {
		var settled, deadline <-chan time.Time
		if h.settle != nil {
			settled = h.settle.C
		}
		if h.dlTimer != nil {
			deadline = h.dlTimer.C
		}
		select {
		case s := <-h.audio:
			h.add(s)
		case e, ok := <-h.events:
			h.event(e, ok)
		case e, ok := <-h.tail.events():
			h.tail.energyEvent(h, e, ok)
		case m := <-h.msgs:
			h.running--
			h.message(m)
		case reply := <-ctl.release:
			h.onRelease(reply)
		case reply := <-ctl.cancel:
			if h.onCancel(reply) {
				return Result{Why: Cancelled, Outcome: Dropped}
			}
		case <-limit.C:
			if h.phase == recording {
				h.deps.Owner.Stopping(AtLimit)
				h.stop(AtLimit)
			}
		case <-h.tail.timer():
			h.tailEnd("max")
		case <-ctxDone:
			ctxDone = nil
			if h.onShutdown() {
				return Result{Why: Shutdown, Outcome: Dropped}
			}
		case <-settled:
			h.giveUpDetector()
		case <-h.failedCh:
			h.captureDown("died")
		case <-h.stallC:
			h.stalled()
		case <-deadline:
			return h.timedOut()
		}
		if r, done := h.advance(started); done {
			return r
		}
	}
}

// onRelease answers Control.Release: taken while the hold records.
func (h *hold) onRelease(reply chan<- bool) {
	ok := h.phase == recording
	reply <- ok
	if ok {
		h.stop(Released)
	}
}

// onCancel answers Control.Cancel: taken while the hold records or is in
// its tail; true when the hold is dropped.
func (h *hold) onCancel(reply chan<- bool) bool {
	ok := h.phase <= inTail
	reply <- ok
	if ok {
		h.drop(Cancelled)
	}
	return ok
}

// onShutdown takes the end of Run's context: a recording hold is dropped
// (true), a tail is cut short; a hold past its tail goes on to its text,
// whose decodes end with the same context.
func (h *hold) onShutdown() bool {
	switch h.phase {
	case recording:
		h.drop(Shutdown)
		return true
	case inTail:
		h.tailEnd("max")
	}
	return false
}

// advance moves the hold on after an event: from its tail to settling,
// from settling to decoding, and to its Result once it has one (done).
func (h *hold) advance(started time.Time) (r Result, done bool) {
	if h.phase == inTail && h.tail.done {
		if r := h.collected(started); r.Outcome != undecided {
			return r, true
		}
	}
	if h.phase == settling && h.events == nil {
		if r := h.settled(); r.Outcome != undecided {
			return r, true
		}
	}
	if h.phase == decoding && h.whole == nil && h.eager.idle() {
		if r, ok := h.decodeWhole(); ok {
			return r, true
		}
	}
	if h.whole != nil && h.whole.finished {
		return h.wholeResult(), true
	}
	return Result{}, false
}

// add keeps a block of audio and feeds it to the detectors.
func (h *hold) add(s []int16) {
	if s == nil { // the capture child's stream ended
		h.micEnd = true
		h.stopStall() // an ended stream is not a stalled one
		if h.phase != recording {
			h.audio = nil // nothing more is taken
		} // else a capture child restarted after a failure goes on
		h.tail.micEnded(h)
		return
	}
	h.micEnd = false
	now := time.Now()
	if !h.downSince.IsZero() { // the capture child is back
		h.capLost += max(0, now.Sub(h.downSince)-pcm.Duration(len(s)))
		h.downSince = time.Time{}
	}
	h.lastBlock = now
	h.armStall()
	s = s[:min(len(s), max(0, h.max-len(h.samples)))]
	if len(s) == 0 {
		return
	}
	h.samples = append(h.samples, s...)
	h.tail.feed(s)
	h.fed += int64(len(s))
	h.deps.Detector.Feed(s)
	h.eager.tentative(h)
}

// event takes one event of the hold's detector; ok false: the channel
// closed (the use ended or failed).
func (h *hold) event(e vadlink.Event, ok bool) {
	if !ok {
		h.events = nil
		h.eager.push(h, eagerEvent{closed: true})
		h.tail.detectorGone(h)
		return
	}
	switch e.Kind {
	case vadlink.SpeechEnd:
		h.eager.inSpan = false
		if h.p.Pieces {
			h.eager.push(h, eagerEvent{at: e.At, since: e.Since})
		}
	case vadlink.SpeechStart:
		h.said = true
		h.eager.inSpan = true
	case vadlink.Ended:
		h.said = h.said || e.Said
		h.eager.push(h, eagerEvent{since: e.Since, ended: true})
	case vadlink.Failed:
		h.failed = true
	case vadlink.Silence:
		if h.p.AutoStop > 0 && e.For == h.p.AutoStop && h.phase == recording {
			h.deps.Owner.Stopping(AutoStopped)
			h.stop(AutoStopped)
		}
		if e.For == tailQuiet {
			h.eager.push(h, eagerEvent{at: e.At, since: e.Since, quiet: true})
			h.quietAt = e.At
			h.tail.quiet(h, e.At)
		}
	}
}

// armStall starts the wait for the next block (CaptureStall) while the
// hold records or records its tail.
func (h *hold) armStall() {
	if h.phase > inTail || h.audio == nil {
		return
	}
	if h.stall == nil {
		h.stall = time.NewTimer(CaptureStall)
	} else {
		h.stall.Reset(CaptureStall)
	}
	h.stallC = h.stall.C
}

func (h *hold) stopStall() {
	if h.stall != nil {
		h.stall.Stop()
	}
	h.stallC = nil
}

// stalled: no block for CaptureStall. What the microphone queued
// meanwhile (the daemon was slow, not the capture) is no stall; else the
// capture child is taken for stalled and restarted.
func (h *hold) stalled() {
	h.stallC = nil
	for h.audio != nil {
		select {
		case s := <-h.audio:
			h.add(s)
			if h.stallC != nil || h.micEnd {
				return // a block came, or the stream ended
			}
			continue
		default:
		}
		break
	}
	if h.audio == nil {
		return
	}
	h.captureDown("stalled")
	h.deps.Audio.Restart()
}

// captureDown: the capture child failed (it died, or stalled); the
// audio from its last block on is lost until it is back.
func (h *hold) captureDown(why string) {
	if h.phase > inTail || !h.downSince.IsZero() {
		return
	}
	h.capFailed = true
	h.downSince = h.lastBlock
	h.log.Warn("the capture child failed during a hold: what it heard is kept, and it is restarted", "why", why,
		"silent_ms", time.Since(h.lastBlock).Milliseconds(), "stall_ms", CaptureStall.Milliseconds())
}

// captureUp ends the capture's account at the end of the recording: a
// stream still down lost the audio to here.
func (h *hold) captureUp() {
	h.stopStall()
	h.failedCh = nil
	if !h.downSince.IsZero() {
		h.capLost += time.Since(h.downSince)
		h.downSince = time.Time{}
	}
}

// timedOut ends a hold whose decoding did not end by its deadline: the
// decoder is taken for hung.
func (h *hold) timedOut() Result {
	h.log.Warn("the hold's decoding did not end within its bound", "bound_ms", h.bound.Milliseconds())
	return Result{Why: h.why, Outcome: Failed, Err: ErrDecodeBound, Hung: true, Bound: h.bound,
		DetectorFailed: h.failed && !h.silent, DetectorSilent: h.silent}
}

// message takes what a helper goroutine sent.
func (h *hold) message(m any) {
	switch m := m.(type) {
	case *job:
		m.finished = true
		if m != h.whole {
			h.eager.decoded(h, m)
		}
	case *waited:
		h.tail.waited(h, m)
	}
}

// stop begins the hold's end (why): its tail, or at once without one.
func (h *hold) stop(why Why) {
	h.eager.dropTent() // the release's decodes come first
	h.why, h.end = why, h.p.Ending()
	h.phase = inTail
	if h.end.Tail <= 0 {
		h.tail.done = true
		return
	}
	h.tail.begin(h, h.end.Tail)
}

// stopListening takes what the microphone already queued (it belongs to
// the hold too) and stops listening.
func (h *hold) stopListening(keep bool) {
drain:
	for keep && h.audio != nil {
		select {
		case s := <-h.audio:
			h.add(s)
		default:
			break drain
		}
	}
	h.audio = nil
	h.captureUp()
	h.deps.Audio.Stop()
}

// drop ends a hold that records or is in its tail, without a text.
func (h *hold) drop(why Why) {
	h.tail.stop()
	h.stopListening(false)
	h.deps.Owner.Collected(why)
	h.eager.cancel()
	h.release()
}

// release closes the detector's use, once.
func (h *hold) release() {
	if !h.released {
		h.released = true
		h.events = nil
		h.deps.Detector.Release()
	}
}

// collected follows the tail: the hold stops listening; one held too
// briefly ends here, else the detector's use ends and its last answers
// are awaited.
func (h *hold) collected(started time.Time) Result {
	h.stopListening(true)
	h.deps.Owner.Collected(h.why)
	if time.Since(started) < h.end.MinUtterance {
		h.eager.cancel()
		h.release()
		return Result{Why: h.why, Outcome: TooShort}
	}
	h.phase = settling
	h.bound = DecodeBound(pcm.Duration(len(h.samples)))
	h.deadline = time.Now().Add(h.bound)
	h.dlTimer = time.NewTimer(h.bound)
	h.deps.Detector.End()
	h.settle = time.NewTimer(settleWait)
	return Result{}
}

// giveUpDetector: the detector did not answer the use's end within
// settleWait. Its events are no longer read (the eager decoding has no
// more pieces), the whole hold counts as speech, and it is restarted.
func (h *hold) giveUpDetector() {
	h.settle = nil
	if h.events == nil {
		return
	}
	h.events = nil
	h.eager.push(h, eagerEvent{closed: true})
	h.silent = true
	h.log.Warn("the voice detector did not answer in time: all of the hold is decoded", "detector", h.deps.Detector.Engine(),
		"settle_ms", settleWait.Milliseconds())
	h.deps.Detector.Restart()
}

// settled follows the detector's last answer: a hold in which nothing
// was said ends empty; else it is decoded once the eager pieces are in.
func (h *hold) settled() Result {
	if h.settle != nil {
		h.settle.Stop()
		h.settle = nil
	}
	if !h.silent {
		h.log.Debug("hold: voice detector", "detector", h.deps.Detector.Engine(), "said", h.said, "failed", h.failed)
	}
	h.release()
	if !h.saidAnything() {
		h.eager.cancel()
		return Result{Why: h.why, Outcome: Empty}
	}
	h.phase = decoding
	return Result{}
}

// saidAnything reports whether anything was said in the hold: a span
// heard, or the detector failed or did not answer in time (then the
// decoder decides, as before the detector).
func (h *hold) saidAnything() bool { return h.said || h.failed || h.silent }

// decodeWhole ends a hold whose eager pieces are in: with their text when
// they hold all that was said, else it starts the decode of the whole (or
// of the audio after the last piece); ok false then.
func (h *hold) decodeWhole() (Result, bool) {
	text, cut, eagerOK := h.eager.finish(h.log)
	r := Result{Why: h.why, DetectorFailed: h.failed && !h.silent, DetectorSilent: h.silent}
	degraded := h.failed || h.silent || h.eager.incomplete()
	switch {
	case eagerOK && !degraded, eagerOK && cut >= int64(len(h.samples)):
		// Decoded in pieces during the hold, or the pieces hold all of it.
		r.Outcome, r.Text = Decoded, text
		h.eager.split(&r, "")
		return r, true
	}
	audio, said, prefix := h.samples, "", ""
	if eagerOK { // pieces until the detector failed: the rest, once
		audio, said, prefix = h.samples[cut:], saidSoFar(h.eager.texts), text
		h.log.Debug("hold: the audio after the last piece is decoded", "audio_ms", pcm.Duration(len(audio)).Milliseconds())
	}
	h.whole = h.startDecodeUntil(audio, said, h.deadline, h.bound)
	h.whole.prefix = prefix
	return Result{}, false
}

// wholeResult is the Result of the hold's last decode.
func (h *hold) wholeResult() Result {
	j := h.whole
	r := Result{Why: h.why, DetectorFailed: h.failed && !h.silent, DetectorSilent: h.silent, Bound: j.bound}
	if j.err != nil {
		r.Outcome, r.Err, r.Hung = Failed, j.err, j.hung
		return r
	}
	r.Outcome, r.Text = Decoded, strings.TrimSpace(j.text)
	if j.prefix != "" {
		r.Text = strings.TrimSpace(j.prefix + " " + r.Text)
	}
	h.eager.split(&r, strings.TrimSpace(j.text))
	return r
}

// drain ends every helper the hold started and waits for each.
func (h *hold) drain() {
	h.tail.stop()
	h.stopStall()
	if h.dlTimer != nil {
		h.dlTimer.Stop()
	}
	if h.settle != nil {
		h.settle.Stop()
	}
	h.eager.cancel()
	if h.whole != nil && !h.whole.finished {
		h.whole.cancel()
	}
	for h.running > 0 {
		m := <-h.msgs
		h.running--
		if j, ok := m.(*job); ok {
			j.finished = true
		}
	}
	h.release()
	if h.audio != nil {
		h.stopListening(false)
	}
}

// job is one decode running on a goroutine of its own.
type job struct {
	from, to, since int64 // speculation: the audio [from, to), after a silence that began at since
	bound           time.Duration
	cancel          context.CancelFunc
	started         time.Time
	prefix          string // the whole decode: the pieces' text before it

	// Set by the goroutine before it sends the job.
	text     string
	err      error
	hung     bool
	took     time.Duration
	finished bool // set by the hold when the job came back
}

// startDecode decodes audio (a copy the job owns) after said, within bound.
func (h *hold) startDecode(audio []int16, said string, bound time.Duration) *job {
	return h.startDecodeUntil(audio, said, time.Now().Add(bound), bound)
}

// startDecodeUntil decodes audio after said until deadline (bound is what
// the Result reports). The decode does not end with Run's context (the
// daemon stopping lets a hold past its recording finish: the Decoder
// bounds that); a cancel or a drop ends it.
func (h *hold) startDecodeUntil(audio []int16, said string, deadline time.Time, bound time.Duration) *job {
	ctx, cancel := context.WithDeadlineCause(context.WithoutCancel(h.ctx), deadline, ErrDecodeBound)
	j := &job{bound: bound, cancel: cancel, started: time.Now()}
	h.running++
	go func() { // owned: the hold receives the job before it ends (drain)
		defer cancel()
		j.text, j.err = h.deps.Decoder.Decode(ctx, audio, said)
		j.hung = j.err != nil && errors.Is(context.Cause(ctx), ErrDecodeBound)
		j.took = time.Since(j.started)
		h.msgs <- j
	}()
	return j
}

// copyAudio returns a copy of the hold's samples [from, to).
func (h *hold) copyAudio(from, to int64) []int16 {
	to = min(to, int64(len(h.samples)))
	if from >= to {
		return nil
	}
	return append([]int16(nil), h.samples[from:to]...)
}
