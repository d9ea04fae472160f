package child

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/gate"
)

// ErrGateDown is returned when no gate answers within the wait.
var ErrGateDown = errors.New("gate unavailable")

// Gate is the daemon's end of yaz-gate: a fresh socketpair for every
// start of the child, and the gate.Client on it once the child is ready.
// A gate that was restarted after a crash starts fully spent (--spent), and
// so does the first gate of a daemon whose predecessor did not stop cleanly
// (StartSpent); the end remembers that, and why, for status.
type Gate struct {
	process

	mu         sync.Mutex
	base       []string     // the configured command
	pending    net.Conn     // our end for the child being started
	client     *gate.Client // nil while the gate is down
	up         level        // client is set
	failClosed bool
	reason     string // why failClosed: daemonapi.FailClosedGate or FailClosedDaemon
	spentFirst bool   // the first start too gets --spent
	perHour    int
}

// NewGate returns the end of the gate child: spec.Argv is the configured
// command, to which the cap and --spent are added at each start.
func NewGate(spec supervise.Spec, perHour int, log *slog.Logger) *Gate {
	g := &Gate{perHour: perHour, base: spec.Argv}
	spec.Argv = nil
	spec.ArgvFor, spec.Files = g.argv, g.files
	spec.FDNames, spec.Ready = []string{"gate"}, true
	g.init(spec, log)
	g.OnStart(g.started)
	return g
}

// argv returns the gate's command line for start number restart: the
// configured command, the cap, and --spent on every restart (fail closed),
// and on the first start after an unclean end of the previous daemon.
func (g *Gate) argv(restart int) []string {
	g.mu.Lock()
	perHour, spentFirst := g.perHour, g.spentFirst
	g.mu.Unlock()
	argv := append(append([]string(nil), g.base...), "--per-hour", strconv.Itoa(perHour))
	if restart > 0 || spentFirst {
		argv = append(argv, "--spent")
	}
	return argv
}

// files makes the socketpair for one start: the child gets one end as fd
// 3, we keep the other for the client made in started.
func (g *Gate) files(restart int) ([]*os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("gate socketpair: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "gate-daemon")
	theirs := os.NewFile(uintptr(fds[1]), "gate")
	conn, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		theirs.Close()
		return nil, fmt.Errorf("gate socketpair: %w", err)
	}
	g.mu.Lock()
	g.dropLocked()
	if g.pending != nil {
		g.pending.Close()
	}
	g.pending = conn
	if restart > 0 {
		g.failClosed, g.reason = true, daemonapi.FailClosedGate
	}
	g.mu.Unlock()
	return []*os.File{theirs}, nil
}

// started is the supervisor's start hook: the child is ready.
func (g *Gate) started(pid, restart int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pending == nil {
		return
	}
	g.client = gate.NewClient(g.pending)
	g.pending = nil
	g.up.set(true)
}

// dropLocked forgets the current client (its gate is gone).
func (g *Gate) dropLocked() {
	if g.client == nil {
		return
	}
	g.client.Close()
	g.client = nil
	g.up.set(false)
}

// get returns the gate client, waiting up to wait (and ctx) for a gate
// that is starting or restarting.
func (g *Gate) get(ctx context.Context, wait time.Duration) (*gate.Client, error) {
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		g.mu.Lock()
		c, up := g.client, g.up.C()
		g.mu.Unlock()
		if c != nil {
			return c, nil
		}
		select {
		case <-up:
		case <-t.C:
			return nil, ErrGateDown
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// broken reports that c failed with a broken connection: forget it.
func (g *Gate) broken(c *gate.Client) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.client == c {
		g.dropLocked()
	}
}

// Do runs f on the gate client, waiting up to wait for a gate that is
// (re)starting. A broken connection (the gate died) is retried once on
// the restarted gate when retry is true.
func (g *Gate) Do(ctx context.Context, wait time.Duration, retry bool, f func(*gate.Client) error) error {
	for attempt := 0; ; attempt++ {
		c, err := g.get(ctx, wait)
		if err != nil {
			return err
		}
		err = f(c)
		if errors.Is(err, gate.ErrBroken) {
			g.broken(c)
			if retry && attempt == 0 {
				continue
			}
		}
		return err
	}
}

// SetPerHour sets the cap for the next start of the gate.
func (g *Gate) SetPerHour(n int) {
	g.mu.Lock()
	g.perHour = n
	g.mu.Unlock()
}

// FailClosed says whether the gate is fail closed, and why
// (daemonapi.FailClosedGate or FailClosedDaemon; "" when it is not).
func (g *Gate) FailClosed() (bool, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.failClosed {
		return false, ""
	}
	return true, g.reason
}

// StartSpent makes the gate start fully spent from its first start on,
// for reason (call it before the gate starts).
func (g *Gate) StartSpent(reason string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.spentFirst, g.failClosed, g.reason = true, true, reason
}

// Close closes the connection to the gate (it exits at EOF).
func (g *Gate) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.dropLocked()
	if g.pending != nil {
		g.pending.Close()
		g.pending = nil
	}
}
