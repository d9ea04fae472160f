package child

import (
	"context"
	"log/slog"
	"sync"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/lib/bcast"
)

// process is what every child end has: the supervised process, its state
// as channels, and the goroutines the end starts for it (the readers of
// its pipes, the writer of a decoder's turn), which Run waits for.
type process struct {
	c *supervise.Child

	changed bcast.Signal // at every change of state

	downMu sync.Mutex
	down   level // while the child is down for good (State.Down)

	goroutines group
}

func (p *process) init(spec supervise.Spec, log *slog.Logger) {
	p.c = supervise.New(spec, log)
	p.c.OnState(p.set)
}

func (p *process) set(st supervise.Status) {
	p.downMu.Lock()
	p.down.set(st.State.Down())
	p.downMu.Unlock()
	p.changed.Broadcast()
}

// Status is a snapshot of the supervised child.
func (p *process) Status() supervise.Status { return p.c.Status() }

// Changed returns a channel closed at the next change of the child's
// state (starting, running, backoff, stopped, crashloop, exited).
func (p *process) Changed() <-chan struct{} { return p.changed.C() }

// Down returns a channel that is closed while the child is down for good
// as far as its supervisor knows (supervise.State.Down: exited 125, crash
// loop, or stopped); a new start makes a new one.
func (p *process) Down() <-chan struct{} {
	p.downMu.Lock()
	defer p.downMu.Unlock()
	return p.down.C()
}

// OnState adds a hook for every change of state (supervise.Child.OnState).
func (p *process) OnState(f func(supervise.Status)) { p.c.OnState(f) }

// OnStart adds a hook for every start (supervise.Child.OnStart).
func (p *process) OnStart(f func(pid, restart int)) { p.c.OnStart(f) }

// Restart kills the running child so that it starts again at once.
func (p *process) Restart() { p.c.Restart() }

// Run supervises the child until ctx ends (supervise.Child.Run), then
// waits for the goroutines the end started for it: they end with the
// child's pipes.
func (p *process) Run(ctx context.Context) error {
	err := p.c.Run(ctx)
	p.goroutines.Wait()
	return err
}

// level is a condition that others wait for (the child is up, or down for
// good): C returns a channel closed while it holds. Its owner guards it
// with a lock of its own.
type level struct {
	on  bool
	sig bcast.Signal // at every change from off to on
}

// closedChan is what C returns while the condition holds.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (l *level) set(on bool) {
	if on && !l.on {
		l.sig.Broadcast()
	}
	l.on = on
}

// C returns a channel closed while the condition holds: at once when it
// does, else at its next change to on.
func (l *level) C() <-chan struct{} {
	if l.on {
		return closedChan
	}
	return l.sig.C()
}

// group owns goroutines: Wait returns once every one started with Go has
// ended, and unlike a sync.WaitGroup it may be waited for while more are
// started (a decode that begins as the daemon stops): Wait then waits for
// them too.
type group struct {
	mu   sync.Mutex
	n    int
	idle bcast.Signal // when n drops to 0
}

// Go runs f on a goroutine that Wait waits for.
func (g *group) Go(f func()) {
	g.mu.Lock()
	g.n++
	g.mu.Unlock()
	go func() {
		defer g.done()
		f()
	}()
}

func (g *group) done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n--; g.n == 0 {
		g.idle.Broadcast()
	}
}

// Wait waits until no goroutine of the group runs.
func (g *group) Wait() {
	for {
		idle := g.idle.C()
		g.mu.Lock()
		n := g.n
		g.mu.Unlock()
		if n == 0 {
			return
		}
		<-idle
	}
}
