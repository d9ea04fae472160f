// Package vadlink is the daemon's voice detector: it sends audio to a
// detector, reads back one speech probability per 32 ms window, and turns
// them into the events the daemon decides with. It is pure Go: the
// detector is a `yaz-decode vad-stream` child (Silero VAD through
// whisper.cpp, the wire format of package vadwire) whose pipes the caller
// hands over, or, without a Silero model, the energy detector (package vad)
// in process, its decisions fed straight to the same tracking (NewEnergy).
// The caller sees no difference but the quality of the decisions.
//
// A Link carries uses one after another: a hold, an answer. Start begins
// one with the detector's settings (vadspan.Params: thresholds, durations
// and the silences to report, FromConfig for the user's [vad] table); the
// Use's Feed sends audio (16 kHz s16 samples,
// blocks of any size) and End closes it, resetting the detector. Sample
// positions count from the use's first sample. While the detector answers,
// the Use's Events channel carries, in the order they are settled:
//
//   - SpeechStart: a span starts at At (padding included). It is reported
//     once the span is sure to be kept (MinSpeech of it heard), about
//     MinSpeech plus SpeechPad after At: "was anything said?" is yes from
//     the first one (State.Said).
//   - SpeechEnd: the span ends at At, once the pause after it reached
//     MinSilence (and 200 ms, whisper.cpp's merge gap): the end
//     of an answer, or a pause to decode at while a hold goes on. A pause
//     shorter than that, or probabilities lingering between NegThreshold
//     and Threshold (a slow, soft syllable), keep the span open. At the
//     use's end an open span ends there (whisper.cpp's rule). Since is
//     the end of the last voiced window as of the event.
//   - Silence: no voiced window for For (one of the settings' Silences) since
//     Since, the end of the last voiced window (or the use's start when
//     nothing was voiced yet), seen at At. Each length fires once per
//     stretch of silence: for a tail that ends when the speaker does, or a
//     hold that stops by itself.
//   - Ended: the use ended (End) after At samples; every span has ended.
//     Said tells whether the use held a span, Since where its last voiced
//     window ended. The channel closes after it.
//   - Failed: the detector is gone (the child exited, a malformed line, the
//     Link's context ended); Err says why. The channel closes after it
//     (without it when the caller had stopped reading), and the Link is
//     done: the caller starts a new one on a new child.
//
// A window is voiced when its probability is at least Threshold, or at
// least NegThreshold right after a voiced window (whisper.cpp's
// hysteresis), with vadspan's defaults for unset thresholds.
//
// State and Wait give the detector's view as of a position, for decisions
// taken at a moment (a key released at sample P: was the last stretch
// already silence?). Wait blocks until the windows up to P are answered;
// no polling.
//
// Goroutines: a child's Link owns a writer (frames to the detector) and a
// reader (lines from it); both end when the Link's context is done, which
// closes the pipes it was given (the child then sees EOF on stdin and
// exits 0). Done is closed once they have returned. Feed never blocks on
// the detector: audio queues (consecutive blocks joined into one frame, up
// to MaxQueued of audio in all) and a full queue ends the Link with
// ErrBehind rather than stall the microphone. The reader blocks on a use's
// Events channel until the caller reads it or Closes the use: read every
// Use's events until the channel closes, or Close it.
//
// The energy detector's Link runs no goroutine: Feed and End run the
// detector in the caller's goroutine and deliver the events they settle
// before they return. They never block either: a use whose Events channel
// is full (eventBuffer events unread) ends the Link with ErrBehind. When
// its context ends, the open use fails (context.AfterFunc) and Done is
// closed.
package vadlink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/yazses/yazses/lib/bcast"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/vadspan"
	"github.com/yazses/yazses/lib/vadwire"
)

// MaxQueued is the most audio that may wait for the detector (it runs
// about 400 times faster than real time on one thread: a backlog this long
// means it is stuck).
const MaxQueued = 30 * time.Second

