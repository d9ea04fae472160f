package xdp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"
	"go.uber.org/goleak"

	"github.com/yazses/yazses/internal/testportal"
	"github.com/yazses/yazses/internal/testwait"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBusAddress(t *testing.T) {
	rt := t.TempDir()
	if _, err := BusAddress([]string{"XDG_RUNTIME_DIR=" + rt}); !errors.Is(err, ErrNoBus) {
		t.Errorf("no variable, no socket: %v, want ErrNoBus", err)
	}
	if a, err := BusAddress([]string{"XDG_RUNTIME_DIR=" + rt, "DBUS_SESSION_BUS_ADDRESS=unix:path=/x"}); a != "unix:path=/x" || err != nil {
		t.Errorf("DBUS_SESSION_BUS_ADDRESS: %q, %v", a, err)
	}
	env := testportal.Bus(t)
	// The bus's own socket, found as $XDG_RUNTIME_DIR/bus.
	var addr string
	for _, kv := range env {
		if v, ok := cutPrefix(kv, "DBUS_SESSION_BUS_ADDRESS="); ok {
			addr = v
		}
	}
	sock, _ := cutPrefix(addr, "unix:path=")
	sock, _, _ = strings.Cut(sock, ",")
	if err := os.Symlink(sock, filepath.Join(rt, "bus")); err != nil {
		t.Fatal(err)
	}
	if a, err := BusAddress([]string{"XDG_RUNTIME_DIR=" + rt}); a != "unix:path="+filepath.Join(rt, "bus") || err != nil {
		t.Errorf("XDG_RUNTIME_DIR/bus: %q, %v", a, err)
	}
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return s, false
}

const rd = "org.freedesktop.portal.RemoteDesktop"

// session creates a RemoteDesktop session with a keyboard, not started.
func session(t *testing.T, c *Conn) dbus.ObjectPath {
	t.Helper()
	ctx := testwait.Context(t)
	res, err := c.Request(ctx, rd+".CreateSession", map[string]dbus.Variant{"session_handle_token": dbus.MakeVariant(c.Token("s"))})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := res["session_handle"].Value().(string)
	if _, err := c.Request(ctx, rd+".SelectDevices", map[string]dbus.Variant{"types": dbus.MakeVariant(uint32(1))}, dbus.ObjectPath(h)); err != nil {
		t.Fatal(err)
	}
	return dbus.ObjectPath(h)
}

// TestRequestCancelClosesTheDialog: a Request whose context ends is
// closed, and the desktop's dialog with it.
func TestRequestCancelClosesTheDialog(t *testing.T) {
	p := testportal.Start(t, testportal.Options{})
	p.Backend.HoldDialogs()
	c, err := Dial(testwait.Context(t), p.Env, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if v, err := c.Version(testwait.Context(t), rd); v != 1 || err != nil {
		t.Fatalf("Version = %d, %v; want 1", v, err)
	}
	h := session(t, c)
	ctx, cancel := context.WithCancel(testwait.Context(t))
	errc := make(chan error, 1)
	go func() {
		_, err := c.Request(ctx, rd+".Start", map[string]dbus.Variant{}, h, "")
		errc <- err
	}()
	if err := testwait.Until(testwait.Context(t), func() bool { return slices.Contains(p.Backend.Events(), "RemoteDesktop.Start") }, &p.Backend.Changed); err != nil {
		t.Fatal("the dialog never opened")
	}
	cancel()
	if err := testwait.Recv(t, errc, "the cancelled Start"); !errors.Is(err, context.Canceled) {
		t.Errorf("Start: %v, want context.Canceled", err)
	}
	if err := testwait.Until(testwait.Context(t), func() bool { return slices.Contains(p.Backend.Events(), "Request.Close") }, &p.Backend.Changed); err != nil {
		t.Errorf("the dialog's Request was not closed: %q\n%s", p.Backend.Events(), p.FrontendLog)
	}
	p.Backend.Answer(false) // let the backend's Start return
}

// TestRequestGone: the portal leaving the bus ends a waiting Request
// with ErrGone, and Owner follows.
func TestRequestGone(t *testing.T) {
	p := testportal.Start(t, testportal.Options{})
	p.Backend.HoldDialogs()
	c, err := Dial(testwait.Context(t), p.Env, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if o, ok := c.Owner(); o != p.Owner() || !ok {
		t.Errorf("Owner = %q, %v; want %q", o, ok, p.Owner())
	}
	h := session(t, c)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Request(testwait.Context(t), rd+".Start", map[string]dbus.Variant{}, h, "")
		errc <- err
	}()
	if err := testwait.Until(testwait.Context(t), func() bool { return slices.Contains(p.Backend.Events(), "RemoteDesktop.Start") }, &p.Backend.Changed); err != nil {
		t.Fatal("the dialog never opened")
	}
	p.StopFrontend()
	if err := testwait.Recv(t, errc, "Start with the portal gone"); !errors.Is(err, ErrGone) {
		t.Errorf("Start: %v, want ErrGone", err)
	}
	if o, ok := c.Owner(); o != "" || !ok {
		t.Errorf("Owner = %q, %v after the portal left; want \"\", true", o, ok)
	}
	p.Backend.Answer(false)
}

// TestNoPortal: an interface the portal does not offer is ErrNoPortal.
func TestNoPortal(t *testing.T) {
	p := testportal.Start(t, testportal.Options{Interfaces: []string{"GlobalShortcuts"}})
	c, err := Dial(testwait.Context(t), p.Env, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Version(testwait.Context(t), rd); !errors.Is(err, ErrNoPortal) {
		t.Errorf("Version of RemoteDesktop: %v, want ErrNoPortal", err)
	}
	if v, err := c.Version(testwait.Context(t), "org.freedesktop.portal.GlobalShortcuts"); v != 1 || err != nil {
		t.Errorf("Version of GlobalShortcuts = %d, %v", v, err)
	}
}

// TestPortalErr: how a bus error of a call to the portal reads. A portal
// that leaves the bus while a call waits for its reply (killed, or
// restarted by the session) is answered by the bus with NoReply: that is
// the portal gone, as a closed connection is, so callers recover the same
// way (TestRequestGone met it when the frontend died between taking Start
// and replying).
func TestPortalErr(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want error
	}{
		{dbus.Error{Name: "org.freedesktop.DBus.Error.NoReply"}, ErrGone},
		{dbus.ErrClosed, ErrGone},
		{dbus.Error{Name: errNoService}, ErrNoPortal},
		{dbus.Error{Name: "org.freedesktop.DBus.Error.UnknownMethod"}, ErrNoPortal},
	} {
		if got := portalErr("Start", tc.err); !errors.Is(got, tc.want) {
			t.Errorf("portalErr(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if got := portalErr("Start", dbus.Error{Name: "org.example.Other"}); errors.Is(got, ErrGone) || errors.Is(got, ErrNoPortal) || !strings.Contains(got.Error(), "org.example.Other") {
		t.Errorf("another error = %v, want it named, neither gone nor no portal", got)
	}
}
