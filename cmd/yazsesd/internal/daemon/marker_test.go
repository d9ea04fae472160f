package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/safesocket"
)

// markerFile is the crash marker's name in the state folder (and, for an
// older daemon, in the runtime folder), spelled out.
const markerFile = "yazsesd.running"

// thisBoot is this boot's id, as the marker records it.
func thisBoot(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// fakeConfig is the default configuration with questions on and every
// child fakeChild.
func fakeConfig() config.Config {
	cfg := config.Default()
	cfg.MCP.AskHuman = true
	cfg.Children.Gate, cfg.Children.Speak, cfg.Children.Decode, cfg.Children.Capture = fakeChild, fakeChild, fakeChild, fakeChild
	return cfg
}

// runFakeDaemon runs a daemon of fakeConfig (runDaemon).
func runFakeDaemon(t *testing.T, run, state string) (<-chan error, func()) {
	t.Helper()
	return runDaemon(t, run, state, fakeConfig())
}

// runDaemon runs a daemon of cfg in runtime folder run, with its audit
// (and so its state folder) in state. It returns Run's error channel and
// a stop.
func runDaemon(t *testing.T, run, state string, cfg config.Config) (<-chan error, func()) {
	t.Helper()
	if err := os.MkdirAll(run, 0o700); err != nil {
		t.Fatal(err)
	}
	d, err := New(Options{Config: cfg, Log: slog.New(slog.DiscardHandler), RuntimeDir: run,
		AuditPath: filepath.Join(state, "audit.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- d.Run(ctx, nil) }()
	return errc, cancel
}

// dialFake waits until the daemon in run answers on its socket (its
// name appears only once it listens: safesocket renames it into place),
// bounded by testwait.Hang, and connects to it. A daemon that ended
// before it listened fails the test.
func dialFake(t *testing.T, run string, errc <-chan error) *daemonapi.Client {
	t.Helper()
	sock := filepath.Join(run, "yazsesd.sock")
	w, err := testwait.WatchFile(sock) // run exists: runFakeDaemon made it
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := testwait.Context(t)
	var conn net.Conn
	err = testwait.Until(ctx, func() bool {
		if len(errc) > 0 { // Run returned; its error stays for the caller
			return true
		}
		if _, err := os.Lstat(sock); err != nil {
			return false
		}
		c, err := safesocket.Dial(ctx, run)
		if err != nil {
			return false // an old daemon's socket, not yet replaced
		}
		conn = c
		return true
	}, w)
	switch {
	case conn != nil:
	case len(errc) > 0:
		t.Fatalf("the daemon ended before it listened: %v", <-errc)
	default:
		t.Fatalf("the daemon did not listen in %s: %v", run, err)
	}
	c := daemonapi.NewClient(conn)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestMarkerWriteFailsClosed: a daemon whose crash
// marker cannot be written (ENOSPC: a full folder) speaks no question:
// ask_human is unavailable, reason state_unavailable, status says why,
// and the audit says it once. Once the marker can be written, the next
// ask_human writes it (and goes on to the gate) and status is clear.
// (It used to log an error and serve: a crash then gave a fresh budget.)
func TestMarkerWriteFailsClosed(t *testing.T) {
	var full atomic.Bool
	full.Store(true)
	writeMarker = func(name string, data []byte, perm os.FileMode) error {
		if full.Load() {
			return &os.PathError{Op: "write", Path: name, Err: syscall.ENOSPC}
		}
		return os.WriteFile(name, data, perm)
	}
	t.Cleanup(func() { writeMarker = nil })
	dir, err := os.MkdirTemp("", "ymk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	run, state := filepath.Join(dir, "run"), filepath.Join(dir, "state")
	errc, stop := runFakeDaemon(t, run, state)
	c := dialFake(t, filepath.Join(run), errc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	r, err := c.AskHuman(ctx, daemonapi.AskParams{Question: "Is the marker written?", TimeoutS: 5})
	if err != nil || r.Result != daemonapi.Unavailable || r.Reason != daemonapi.ReasonStateUnavailable {
		t.Errorf("ask_human with no marker = %+v, %v; want unavailable state_unavailable", r, err)
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.StateFailing, "crash marker") || !strings.Contains(st.StateFailing, "no space left") {
		t.Errorf("status state_failing = %q, want the crash marker and the cause (no space left)", st.StateFailing)
	}
	if _, err := os.Lstat(filepath.Join(state, markerFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a marker exists although every write failed: %v", err)
	}

	full.Store(false) // the space is freed
	r, err = c.AskHuman(ctx, daemonapi.AskParams{Question: "And now?", TimeoutS: 5})
	if err != nil || r.Reason == daemonapi.ReasonStateUnavailable {
		t.Errorf("ask_human once the marker can be written = %+v, %v; want it past the marker (to the fake gate)", r, err)
	}
	if st, err := c.Status(ctx); err != nil || st.StateFailing != "" {
		t.Errorf("status state_failing = %q (%v) once the marker is written, want empty", st.StateFailing, err)
	}
	if _, err := os.Stat(filepath.Join(state, markerFile)); err != nil {
		t.Errorf("no marker after the retry: %v", err)
	}
	c.Close()
	stop()
	if err := <-errc; err != nil {
		t.Fatalf("Run = %v", err)
	}
	evs, err := audit.Read(filepath.Join(state, "audit.jsonl"), 100)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Kind == "marker.failing" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d marker.failing audit events, want 1", n)
	}
}

// TestSecondDaemonOtherRuntimeRefused: a second daemon
// of the same user with another runtime folder (XDG_RUNTIME_DIR) but the
// same state folder refuses to start, naming the first one's pid and
// socket; it used to start with a fresh budget and write the same audit.
func TestSecondDaemonOtherRuntimeRefused(t *testing.T) {
	dir, err := os.MkdirTemp("", "ymk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	state := filepath.Join(dir, "state")
	run1, run2 := filepath.Join(dir, "run1"), filepath.Join(dir, "run2")
	errc1, stop1 := runFakeDaemon(t, run1, state)
	dialFake(t, run1, errc1)

	errc2, stop2 := runFakeDaemon(t, run2, state)
	select {
	case err := <-errc2:
		var are *safesocket.AlreadyRunningError
		if !errors.As(err, &are) || are.PID != os.Getpid() || are.Socket != safesocket.SocketPath(run1) {
			t.Errorf("second daemon: %v, want ErrAlreadyRunning naming pid %d and socket %s", err, os.Getpid(), safesocket.SocketPath(run1))
		}
	case <-time.After(testwait.Hang):
		t.Errorf("a second daemon with another runtime folder still runs %v after its start; want it refused", testwait.Hang)
		stop2()
		<-errc2
	}
	stop2()
	if _, err := os.Lstat(safesocket.SocketPath(run2)); err == nil {
		t.Error("the refused daemon left a socket in its runtime folder")
	}
	stop1()
	if err := <-errc1; err != nil {
		t.Fatalf("first daemon: Run = %v", err)
	}
}

// TestLegacyMarkerCountsUnclean: a daemon from before the marker moved
// to the state folder left its marker in the runtime folder (the socket's,
// $XDG_RUNTIME_DIR/yazses/yazsesd.running); a new daemon started after it
// was killed, across an upgrade, reads it too: the start counts as after
// an unclean stop (the budget starts spent: audit budget.fail_closed),
// and the old marker is removed once this daemon's own is written, so
// the start after this one's clean stop is fresh. A legacy marker of
// another boot, as in the state folder, is not unclean. (A new daemon
// used to ignore it: one kill across the upgrade gave a fresh budget.)
func TestLegacyMarkerCountsUnclean(t *testing.T) {
	for _, c := range []struct {
		name, body string
		unclean    bool
	}{
		{"none", "", false},
		{"this boot", "boot_id=" + thisBoot(t) + "\npid=12\n", true},
		{"garbage", "\x00garbage", true},
		{"another boot", "boot_id=another-boot\npid=12\n", false},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			dir, err := os.MkdirTemp("", "ymk")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			run, state := filepath.Join(dir, "run"), filepath.Join(dir, "state")
			legacy := filepath.Join(run, markerFile)
			if c.body != "" {
				if err := os.MkdirAll(run, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(legacy, []byte(c.body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			spentStarts := func() int {
				t.Helper()
				evs, err := audit.Read(filepath.Join(state, "audit.jsonl"), 100)
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, e := range evs {
					if e.Kind == "budget.fail_closed" && e.Reason == daemonapi.FailClosedDaemon {
						n++
					}
				}
				return n
			}
			for i, want := range []bool{c.unclean, false} { // the upgrade, then a start after a clean stop
				errc, stop := runFakeDaemon(t, run, state)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				if _, err := dialFake(t, run, errc).Status(ctx); err != nil { // it serves: past the marker
					t.Fatal(err)
				}
				cancel()
				if _, err := os.Lstat(legacy); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("start %d: the legacy marker is still there (%v)", i+1, err)
				}
				if _, err := os.Stat(filepath.Join(state, markerFile)); err != nil {
					t.Errorf("start %d: no marker in the state folder: %v", i+1, err)
				}
				stop()
				if err := <-errc; err != nil {
					t.Fatalf("start %d: Run = %v", i+1, err)
				}
				wantN := 0
				if c.unclean {
					wantN = 1 // the first start only
				}
				if n := spentStarts(); n != wantN {
					t.Errorf("after start %d (unclean %v): %d starts spent (budget.fail_closed daemon), want %d", i+1, want, n, wantN)
				}
			}
		})
	}
}