// maxPending is how many uses may wait for their answers.
const maxPending = 16

// eventBuffer is how many events of a use may wait for the caller before
// the reader waits for it (a few per second of speech at most).
const eventBuffer = 256

// Errors.
var (
	// ErrBehind: the detector fell MaxQueued behind the audio.
	ErrBehind = errors.New("voice detector fell behind")
	// ErrUseOpen: Start while the last use has not ended.
	ErrUseOpen = errors.New("a voice detector use is still open")
	// ErrEnded: Feed or End after End.
	ErrEnded = errors.New("voice detector use ended")
	// ErrClosed: the Link is done.
	ErrClosed = errors.New("voice detector link closed")
)

// FromConfig is the detector's settings from the user's [vad] table:
// vad.threshold, whisper.cpp's defaults otherwise (vadspan.DefaultParams).
// A use sets what is its own on them: MinSilence the pause that ends a
// span (ask.answer_silence_ms for an answer, the eager-decoding pause for
// a hold), the Silences it reports.
func FromConfig(v config.VAD) vadspan.Params {
	p := vadspan.DefaultParams()
	p.Threshold = float32(v.Threshold)
	return p
}

// EventKind tells the events apart.
type EventKind uint8

// The events of a use (see the package comment).
const (
	SpeechStart EventKind = iota + 1
	SpeechEnd
	Silence
	Ended
	Failed
)

func (k EventKind) String() string {
	switch k {
	case SpeechStart:
		return "speech_start"
	case SpeechEnd:
		return "speech_end"
	case Silence:
		return "silence"
	case Ended:
		return "ended"
	case Failed:
		return "failed"
	}
	return "?"
}

// Event is something the detector settled. Positions are samples of the
// use.
type Event struct {
	Kind  EventKind
	At    int64         // SpeechStart, SpeechEnd: the span's boundary; Silence: where it was seen; Ended: the use's length
	Since int64         // Silence: where the silence began; SpeechEnd, Ended: the end of the last voiced window so far (0: none)
	For   time.Duration // Silence: which of the settings' Silences
	Said  bool          // Ended: the use held a span
	Err   error         // Failed
}

// State is the detector's view after the windows answered so far.
type State struct {
	Pos        int64 // samples answered: whole windows
	Said       bool  // a SpeechStart has been reported
	InSpan     bool  // a span has started and not ended
	Voiced     bool  // the last window was voiced
	LastVoiced int64 // the end of the last voiced window; 0: none yet
	Ended      bool  // the use ended
}

// Silent is how long the audio has been without a voiced window, as of
// Pos.
func (s State) Silent() time.Duration { return pcm.Duration(int(s.Pos - s.LastVoiced)) }

// Link is the daemon's end of one detector.
type Link struct {
	ctx    context.Context
	cancel context.CancelFunc
	qmu    sync.Mutex
	queue  []frame.Frame // to write, in order
	queued int           // bytes of audio in queue
	wake   chan struct{} // the queue has frames (capacity 1)
	uses   chan *Use     // begun, in order, for the reader
	done   chan struct{}
	wg     sync.WaitGroup

	mu   sync.Mutex
	open *Use // the use that has not ended, or nil
	err  error

	energy *energy // the energy detector in process (NewEnergy), or nil
}

// New returns a Link over a detector's pipes: frames (the child's stdin)
// and lines (its stdout). Cancelling ctx closes both and ends the Link.
func New(ctx context.Context, frames io.WriteCloser, lines io.ReadCloser) *Link {
	l := newLink(ctx)
	l.start(frames, lines)
	return l
}

// start runs the Link's goroutines; those added to l.wg before it are
// waited for too.
func (l *Link) start(frames io.WriteCloser, lines io.ReadCloser) {
	l.wg.Add(3)
	go l.write(frames)
	go l.read(lines)
	go func() {
		defer l.wg.Done()
		<-l.ctx.Done()
		frames.Close()
		lines.Close()
	}()
	go func() {
		l.wg.Wait()
		close(l.done)
	}()
}

