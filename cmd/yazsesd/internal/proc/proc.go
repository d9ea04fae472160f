// Package proc is what each of yazsesd's child ends is built on (the
// ends in packages child and mic): Process, the supervised child with its
// state shown as channels rather than as flags to poll (Changed, Down)
// and the goroutines the end starts for it, which Run waits for; Level, a
// condition others wait for (a child up, or down for good); and Group,
// the goroutines an end owns.
package proc

import (
	"context"
	"log/slog"
	"sync"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/lib/bcast"
)

// Process is what every child end has: the supervised process, its state
// as channels, and the goroutines the end starts for it. An end embeds
// it and calls Init once, in its constructor.
type Process struct {
	c *supervise.Child

	changed bcast.Signal // at every change of state

	downMu sync.Mutex
	down   Level // while the child is down for good (State.Down)

	// Goroutines are the goroutines the end starts for its child (the
	// readers of its pipes, the writer of a decoder's turn): Run waits
	// for them.
	Goroutines Group
}

// Init sets the supervision of the child run as spec up.
func (p *Process) Init(spec supervise.Spec, log *slog.Logger) {
	p.c = supervise.New(spec, log)
	p.c.OnState(p.set)
}

func (p *Process) set(st supervise.Status) {
	p.downMu.Lock()
	p.down.Set(st.State.Down())
	p.downMu.Unlock()
	p.changed.Broadcast()
}

// Status is a snapshot of the supervised child.
func (p *Process) Status() supervise.Status { return p.c.Status() }

// Changed returns a channel closed at the next change of the child's
// state (starting, running, backoff, stopped, crashloop, exited), or of
// the end's own (Changes).
func (p *Process) Changed() <-chan struct{} { return p.changed.C() }

// Changes is the signal behind Changed: the end broadcasts on it when a
// state of its own changes (the typing child ready with new settings).
func (p *Process) Changes() *bcast.Signal { return &p.changed }

// Down returns a channel that is closed while the child is down for good
// as far as its supervisor knows (supervise.State.Down: exited 125, crash
// loop, or stopped); a new start makes a new one.
func (p *Process) Down() <-chan struct{} {
	p.downMu.Lock()
	defer p.downMu.Unlock()
	return p.down.C()
}

// OnState adds a hook for every change of state (supervise.Child.OnState).
func (p *Process) OnState(f func(supervise.Status)) { p.c.OnState(f) }

// OnStart adds a hook for every start (supervise.Child.OnStart).
func (p *Process) OnStart(f func(pid, restart int)) { p.c.OnStart(f) }

// Restart kills the running child so that it starts again at once.
func (p *Process) Restart() { p.c.Restart() }

// Run supervises the child until ctx ends (supervise.Child.Run), then
// waits for the goroutines the end started for it: they end with the
// child's pipes.
func (p *Process) Run(ctx context.Context) error {
	err := p.c.Run(ctx)
	p.Goroutines.Wait()
	return err
}

// Level is a condition that others wait for (the child is up, or down for
// good): C returns a channel closed while it holds. Its owner guards it
// with a lock of its own.
type Level struct {
	on  bool
	sig bcast.Signal // at every change from off to on
}

// closedChan is what C returns while the condition holds.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Set says whether the condition holds.
func (l *Level) Set(on bool) {
	if on && !l.on {
		l.sig.Broadcast()
	}
	l.on = on
}

// C returns a channel closed while the condition holds: at once when it
// does, else at its next change to on.
func (l *Level) C() <-chan struct{} {
	if l.on {
		return closedChan
	}
	return l.sig.C()
}

// Group owns goroutines: Wait returns once every one started with Go has
// ended, and unlike a sync.WaitGroup it may be waited for while more are
// started (a decode that begins as the daemon stops): Wait then waits for
// them too.
type Group struct {
	mu   sync.Mutex
	n    int
	idle bcast.Signal // when n drops to 0
}

// Go runs f on a goroutine that Wait waits for.
func (g *Group) Go(f func()) {
	g.mu.Lock()
	g.n++
	g.mu.Unlock()
	go func() {
		defer g.done()
		f()
	}()
}

func (g *Group) done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n--; g.n == 0 {
		g.idle.Broadcast()
	}
}

// Wait waits until no goroutine of the group runs.
func (g *Group) Wait() {
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
