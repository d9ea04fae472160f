// Package mic holds yazsesd's ends of the children that hear: Mic, the
// end of yaz-capture (the microphone: on demand or always open with a
// pre-roll ring, its audio handed to every listener, quieted while a cue
// plays), and VAD, the end of yaz-decode vad-stream (Silero VAD's
// probabilities of that audio, when [vad] selects Silero; its Link is a
// vadlink.Link made afresh on every start). Each end is a proc.Process:
// it owns its supervise.Child, makes the child's pipes afresh on every
// start, and shows the child's state as channels (Changed, Down, and Up
// for the detector). The Mic's Run owns its child's life: always, or from
// a first listener to the last. No end keeps a context, logs the audio or
// knows of holds.
package mic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/proc"
	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/lib/bcast"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/tts"
)

// Mic is the daemon's end of yaz-capture. In on-demand mode the child runs
// only while someone listens (a hold or an answer); in always mode it runs
// for the daemon's life and the last pre-roll of audio is kept in a ring.
// Audio is handed to every listener as it arrives. Run owns the child's
// life: it starts a supervision when one is wanted (always mode, or a
// first listener) and ends it when the last listener leaves.
type Mic struct {
	proc.Process
	log    *slog.Logger
	always bool
	ring   *ring // the last pre-roll of audio (always mode); nil otherwise

	listened bcast.Signal  // a listener was added (ends an idle nap)
	wanted   chan struct{} // a supervision is wanted (capacity 1): for Run

	scratch []int16 // decoded audio while nobody listens
	mu      sync.Mutex
	users   int
	stop    context.CancelFunc // ends the current supervision; nil when none is wanted
	subs    map[*Listener]struct{}
	// starts counts the child's starts (a reader each); the readers of
	// starts up to retired belong to a supervision stopped because nobody
	// listened: what they still read (the last audio, the end) is nobody's,
	// and above all not that of a listener that came meanwhile.
	starts, retired int
}

// Listener receives audio from the microphone.
type Listener struct {
	ch      chan []int16
	pre     int           // samples of the pre-roll it was given first
	failed  chan struct{} // capacity 1: the child failed (Failed)
	dropped int
	told    bool // a nil chunk (the stream's end) was sent to it
	// quiet: the audio is silence of the same length until quietEnd,
	// which comes sooner, quietAfter after sound closes (Mic.Quiet).
	quiet      bool
	sound      <-chan tts.Event // nil once closed
	quietEnd   time.Time
	quietAfter time.Duration
}

// quieted reports whether audio that comes now is to be silence.
func (l *Listener) quieted(now time.Time) bool {
	if !l.quiet {
		return false
	}
	for l.sound != nil {
		select {
		case _, ok := <-l.sound:
			if ok {
				continue // started: not played out yet
			}
			// Played out (or failed): what the microphone delivers for a
			// while yet was recorded while it played.
			l.sound = nil
			if end := now.Add(l.quietAfter); end.Before(l.quietEnd) {
				l.quietEnd = end
			}
		default:
		}
		break
	}
	if now.Before(l.quietEnd) {
		return true
	}
	l.quiet, l.sound = false, nil
	return false
}

// Audio delivers the microphone's audio as it arrives; a nil chunk means
// that the capture child's stream ended.
func (l *Listener) Audio() <-chan []int16 { return l.ch }

// Failed delivers a value when the capture child failed while l listened:
// it ended by a signal or with an error (its supervisor starts it again
// after its backoff, and its audio comes to l again), or it is left down.
// Not at exit 0 (a replayed file ran out), nor at a Restart asked for.
func (l *Listener) Failed() <-chan struct{} { return l.failed }

// NewMic returns the end of the capture child run as spec (its Stdout and
// Ready are the Mic's). always keeps it open for the daemon's life with
// the last preRollSamples in a ring; else it runs only while someone
// listens.
func NewMic(spec supervise.Spec, always bool, preRollSamples int, log *slog.Logger) *Mic {
	m := &Mic{log: log, always: always, subs: make(map[*Listener]struct{}), wanted: make(chan struct{}, 1)}
	if always && preRollSamples > 0 {
		m.ring = newRing(preRollSamples)
	}
	// Exit 0 ends the capture's work (a replayed file ran out): it is
	// not restarted by the supervisor, and the next Listen starts it
	// again, as after any end of a supervision.
	spec.Stdout, spec.Ready, spec.ExitZeroStops = m.stdout, true, true
	m.Init(spec, log)
	m.OnState(m.stateChanged)
	return m
}

