package xdp

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/yazses/yazses/internal/testportal"
	"github.com/yazses/yazses/internal/testwait"
)

// TestRegisterOldPortal: Debian 12's xdg-desktop-portal (1.16) has no
// host registry: Register says so (ErrNoRegistry), and the connection
// works as before.
func TestRegisterOldPortal(t *testing.T) {
	p := testportal.Start(t, testportal.Options{})
	c, err := Dial(testwait.Context(t), p.Env, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Register(testwait.Context(t), AppID); !errors.Is(err, ErrNoRegistry) {
		t.Fatalf("Register = %v, want ErrNoRegistry", err)
	}
	if v, err := c.Version(testwait.Context(t), rd); v != 1 || err != nil {
		t.Errorf("Version after Register = %d, %v; want 1", v, err)
	}
}

// TestRegisterNoPortal: no portal on the bus is ErrNoPortal.
func TestRegisterNoPortal(t *testing.T) {
	c, err := Dial(testwait.Context(t), testportal.Bus(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Register(testwait.Context(t), AppID); !errors.Is(err, ErrNoPortal) || errors.Is(err, ErrNoRegistry) {
		t.Fatalf("Register = %v, want ErrNoPortal", err)
	}
}

// registry is a portal with the host registry alone, as
// xdg-desktop-portal 1.19 and later has it (the test machine's portal is
// older): it records each Register and refuses what it is told to, in
// the portal's words.
type registry struct {
	mu     sync.Mutex
	calls  []string
	refuse string
	conn   *dbus.Conn
}

func (r *registry) Register(appID string, opts map[string]dbus.Variant) *dbus.Error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, appID)
	if r.refuse != "" {
		return dbus.NewError("org.freedesktop.portal.Error.Failed", []any{r.refuse})
	}
	return nil
}

func (r *registry) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// start puts the registry on the bus of env under the portal's name (a
// new owner each time).
func (r *registry) start(t *testing.T, env []string) {
	t.Helper()
	addr, err := BusAddress(env)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.Export(r, Path, RegistryIface); err != nil {
		t.Fatal(err)
	}
	if reply, err := conn.RequestName(Dest, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own %s: %v (%d)", Dest, err, reply)
	}
	r.conn = conn
}

// TestRegister: the id goes to the registry once for each portal: again
// for the same portal it is not sent (the portal refuses a second one),
// and a portal that came back is told again. A refusal comes back in the
// portal's words.
func TestRegister(t *testing.T) {
	env := testportal.Bus(t)
	r := &registry{}
	r.start(t, env)
	c, err := Dial(testwait.Context(t), env, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := testwait.Context(t)
	for range 2 {
		if err := c.Register(ctx, AppID); err != nil {
			t.Fatalf("Register = %v", err)
		}
	}
	if got := r.Calls(); len(got) != 1 || got[0] != AppID {
		t.Fatalf("the registry was told %q, want %s once", got, AppID)
	}
	// The portal restarts: a new owner of its name.
	first, _ := c.Owner()
	changed := c.Changed()
	r.conn.Close()
	testwait.Closed(t, changed, "the portal to leave")
	r.refuse = "Could not register app ID: App info not found for '" + AppID + "'"
	changed = c.Changed()
	r.start(t, env)
	testwait.Closed(t, changed, "the portal to come back")
	if o, _ := c.Owner(); o == first || o == "" {
		t.Fatalf("owner %q after the restart, first was %q", o, first)
	}
	err = c.Register(ctx, AppID)
	if err == nil || !strings.Contains(err.Error(), "App info not found") || errors.Is(err, ErrNoRegistry) {
		t.Errorf("Register with a new portal that refuses = %v, want its words", err)
	}
	if got := r.Calls(); len(got) != 2 {
		t.Errorf("the registry was told %q, want twice (once for each portal)", got)
	}
}
