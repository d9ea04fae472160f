package daemonapi

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"testing"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/jsonrpc"
	"github.com/yazses/yazses/lib/safesocket"
)

// serveStatus serves status on ln, answering with version, until the test
// ends.
func serveStatus(t *testing.T, ln net.Listener, version string) {
	t.Helper()
	s := jsonrpc.NewServer(nil)
	s.Handle(MethodStatus, func(context.Context, json.RawMessage) (any, error) {
		return Status{Version: version}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := testwait.Recv(t, done, "Serve to return"); err != nil {
			t.Errorf("Serve = %v", err)
		}
	})
}

// answeredBy dials with dial and says whose status answered.
func answeredBy(t *testing.T, dial func(context.Context) (*Client, error)) string {
	t.Helper()
	ctx := testwait.Context(t)
	c, err := dial(ctx)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	return st.Version
}

// TestDialControl: DialControl reaches the control socket when there is
// one, and the main socket when there is none (an older daemon), or when
// the control socket is stale; Dial always reaches the main socket.
func TestDialControl(t *testing.T) {
	base := t.TempDir()
	if err := os.Chmod(base, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", base)
	dir, err := safesocket.Dir(base)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := safesocket.Listen(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	serveStatus(t, ln, "main")

	if got := answeredBy(t, DialControl); got != "main" {
		t.Errorf("DialControl with no control socket reached %q; want the main socket", got)
	}

	// A stale control socket (bound, closed, left on disk).
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: safesocket.ControlPath(dir), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	if got := answeredBy(t, DialControl); got != "main" {
		t.Errorf("DialControl with a stale control socket reached %q; want the main socket", got)
	}

	ctl, err := ln.Beside(safesocket.ControlName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close() })
	serveStatus(t, ctl, "control")
	if got := answeredBy(t, DialControl); got != "control" {
		t.Errorf("DialControl reached %q; want the control socket", got)
	}
	if got := answeredBy(t, Dial); got != "main" {
		t.Errorf("Dial reached %q; want the main socket", got)
	}
}

// TestIsControl: the control socket's methods are hold.* and status.
func TestIsControl(t *testing.T) {
	for _, m := range Methods {
		want := m == MethodStatus || m == MethodHoldStart || m == MethodHoldStop || m == MethodHoldToggle || m == MethodHoldCancel
		if got := IsControl(m); got != want {
			t.Errorf("IsControl(%q) = %v, want %v", m, got, want)
		}
	}
}
