package child

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/gate"
)

// TestGateFailsClosed (docs/design.md, invariant 5): every restart of the gate
// is started --spent and reported fail closed (gate_restarted); a daemon
// whose predecessor did not stop cleanly starts even its first gate
// --spent (daemon_restarted); a first start of a clean daemon is fresh.
// A new cap (a reload) goes with the next start.
func TestGateFailsClosed(t *testing.T) {
	for _, c := range []struct {
		name       string
		spentFirst bool
		restart    int
		perHour    int
		argv       []string
		reason     string
	}{
		{name: "first start", restart: 0, perHour: 3, argv: []string{"yaz-gate", "--per-hour", "3"}},
		{name: "restart after a crash", restart: 1, perHour: 3, argv: []string{"yaz-gate", "--per-hour", "3", "--spent"}, reason: daemonapi.FailClosedGate},
		{name: "the fifth start", restart: 4, perHour: 3, argv: []string{"yaz-gate", "--per-hour", "3", "--spent"}, reason: daemonapi.FailClosedGate},
		{name: "after an unclean daemon", spentFirst: true, restart: 0, perHour: 3, argv: []string{"yaz-gate", "--per-hour", "3", "--spent"}, reason: daemonapi.FailClosedDaemon},
		{name: "a reloaded cap", restart: 0, perHour: 7, argv: []string{"yaz-gate", "--per-hour", "7"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewGate(supervise.Spec{Name: "gate", Argv: []string{"yaz-gate"}}, 3, slog.New(slog.DiscardHandler))
			defer g.Close()
			if c.spentFirst {
				g.StartSpent(daemonapi.FailClosedDaemon)
			}
			g.SetPerHour(c.perHour)
			if got := g.argv(c.restart); !slices.Equal(got, c.argv) {
				t.Errorf("argv(%d) = %q, want %q", c.restart, got, c.argv)
			}
			files, err := g.files(c.restart)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				f.Close()
			}
			closed, why := g.FailClosed()
			if closed != (c.reason != "") || why != c.reason {
				t.Errorf("FailClosed() = %v, %q; want %v, %q", closed, why, c.reason != "", c.reason)
			}
		})
	}
}

// fakeGate answers the gate's status requests on the child's end of a
// start's socketpair; with broken it closes the connection at the first
// request instead.
func fakeGate(t *testing.T, f *os.File, used int, broken bool) <-chan struct{} {
	t.Helper()
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer conn.Close()
		sc := bufio.NewScanner(conn)
		for sc.Scan() {
			if broken {
				return
			}
			var req gate.Request
			if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
				return
			}
			b, _ := json.Marshal(gate.Reply{OK: true, Status: &gate.Status{PerHour: 3, Used: used}, ID: req.ID})
			conn.Write(append(b, '\n'))
		}
	}()
	return done
}

// startGate plays one start of the gate child: its socketpair, the
// fake gate on the child's end, and the supervisor's ready hook.
func startGate(t *testing.T, g *Gate, restart, used int, broken bool) <-chan struct{} {
	t.Helper()
	files, err := g.files(restart)
	if err != nil {
		t.Fatal(err)
	}
	done := fakeGate(t, files[0], used, broken)
	g.started(1000+restart, restart)
	return done
}

// TestGateDo: a call waits for a gate that is starting (up to its wait),
// fails with ErrGateDown when none comes, and a connection that breaks
// under it (the gate died) is tried once more on the restarted gate when
// the caller allows a retry, never more, and not at all otherwise.
func TestGateDo(t *testing.T) {
	status := func(g *Gate, ctx context.Context, wait time.Duration, retry bool) (gate.Status, error) {
		var st gate.Status
		err := g.Do(ctx, wait, retry, func(c *gate.Client) error {
			var err error
			st, err = c.Status(ctx)
			return err
		})
		return st, err
	}
	t.Run("none comes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := NewGate(supervise.Spec{Name: "gate", Argv: []string{"yaz-gate"}}, 3, slog.New(slog.DiscardHandler))
			defer g.Close()
			start := time.Now()
			if _, err := status(g, context.Background(), 5*time.Second, true); !errors.Is(err, ErrGateDown) {
				t.Errorf("Do with no gate = %v, want ErrGateDown", err)
			}
			if waited := time.Since(start); waited != 5*time.Second {
				t.Errorf("waited %v for the gate, want its wait, 5s", waited)
			}
		})
	})
	t.Run("waits for a starting gate", func(t *testing.T) {
		g := NewGate(supervise.Spec{Name: "gate", Argv: []string{"yaz-gate"}}, 3, slog.New(slog.DiscardHandler))
		got := make(chan error, 1)
		go func() {
			_, err := status(g, testwait.Context(t), testwait.Hang, false)
			got <- err
		}()
		done := startGate(t, g, 0, 1, false)
		if err := testwait.Recv(t, got, "Do once the gate is up"); err != nil {
			t.Errorf("Do = %v once the gate came up", err)
		}
		g.Close()
		testwait.Closed(t, done, "the fake gate to see its connection closed")
	})
	for _, c := range []struct {
		name          string
		retry         bool
		restartBroken bool // the restarted gate breaks the connection too
	}{
		{"broken, retried once", true, false},
		{"broken twice, not tried a third time", true, true},
		{"broken, not retried", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewGate(supervise.Spec{Name: "gate", Argv: []string{"yaz-gate"}}, 3, slog.New(slog.DiscardHandler))
			dead := startGate(t, g, 0, 0, true)
			got := make(chan error, 1)
			var st gate.Status
			go func() {
				var err error
				st, err = status(g, testwait.Context(t), testwait.Hang, c.retry)
				got <- err
			}()
			testwait.Closed(t, dead, "the first gate to break the connection")
			var fresh <-chan struct{}
			if c.retry {
				// The supervisor restarts the gate: the retry goes to it.
				fresh = startGate(t, g, 1, 2, c.restartBroken)
			}
			err := testwait.Recv(t, got, "Do's end")
			switch {
			case c.retry && !c.restartBroken && (err != nil || st.Used != 2):
				t.Errorf("Do with a retry = %+v, %v; want the restarted gate's status (used 2)", st, err)
			case (!c.retry || c.restartBroken) && !errors.Is(err, gate.ErrBroken):
				t.Errorf("Do = %v, want ErrBroken", err)
			}
			if closed, why := g.FailClosed(); c.retry && (!closed || why != daemonapi.FailClosedGate) {
				t.Errorf("after a restart FailClosed() = %v, %q; want gate_restarted", closed, why)
			}
			g.Close()
			if fresh != nil {
				testwait.Closed(t, fresh, "the restarted fake gate to end")
			}
		})
	}
}