// Always reports whether the microphone stays open (capture.mode = always).
func (m *Mic) Always() bool { return m.always }

// stdout is the supervisor's Stdout hook: a pipe per start, read here.
func (m *Mic) stdout() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("capture stdout: %w", err)
	}
	m.mu.Lock()
	m.starts++
	start := m.starts
	m.mu.Unlock()
	m.Goroutines.Go(func() { m.read(r, start) })
	return w, nil
}

// read hands the audio of one start (the start-th) to deliver until the
// stream ends.
// While nobody listens it naps idleNap between reads, letting the pipe
// gather audio rather than waking for every few milliseconds of it; a
// listener that arrives ends the nap at once, and gets the ring, then
// what the pipe holds, in order.
func (m *Mic) read(r io.ReadCloser, start int) {
	defer r.Close()
	nap := time.NewTimer(idleNap)
	nap.Stop()
	buf := make([]byte, 8000) // up to 250 ms: more than one idle nap gathers
	odd := false
	var carry byte
	for {
		n, err := r.Read(buf[1:])
		if n > 0 {
			b := buf[1 : 1+n]
			if odd {
				buf[0] = carry
				b = buf[:1+n]
			}
			odd = len(b)%2 == 1
			if odd {
				carry = b[len(b)-1]
				b = b[:len(b)-1]
			}
			m.deliver(b, start)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				m.log.Debug("capture read ended", "err", err)
			}
			m.ended(start)
			return
		}
		if listened := m.listened.C(); m.idle() {
			nap.Reset(idleNap)
			select {
			case <-nap.C:
			case <-listened:
				nap.Stop()
			}
		}
	}
}

// deliver hands wire-format bytes of the start-th start to the ring and
// every listener, unless that start was retired. With no listener (idle,
// always mode) nothing is allocated.
func (m *Mic) deliver(b []byte, start int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if start <= m.retired {
		return
	}
	var s []int16
	if len(m.subs) == 0 {
		m.scratch = pcm.Decode(m.scratch[:0], b)
		s = m.scratch
	} else {
		s = pcm.Decode(nil, b) // listeners keep it
	}
	if m.ring != nil {
		m.ring.write(s)
	}
	var zeros []int16
	now := time.Now()
	for l := range m.subs {
		ls := s
		if l.quieted(now) {
			if zeros == nil {
				zeros = make([]int16, len(s))
			}
			ls = zeros
		}
		select {
		case l.ch <- ls:
		default:
			l.dropped += len(s)
		}
	}
}

// ended tells every listener that the capture stream ended (the child
// exited: a replayed file ran out, or it crashed) with a nil chunk, unless
// the start-th start was retired.
func (m *Mic) ended(start int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if start <= m.retired {
		return
	}
	for l := range m.subs {
		l.told = true
		select {
		case l.ch <- nil:
		default:
		}
	}
}

// stateChanged tells every listener when the child failed: it waits to
// be started again (backoff) or is left down (crash loop, exit 125).
func (m *Mic) stateChanged(st supervise.Status) {
	switch st.State {
	case supervise.StateBackoff, supervise.StateCrashLoop, supervise.StateExited:
	default:
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stop == nil && !m.always {
		return // a supervision nobody wants any more
	}
	for l := range m.subs {
		select {
		case l.failed <- struct{}{}:
		default: // told already
		}
	}
}

// idleNap is the longest nap of the reader between reads while nobody
// listens (always mode between holds): 100 ms, a tenth of the wakeups.
const idleNap = 100 * time.Millisecond

func (m *Mic) idle() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.subs) == 0
}

