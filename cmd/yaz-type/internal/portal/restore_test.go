package portal

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/internal/testportal"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/untrusted"
)

// The restore token cannot be tried with this machine's frontend:
// xdg-desktop-portal 1.16 drops persist_mode and restore_token from
// SelectDevices ("Remote desktop sessions cannot persist"; version 2 of
// RemoteDesktop, xdg-desktop-portal 1.17 on, keeps them). So the route's
// side of it is tried against a frontend of the test's own that speaks
// version 2 as its documentation says: SelectDevices takes persist_mode
// and restore_token, Start's results carry a new restore_token, and a
// valid token starts the session without a dialog.

// v2Portal is a fake org.freedesktop.portal.Desktop with RemoteDesktop
// version 2.
type v2Portal struct {
	conn *dbus.Conn

	mu      sync.Mutex
	selects []map[string]dbus.Variant
	dialogs int
	valid   string // the token that restores; "" none
	issued  int
	keys    []int32
}

func startV2(t *testing.T) (*v2Portal, []string) {
	t.Helper()
	env := testportal.Bus(t)
	addr := ""
	for _, kv := range env {
		if a, ok := strings.CutPrefix(kv, "DBUS_SESSION_BUS_ADDRESS="); ok {
			addr = a
		}
	}
	c, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p := &v2Portal{conn: c}
	if err := c.Export(v2RD{p}, "/org/freedesktop/portal/desktop", rdIface); err != nil {
		t.Fatal(err)
	}
	if _, err := prop.Export(c, "/org/freedesktop/portal/desktop", prop.Map{rdIface: {
		"version":              {Value: uint32(2)},
		"AvailableDeviceTypes": {Value: uint32(7)},
	}}); err != nil {
		t.Fatal(err)
	}
	if r, err := c.RequestName("org.freedesktop.portal.Desktop", dbus.NameFlagDoNotQueue); err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own the portal's name: %v %v", r, err)
	}
	return p, env
}

type v2RD struct{ p *v2Portal }

// respond answers a request as the frontend does: the Request's path
// from the caller's name and handle_token, then its Response signal.
func (r v2RD) respond(sender dbus.Sender, opts map[string]dbus.Variant, results map[string]dbus.Variant) (dbus.ObjectPath, *dbus.Error) {
	token, _ := opts["handle_token"].Value().(string)
	name := strings.ReplaceAll(strings.TrimPrefix(string(sender), ":"), ".", "_")
	path := dbus.ObjectPath("/org/freedesktop/portal/desktop/request/" + name + "/" + token)
	if err := r.p.conn.Emit(path, "org.freedesktop.portal.Request.Response", uint32(0), results); err != nil {
		return "", dbus.MakeFailedError(err)
	}
	return path, nil
}

func (r v2RD) CreateSession(sender dbus.Sender, opts map[string]dbus.Variant) (dbus.ObjectPath, *dbus.Error) {
	st, _ := opts["session_handle_token"].Value().(string)
	name := strings.ReplaceAll(strings.TrimPrefix(string(sender), ":"), ".", "_")
	s := "/org/freedesktop/portal/desktop/session/" + name + "/" + st
	return r.respond(sender, opts, map[string]dbus.Variant{"session_handle": dbus.MakeVariant(s)})
}

func (r v2RD) SelectDevices(sender dbus.Sender, s dbus.ObjectPath, opts map[string]dbus.Variant) (dbus.ObjectPath, *dbus.Error) {
	r.p.mu.Lock()
	r.p.selects = append(r.p.selects, opts)
	r.p.mu.Unlock()
	return r.respond(sender, opts, map[string]dbus.Variant{})
}

func (r v2RD) Start(sender dbus.Sender, s dbus.ObjectPath, parent string, opts map[string]dbus.Variant) (dbus.ObjectPath, *dbus.Error) {
	p := r.p
	p.mu.Lock()
	sel := p.selects[len(p.selects)-1]
	tok, _ := sel["restore_token"].Value().(string)
	if tok == "" || tok != p.valid {
		p.dialogs++
	}
	res := map[string]dbus.Variant{"devices": dbus.MakeVariant(uint32(deviceKeyboard))}
	if mode, _ := sel["persist_mode"].Value().(uint32); mode == persistUntilRevoked {
		p.issued++
		p.valid = fmt.Sprintf("tok-%d", p.issued) // each token restores once
		res["restore_token"] = dbus.MakeVariant(p.valid)
	}
	p.mu.Unlock()
	return r.respond(sender, opts, res)
}

