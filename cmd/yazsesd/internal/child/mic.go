package child

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/lib/pcm"
)

// Mic is the daemon's end of yaz-capture. In on-demand mode the child runs
// only while someone listens (a hold or an answer); in always mode it runs
// for the daemon's life and the last pre-roll of audio is kept in a ring.
// Audio is handed to every listener as it arrives.
type Mic struct {
	end
	log    *slog.Logger
	always bool
	ring   *ring // the last pre-roll of audio (always mode); nil otherwise

	scratch []int16 // decoded audio while nobody listens
	mu      sync.Mutex
	users   int
	cancel  context.CancelFunc
	runDone chan struct{}
	subs    map[*Listener]struct{}
	rootCtx context.Context
}

// Listener receives audio from the microphone.
type Listener struct {
	ch      chan []int16
	dropped int
}

// Audio delivers the microphone's audio as it arrives; a nil chunk means
// that the capture child's stream ended.
func (l *Listener) Audio() <-chan []int16 { return l.ch }

// NewMic returns the end of the capture child run as spec (its Stdout and
// Ready are the Mic's). always keeps it open for the daemon's life with
// the last preRollSamples in a ring; else it runs only while someone
// listens.
func NewMic(spec supervise.Spec, always bool, preRollSamples int, log *slog.Logger) *Mic {
	m := &Mic{log: log, always: always, subs: make(map[*Listener]struct{})}
	if always && preRollSamples > 0 {
		m.ring = newRing(preRollSamples)
	}
	spec.Stdout, spec.Ready = m.stdout, true
	m.init(spec, log)
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
	go m.read(r)
	return w, nil
}

func (m *Mic) read(r *os.File) {
	defer r.Close()
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
			m.deliver(b)
		}
		if err == nil && m.idle() {
			// Nobody listens: let the pipe gather 100 ms at a time
			// rather than waking for every few milliseconds of audio.
			// A listener that arrives meanwhile gets the ring, then
			// what the pipe holds, in order.
			time.Sleep(idleNap)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				m.log.Debug("capture read ended", "err", err)
			}
			m.ended()
			return
		}
	}
}

// deliver hands wire-format bytes to the ring and every listener. With no
// listener (idle, always mode) nothing is allocated.
func (m *Mic) deliver(b []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
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
	for l := range m.subs {
		select {
		case l.ch <- s:
		default:
			l.dropped += len(s)
		}
	}
}

// ended tells every listener that the capture stream ended (the child
// exited: a replayed file ran out, or it crashed) with a nil chunk.
func (m *Mic) ended() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for l := range m.subs {
		select {
		case l.ch <- nil:
		default:
		}
	}
}

// idleNap is how long the reader sleeps between reads while nobody
// listens (always mode between holds): 100 ms, a tenth of the wakeups.
const idleNap = 100 * time.Millisecond

func (m *Mic) idle() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.subs) == 0
}

// Start keeps ctx as the life of every run of the child and, in always
// mode, starts it for the daemon's life.
func (m *Mic) Start(ctx context.Context) {
	m.mu.Lock()
	m.rootCtx = ctx
	m.mu.Unlock()
	if m.always {
		m.mu.Lock()
		m.runLocked()
		m.mu.Unlock()
	}
}

// runLocked starts supervising the child if it is not running.
func (m *Mic) runLocked() {
	if m.cancel != nil || m.rootCtx == nil || m.rootCtx.Err() != nil {
		return
	}
	prev := m.runDone
	ctx, cancel := context.WithCancel(m.rootCtx)
	done := make(chan struct{})
	m.cancel, m.runDone = cancel, done
	go func() {
		defer close(done)
		if prev != nil {
			<-prev // one Run at a time
		}
		if err := m.Run(ctx); err != nil {
			m.log.Error("capture stopped", "err", err)
		}
		cancel()
		m.mu.Lock()
		if m.runDone == done {
			m.cancel = nil // ended by itself: the next listen starts it again
		}
		m.mu.Unlock()
	}()
}

// Listen adds a listener; with preRoll the ring's audio comes first. The
// microphone opens if it is not open.
func (m *Mic) Listen(preRoll bool) *Listener {
	l := &Listener{ch: make(chan []int16, 1024)}
	m.mu.Lock()
	defer m.mu.Unlock()
	if preRoll && m.ring != nil {
		if pre := m.ring.snapshot(); len(pre) > 0 {
			l.ch <- pre
		}
	}
	m.subs[l] = struct{}{}
	m.users++
	m.runLocked()
	return l
}

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
	if m.users == 0 && !m.always && m.cancel != nil {
		m.cancel()
		m.cancel = nil
	}
}

// Wait waits for the supervision to end (after Start's context ended).
func (m *Mic) Wait() {
	m.mu.Lock()
	done := m.runDone
	m.mu.Unlock()
	if done != nil {
		<-done
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