func newLink(ctx context.Context) *Link {
	ctx, cancel := context.WithCancel(ctx)
	return &Link{ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), uses: make(chan *Use, maxPending), done: make(chan struct{})}
}

// Close ends the Link (as cancelling its context does) and waits for its
// goroutines.
func (l *Link) Close() error {
	l.cancel()
	<-l.done
	return nil
}

// Done is closed once the Link's goroutines have returned.
func (l *Link) Done() <-chan struct{} { return l.done }

// Err is why the Link ended: nil while it runs.
func (l *Link) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// fail ends the Link with err (the first error stays).
func (l *Link) fail(err error) {
	l.mu.Lock()
	if l.err == nil {
		l.err = err
	}
	l.mu.Unlock()
	l.cancel()
}

// Start starts a use with the detector's settings p (the thresholds and
// durations of its spans, the silences it reports). The last use must
// have ended.
func (l *Link) Start(p vadspan.Params) (*Use, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil || l.ctx.Err() != nil {
		if err := l.errLocked(); !errors.Is(err, ErrClosed) {
			return nil, fmt.Errorf("%w: %w", ErrClosed, err)
		}
		return nil, ErrClosed
	}
	if l.open != nil {
		return nil, ErrUseOpen
	}
	u := newUse(l, p)
	if l.energy != nil {
		l.energy.begin(u)
	} else {
		select {
		case l.uses <- u:
		default:
			// Ended uses still waiting for their answers: the detector is stuck.
			return nil, ErrBehind
		}
	}
	l.open = u
	return u, nil
}

func (l *Link) errLocked() error {
	if l.err != nil {
		return l.err
	}
	return context.Cause(l.ctx)
}

// maxQueuedBytes is MaxQueued in wire bytes.
var maxQueuedBytes = pcm.Samples(MaxQueued) * pcm.FrameBytes

// sendAudio queues samples for the writer, without blocking: appended to
// the last queued Audio frame while it has room.
func (l *Link) sendAudio(samples []int16) error {
	if l.ctx.Err() != nil {
		return ErrClosed
	}
	l.qmu.Lock()
	if l.queued+len(samples)*pcm.FrameBytes > maxQueuedBytes {
		l.qmu.Unlock()
		l.fail(ErrBehind)
		return ErrBehind
	}
	for len(samples) > 0 {
		n := len(l.queue)
		if n == 0 || l.queue[n-1].Type != frame.Audio || len(l.queue[n-1].Payload) == frame.MaxPayload {
			l.queue = append(l.queue, frame.Frame{Type: frame.Audio})
			n++
		}
		f := &l.queue[n-1]
		k := min(len(samples), (frame.MaxPayload-len(f.Payload))/pcm.FrameBytes)
		f.Payload = pcm.Encode(f.Payload, samples[:k])
		l.queued += k * pcm.FrameBytes
		samples = samples[k:]
	}
	l.qmu.Unlock()
	l.signal()
	return nil
}

// sendEnd queues an End frame.
func (l *Link) sendEnd() error {
	if l.ctx.Err() != nil {
		return ErrClosed
	}
	l.qmu.Lock()
	l.queue = append(l.queue, frame.Frame{Type: frame.End})
	l.qmu.Unlock()
	l.signal()
	return nil
}

func (l *Link) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// write sends the queued frames to the detector.
func (l *Link) write(w io.Writer) {
	defer l.wg.Done()
	fw := frame.NewWriter(w)
	for {
		select {
		case <-l.wake:
		case <-l.ctx.Done():
			return
		}
		l.qmu.Lock()
		q := l.queue
		l.queue, l.queued = nil, 0
		l.qmu.Unlock()
		for _, f := range q {
			if err := fw.WriteFrame(f); err != nil {
				l.fail(fmt.Errorf("write to the voice detector: %w", err))
				return
			}
		}
	}
}