func (r v2RD) NotifyKeyboardKeysym(s dbus.ObjectPath, opts map[string]dbus.Variant, ks int32, state uint32) *dbus.Error {
	r.p.mu.Lock()
	r.p.keys = append(r.p.keys, ks)
	r.p.mu.Unlock()
	return nil
}

func (p *v2Portal) state() (dialogs int, selects []map[string]dbus.Variant, keys int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dialogs, append([]map[string]dbus.Variant(nil), p.selects...), len(p.keys)
}

// TestRestoreToken: the first start asks (persist until revoked), keeps
// the token 0600 in the state folder and says consent is stored; a
// restart sends it, is not asked again, and keeps the new one.
func TestRestoreToken(t *testing.T) {
	p, env := startV2(t)
	var notes []string
	var mu sync.Mutex
	setHooks(t, func(context.Context, []string) (string, error) { return testportal.Keymap(t, "us"), nil },
		func(backend.Options) clipboard { return nil })
	o := backend.Options{
		Environ:  env,
		StateDir: filepath.Join(t.TempDir(), "state"),
		Notify:   func(k string) { mu.Lock(); notes = append(notes, k); mu.Unlock() },
		Log:      slog.New(slog.NewTextHandler(testWriter{t}, nil)),
	}.WithDefaults()
	r := New(o)
	t.Cleanup(r.Close)
	r.Prepare()
	st := waitState(t, r, StateReady)
	if !strings.HasPrefix(st.Consent, consentStored) {
		t.Errorf("consent %q, want it stored", st.Consent)
	}
	path := filepath.Join(o.StateDir, TokenFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("no token kept: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(path); strings.TrimSpace(string(b)) != "tok-1" {
		t.Errorf("token file holds %q, want tok-1", b)
	}
	if err := r.Type(testwait.Context(t), untrusted.Typed("ok")); err != nil {
		t.Fatalf("Type: %v", err)
	}

	r.Close() // the daemon stops, and starts again
	r.Prepare()
	waitState(t, r, StateReady)
	dialogs, selects, keys := p.state()
	if dialogs != 1 {
		t.Errorf("%d dialogs after a restart with the token, want 1", dialogs)
	}
	if len(selects) != 2 {
		t.Fatalf("%d SelectDevices, want 2", len(selects))
	}
	for i, want := range []string{"", "tok-1"} {
		got, _ := selects[i]["restore_token"].Value().(string)
		mode, _ := selects[i]["persist_mode"].Value().(uint32)
		if got != want || mode != persistUntilRevoked {
			t.Errorf("SelectDevices %d: restore_token %q persist_mode %d, want %q and %d", i, got, mode, want, persistUntilRevoked)
		}
	}
	if b, _ := os.ReadFile(path); strings.TrimSpace(string(b)) != "tok-2" {
		t.Errorf("token file holds %q after the restore, want the new tok-2", b)
	}
	mu.Lock()
	if len(notes) != 1 {
		t.Errorf("notifications %q, want one (before the only dialog)", notes)
	}
	mu.Unlock()
	if keys != 4 {
		t.Errorf("%d key calls, want 4 (o, k pressed and released)", keys)
	}
}

// TestTokenNotTheUsers: a token file others may read is not sent.
func TestTokenNotTheUsers(t *testing.T) {
	dir := t.TempDir()
	o := backend.Options{StateDir: dir}
	if err := writeToken(o, "secret"); err != nil {
		t.Fatal(err)
	}
	if got := readToken(o); got != "secret" {
		t.Fatalf("readToken = %q", got)
	}
	if err := os.Chmod(filepath.Join(dir, TokenFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := readToken(o); got != "" {
		t.Errorf("readToken of a 0644 file = %q, want none", got)
	}
}