// Run runs the microphone until ctx ends: in always mode a supervision
// of the child for the daemon's life, else one from a first listener to
// the last one's Unlisten. A supervision that ends by itself (a crash
// loop, an exit 125) is logged; the next Listen starts another. Errors
// are Run's to log: it returns nil once ctx has ended and the last
// supervision (and its reader) with it.
func (m *Mic) Run(ctx context.Context) error {
	if m.always {
		m.want()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-m.wanted:
		}
		m.mu.Lock()
		if m.stop != nil || (!m.always && m.users == 0) {
			m.mu.Unlock() // running, or no longer wanted
			continue
		}
		sctx, stop := context.WithCancel(ctx)
		m.stop = stop
		m.mu.Unlock()
		err := m.Process.Run(sctx)
		byItself := sctx.Err() == nil
		stop()
		m.mu.Lock()
		if m.stop != nil && byItself {
			m.stop = nil // ended by itself: the next listen starts it again
			if m.untold() {
				m.want() // and one that came after the end starts it now
			}
		}
		m.mu.Unlock()
		if err != nil {
			m.log.Error("capture stopped", "err", err)
		}
	}
}

// untold reports whether a listener joined after the stream's end was
// told: it found the supervision still set, so started nothing, and no
// nil chunk will come to it. The caller holds mu.
func (m *Mic) untold() bool {
	for l := range m.subs {
		if !l.told {
			return true
		}
	}
	return false
}

// want asks Run for a supervision.
func (m *Mic) want() {
	select {
	case m.wanted <- struct{}{}:
	default: // asked already
	}
}

// Quiet turns the audio l gets from now on into silence of the same
// length, so that a hold does not hear its own start cue: until after has
// passed since sound's channel closed (the cue played out: Speaker.Cue;
// after covers the microphone's own latency, the sound played before it
// reaches the daemon) or max since now, whichever comes first. What l
// was given before (the pre-roll) is kept. Quiet reads sound's events;
// nobody else may.
func (m *Mic) Quiet(l *Listener, sound <-chan tts.Event, after, max time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l.quiet, l.sound, l.quietAfter, l.quietEnd = true, sound, after, time.Now().Add(max)
}

// Listen adds a listener; with preRoll the ring's audio comes first. The
// microphone opens if it is not open.
func (m *Mic) Listen(preRoll bool) *Listener {
	l := &Listener{ch: make(chan []int16, 1024), failed: make(chan struct{}, 1)}
	m.mu.Lock()
	if preRoll && m.ring != nil {
		if pre := m.ring.snapshot(); len(pre) > 0 {
			l.ch <- pre
			l.pre = len(pre)
		}
	}
	m.subs[l] = struct{}{}
	m.users++
	if m.stop == nil {
		m.want()
	}
	m.mu.Unlock()
	m.listened.Broadcast()
	return l
}

// PreRoll is how much audio from before Listen l was given first (the
// ring's, in capture.mode "always"; none otherwise).
func (l *Listener) PreRoll() time.Duration { return pcm.Duration(l.pre) }

// Unlisten removes l; the last one closes the microphone in on-demand
// mode. A second call does nothing.
func (m *Mic) Unlisten(l *Listener) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.subs[l]; !ok {
		return
	}
	delete(m.subs, l)
	if l.dropped > 0 {
		m.log.Warn("listener fell behind: audio dropped", "samples", l.dropped)
	}
	m.users--
	if m.users == 0 && !m.always && m.stop != nil {
		m.stop()
		m.stop = nil
		m.retired = m.starts
	}
}

// ring keeps the last len(buf) samples written, overwriting the oldest.
type ring struct {
	buf  []int16
	next int  // where the next sample goes
	full bool // buf has wrapped at least once
}

func newRing(n int) *ring { return &ring{buf: make([]int16, n)} }

func (r *ring) write(s []int16) {
	if len(s) >= len(r.buf) {
		copy(r.buf, s[len(s)-len(r.buf):])
		r.next, r.full = 0, true
		return
	}
	n := copy(r.buf[r.next:], s)
	if n < len(s) {
		copy(r.buf, s[n:])
		r.full = true
	}
	r.next = (r.next + len(s)) % len(r.buf)
	if r.next == 0 && len(s) > 0 {
		r.full = true
	}
}

// snapshot returns the samples held, oldest first, as a new slice.
func (r *ring) snapshot() []int16 {
	if !r.full {
		return append([]int16(nil), r.buf[:r.next]...)
	}
	out := make([]int16, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}