// read turns the detector's lines into the events of the uses, in order.
func (l *Link) read(r io.Reader) {
	defer l.wg.Done()
	u, err := l.answer(vadwire.NewReader(r))
	if l.ctx.Err() != nil {
		err = ErrClosed // Close, or an earlier failure, which fail keeps
	}
	l.fail(err)
	err = l.Err()
	// Every use still waiting for answers fails.
	if u != nil {
		u.failed(err)
	}
	for {
		select {
		case u := <-l.uses:
			u.failed(err)
		default:
			return
		}
	}
}

// answer hands the detector's answers to the open use, one use after
// another, until the stream fails; it returns the use still open (nil for
// none) and why the stream ended.
func (l *Link) answer(vr *vadwire.Reader) (*Use, error) {
	var u *Use
	for {
		rec, err := vr.Next()
		switch {
		case errors.Is(err, io.EOF):
			return u, errors.New("the voice detector exited")
		case err != nil && l.ctx.Err() != nil:
			return u, ErrClosed
		case err != nil:
			return u, fmt.Errorf("voice detector: %w", err)
		}
		if u == nil {
			select {
			case u = <-l.uses:
			default:
				return nil, fmt.Errorf("voice detector: %w: an answer with no use open", vadwire.ErrSequence)
			}
		}
		switch rec.Kind {
		case vadwire.Probs:
			if err := u.probs(rec.Probs); err != nil {
				return u, err
			}
		case vadwire.End:
			if err := u.end(u.fedSoFar()); err != nil {
				return u, err
			}
			u = nil
		}
	}
}

// Use is one stretch of audio through the detector.
type Use struct {
	l      *Link
	p      vadspan.Params
	ev     chan Event
	closed chan struct{} // Close: events are dropped
	once   sync.Once

	// The caller's side.
	fmu   sync.Mutex
	fed   int64
	ended bool

	// The reader's side.
	tr       *vadspan.Tracker
	thr, neg float32
	fired    []bool // per p.Silences, in this stretch of silence

	smu     sync.Mutex
	st      State
	fail    error
	changed bcast.Signal // st or fail changed
}

func newUse(l *Link, p vadspan.Params) *Use {
	thr, neg := p.Thresholds()
	return &Use{
		l: l, p: p, ev: make(chan Event, eventBuffer), closed: make(chan struct{}),
		tr: vadspan.NewTracker(p), thr: thr, neg: neg, fired: make([]bool, len(p.Silences)),
	}
}

// Feed sends samples to the detector. It does not block.
func (u *Use) Feed(samples []int16) error {
	u.fmu.Lock()
	defer u.fmu.Unlock()
	if u.ended {
		return ErrEnded
	}
	send := u.l.sendAudio
	if u.l.energy != nil {
		send = func(s []int16) error { return u.l.energy.feed(u, s) }
	}
	if err := send(samples); err != nil {
		return err
	}
	u.fed += int64(len(samples))
	return nil
}

// End ends the use: its last window is answered, every span ends, the
// Ended event follows, and the Link is free for the next Start. Ending
// twice is a no-op.
func (u *Use) End() error {
	u.fmu.Lock()
	defer u.fmu.Unlock()
	if u.ended {
		return nil
	}
	u.ended = true
	u.l.mu.Lock()
	if u.l.open == u {
		u.l.open = nil
	}
	u.l.mu.Unlock()
	if u.l.energy != nil {
		return u.l.energy.end(u, u.fed)
	}
	return u.l.sendEnd()
}

// Close ends the use and drops its events from now on (the caller has
// what it needs): the channel still closes.
func (u *Use) Close() error {
	u.once.Do(func() { close(u.closed) })
	return u.End()
}

// Events is the use's channel of events; it closes after Ended or Failed.
func (u *Use) Events() <-chan Event { return u.ev }

// State is the detector's view after the windows answered so far.
func (u *Use) State() State {
	u.smu.Lock()
	defer u.smu.Unlock()
	return u.st
}

