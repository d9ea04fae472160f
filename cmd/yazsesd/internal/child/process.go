package child

import (
	"context"
	"log/slog"
	"sync"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
)

// end is what every child end has: its supervised process, and its state
// as channels.
type end struct {
	c *supervise.Child

	mu      sync.Mutex
	changed chan struct{} // closed and replaced at every change of state
	down    chan struct{} // closed while the child is down for good
}

func (e *end) init(spec supervise.Spec, log *slog.Logger) {
	e.c = supervise.New(spec, log)
	e.changed, e.down = make(chan struct{}), make(chan struct{})
	e.c.OnState(e.set)
}

func (e *end) set(st supervise.Status) {
	e.mu.Lock()
	defer e.mu.Unlock()
	close(e.changed)
	e.changed = make(chan struct{})
	select {
	case <-e.down:
		if !DownState(st.State) {
			e.down = make(chan struct{})
		}
	default:
		if DownState(st.State) {
			close(e.down)
		}
	}
}

// DownState reports a state in which a child stays down until something
// starts it again: exited 125, left after a crash loop, or stopped.
func DownState(s supervise.State) bool {
	return s == supervise.StateExited || s == supervise.StateCrashLoop || s == supervise.StateStopped
}

// Status is a snapshot of the supervised child.
func (e *end) Status() supervise.Status { return e.c.Status() }

// Changed returns a channel closed at the next change of the child's
// state (starting, running, backoff, stopped, crashloop, exited).
func (e *end) Changed() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.changed
}

// Down returns a channel that is closed while the child is down for good
// as far as its supervisor knows (exited 125, crash loop, or stopped); a
// new start makes a new one.
func (e *end) Down() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.down
}

// OnState adds a hook for every change of state (supervise.Child.OnState).
func (e *end) OnState(f func(supervise.Status)) { e.c.OnState(f) }

// OnStart adds a hook for every start (supervise.Child.OnStart).
func (e *end) OnStart(f func(pid, restart int)) { e.c.OnStart(f) }

// Restart kills the running child so that it starts again at once.
func (e *end) Restart() { e.c.Restart() }

// Run supervises the child until ctx ends (supervise.Child.Run).
func (e *end) Run(ctx context.Context) error { return e.c.Run(ctx) }
