package child

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"syscall"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/lib/tts"
)

// ErrNotRunning: the child is not up, so nothing was sent to it.
var ErrNotRunning = errors.New("child not running")

// Speaker is the daemon's end of `yaz-speak --serve`: requests on its
// stdin, events from its stdout, routed to the caller by id.
type Speaker struct {
	process

	mu      sync.Mutex
	w       *os.File // the child's stdin; nil while down
	gen     int      // counts starts; events of an older start are dropped
	pending map[string]chan tts.Event
	nextID  int
	up      level // the current start signalled readiness
}

// NewSpeaker returns the end of the speaker child run as spec (its Stdin,
// Stdout and Ready are the Speaker's).
func NewSpeaker(spec supervise.Spec, log *slog.Logger) *Speaker {
	s := &Speaker{pending: make(map[string]chan tts.Event)}
	spec.Stdin, spec.Stdout, spec.Ready = s.openStdin, s.openStdout, true
	s.init(spec, log)
	s.OnStart(s.started)
	return s
}

// openStdin is the supervisor's Stdin hook: a fresh pipe per start.
func (s *Speaker) openStdin() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("speak stdin: %w", err)
	}
	s.mu.Lock()
	if s.w != nil {
		s.w.Close()
	}
	s.w = w
	s.up.set(false)
	s.mu.Unlock()
	return r, nil
}

// started is the supervisor's hook: the child takes requests.
func (s *Speaker) started(pid, restart int) {
	s.mu.Lock()
	s.up.set(s.w != nil)
	s.mu.Unlock()
}

// openStdout is the supervisor's Stdout hook: a fresh pipe per start, read
// until the child's end closes it.
func (s *Speaker) openStdout() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("speak stdout: %w", err)
	}
	s.mu.Lock()
	s.gen++
	gen := s.gen
	s.failPendingLocked()
	s.mu.Unlock()
	s.goroutines.Go(func() { s.read(r, gen) })
	return w, nil
}

// read routes the events of one start. At EOF (the child is gone) every
// request still pending is told by closing its channel without a final
// event: whether it was heard is then unknown.
func (s *Speaker) read(r *os.File, gen int) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		var ev tts.Event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		s.mu.Lock()
		ch, ok := s.pending[ev.ID]
		if ok && gen == s.gen {
			final := ev.Event != tts.EventStarted
			if final {
				delete(s.pending, ev.ID)
			}
			ch <- ev // buffered for every event of one request
			if final {
				close(ch)
			}
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	if gen == s.gen {
		s.failPendingLocked()
		if s.w != nil {
			s.w.Close()
			s.w = nil
		}
		s.up.set(false)
	}
	s.mu.Unlock()
}

func (s *Speaker) failPendingLocked() {
	for id, ch := range s.pending {
		close(ch)
		delete(s.pending, id)
	}
}

// Speak sends one request. Its events (started, then done or failed) come
// on the channel, which is closed after the final one, or without one when
// the child died. ErrNotRunning means nothing was sent: proven silent.
func (s *Speaker) Speak(text string) (id string, events <-chan tts.Event, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sendLocked(tts.Request{Text: text})
}

// ErrBusy: the speaker has a request in hand (a question being spoken, a
// cue playing), so a cue was not sent.
var ErrBusy = errors.New("speaker busy")

// Cue plays a sound cue (tts.CueStart, tts.CueEnd) only when nothing else
// is being spoken: with a request pending it sends nothing (ErrBusy), so a
// cue never plays over a question. Its events are Speak's.
func (s *Speaker) Cue(cue string) (events <-chan tts.Event, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) > 0 {
		return nil, ErrBusy
	}
	_, events, err = s.sendLocked(tts.Request{Cue: cue})
	return events, err
}

// sendLocked sends req with an id of its own, under s.mu.
func (s *Speaker) sendLocked(req tts.Request) (id string, events <-chan tts.Event, err error) {
	if s.w == nil || !s.up.on {
		return "", nil, ErrNotRunning
	}
	s.nextID++
	id = "q" + strconv.Itoa(s.nextID)
	req.ID = id
	line, err := json.Marshal(req)
	if err != nil {
		return "", nil, fmt.Errorf("speak request: %w", err)
	}
	ch := make(chan tts.Event, 3)
	s.pending[id] = ch
	if _, err := s.w.Write(append(line, '\n')); err != nil {
		// A pipe write of a few hundred bytes is atomic: it either went
		// in whole or not at all, and a child that never read it played
		// nothing of it.
		delete(s.pending, id)
		return "", nil, fmt.Errorf("%w: %w", ErrNotRunning, err)
	}
	return id, ch, nil
}

// Skip stops the utterance in progress (SIGUSR1); it then ends with failed.
func (s *Speaker) Skip() {
	if pid := s.Status().PID; pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGUSR1)
	}
}

// Up returns a channel closed while the speaker takes requests.
func (s *Speaker) Up() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.up.C()
}

// Close closes the speaker's stdin: it ends at EOF.
func (s *Speaker) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w != nil {
		s.w.Close()
		s.w = nil
	}
}
