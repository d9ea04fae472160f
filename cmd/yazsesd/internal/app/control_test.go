package app

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
	"github.com/yazses/yazses/lib/safesocket"
)

// serveAs serves every method `yazsesd ctl` and status call on ln; each
// answers with who (in the hold state, the version, the last text), so a
// test sees which socket a command reached.
func serveAs(t *testing.T, ln net.Listener, who string) {
	t.Helper()
	s := jsonrpc.NewServer(nil)
	for _, m := range daemonapi.Methods {
		s.Handle(m, func(context.Context, json.RawMessage) (any, error) {
			switch {
			case m == daemonapi.MethodStatus:
				return daemonapi.Status{Version: who}, nil
			case strings.HasPrefix(m, "hold."):
				return daemonapi.HoldResult{Hold: who}, nil
			}
			return map[string]string{"by": who}, nil
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := testwait.Recv(t, done, "the stub's Serve to return"); err != nil {
			t.Errorf("stub Serve = %v", err)
		}
	})
}

// runOK runs yazsesd with args and returns its stdout; it must exit 0.
func runOK(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := Main(testwait.Context(t), args, strings.NewReader(""), &out, &errOut, "test"); code != 0 {
		t.Fatalf("yazsesd %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
	}
	return out.String()
}

// TestCtlUsesControlSocket: `ctl hold …`, `ctl status` and `status` go to
// the control socket when there is one, and to the main socket when there
// is none (an older daemon); other methods always go to the main socket.
func TestCtlUsesControlSocket(t *testing.T) {
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
	serveAs(t, ln, "main")

	hold := func() string {
		var h daemonapi.HoldResult
		out := runOK(t, "ctl", "hold", "start")
		if err := json.Unmarshal([]byte(out), &h); err != nil {
			t.Fatalf("ctl hold start printed %q: %v", out, err)
		}
		return h.Hold
	}
	status := func(args ...string) string {
		var st daemonapi.Status
		out := runOK(t, args...)
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("%s printed %q: %v", strings.Join(args, " "), out, err)
		}
		return st.Version
	}
	if got := hold(); got != "main" {
		t.Errorf("ctl hold start without a control socket reached %q; want main", got)
	}
	if got := status("status", "--format", "json"); got != "main" {
		t.Errorf("status without a control socket reached %q; want main", got)
	}

	ctl, err := ln.Beside(safesocket.ControlName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close() })
	serveAs(t, ctl, "control")
	if got := hold(); got != "control" {
		t.Errorf("ctl hold start reached %q; want the control socket", got)
	}
	for _, args := range [][]string{{"ctl", "status"}, {"status", "--format", "json"}} {
		if got := status(args...); got != "control" {
			t.Errorf("%s reached %q; want the control socket", strings.Join(args, " "), got)
		}
	}
	if out := runOK(t, "ctl", "last"); !strings.Contains(out, `"main"`) {
		t.Errorf("ctl last printed %q; want the main socket's answer", out)
	}
}