// Wait returns the State once the windows up to sample pos are answered
// (the whole windows below pos: a partial one waits for more audio or
// End), the use ended, ctx is done or the detector failed. The reader
// delivers the events before it moves on: keep reading Events meanwhile
// (from another goroutine) once more than eventBuffer may have piled up.
func (u *Use) Wait(ctx context.Context, pos int64) (State, error) {
	want := pos / vadspan.Window * vadspan.Window
	for {
		ch := u.changed.C()
		u.smu.Lock()
		st, fail := u.st, u.fail
		u.smu.Unlock()
		switch {
		case fail != nil:
			return st, fail
		case st.Pos >= want || st.Ended:
			return st, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return st, ctx.Err()
		}
	}
}

// publish sets the state and wakes Wait.
func (u *Use) publish(st State, fail error) {
	u.smu.Lock()
	u.st, u.fail = st, fail
	u.smu.Unlock()
	u.changed.Broadcast()
}

// emit delivers an event unless the use was closed or the Link ends. In
// process (the energy detector) it never blocks: a full channel is
// ErrBehind.
func (u *Use) emit(e Event) error {
	select {
	case <-u.closed:
		return nil
	default:
	}
	if u.l.energy != nil {
		select {
		case u.ev <- e:
			return nil
		default:
			return ErrBehind
		}
	}
	select {
	case u.ev <- e:
		return nil
	case <-u.closed:
		return nil
	case <-u.l.ctx.Done():
		return ErrClosed
	}
}

// probs takes the probabilities of the next windows.
func (u *Use) probs(probs []float32) error {
	st := u.State()
	for _, p := range probs {
		voiced := p >= u.thr || (st.Voiced && p >= u.neg)
		st.Pos += vadspan.Window
		st.Voiced = voiced
		if voiced {
			st.LastVoiced = st.Pos
			clear(u.fired)
		}
		for _, e := range u.tr.Push(p) {
			if err := u.span(&st, e); err != nil {
				return err
			}
		}
		if voiced {
			continue
		}
		silent := st.Pos - st.LastVoiced
		for i, d := range u.p.Silences {
			if !u.fired[i] && silent >= int64(pcm.Samples(d)) {
				u.fired[i] = true
				if err := u.emit(Event{Kind: Silence, At: st.Pos, Since: st.LastVoiced, For: d}); err != nil {
					return err
				}
			}
		}
	}
	u.publish(st, nil)
	return nil
}

func (u *Use) span(st *State, e vadspan.Event) error {
	switch e.Kind {
	case vadspan.SpeechStart:
		st.Said, st.InSpan = true, true
		return u.emit(Event{Kind: SpeechStart, At: e.At})
	default:
		st.InSpan = false
		return u.emit(Event{Kind: SpeechEnd, At: e.At, Since: st.LastVoiced})
	}
}

// fedSoFar is how many samples the caller fed.
func (u *Use) fedSoFar() int64 {
	u.fmu.Lock()
	defer u.fmu.Unlock()
	return u.fed
}

// end takes the use's end after fed samples (the E line, or End in
// process): open spans end, Ended, the channel closes.
func (u *Use) end(fed int64) error {
	st := u.State()
	for _, e := range u.tr.Flush() {
		if err := u.span(&st, e); err != nil {
			return err
		}
	}
	st.Ended = true
	st.Pos, st.LastVoiced = min(st.Pos, fed), min(st.LastVoiced, fed) // not the padding
	if err := u.emit(Event{Kind: Ended, At: fed, Since: st.LastVoiced, Said: st.Said}); err != nil {
		return err
	}
	u.publish(st, nil)
	close(u.ev)
	return nil
}

// failed reports the Link's end to a use still waiting for answers: a
// Failed event if the channel has room (a caller that stopped reading
// learns it from State, Wait or Feed), then the channel closes.
func (u *Use) failed(err error) {
	u.publish(u.State(), err)
	select {
	case u.ev <- Event{Kind: Failed, Err: err}:
	default:
	}
	close(u.ev)
}
