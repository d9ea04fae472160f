package shortcut

import (
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/yazses/yazses/internal/testdesk"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/xdp"
)

// GNOME keeps an application's shortcuts in GSettings, the schema
// org.gnome.settings-daemon.global-shortcuts.application at
// /org/gnome/settings-daemon/global-shortcuts/<app id>/ (key shortcuts:
// each shortcut id with its description and its accelerators), and lists
// the application under org.gnome.settings-daemon.global-shortcuts
// applications. A bind whose every shortcut is kept there asks nothing.
const (
	appSchema = "org.gnome.settings-daemon.global-shortcuts.application:/org/gnome/settings-daemon/global-shortcuts/" + xdp.AppID + "/"
	// kept is what GNOME stores when the person adds YazSes's shortcut
	// with the key the daemon proposed (KEY_PAUSE).
	kept = "[('push-to-talk', {'shortcuts': <['Pause']>, 'description': <'Hold to dictate (YazSes)'>})]"
)

// dconfWatch follows the changes of the desk's settings: dconf's writer
// announces each on the session bus (ca.desrt.dconf.Writer Notify), and
// GNOME writes what a portal's bind keeps after it has answered the
// bind. settled reads `gsettings get` args again after each change until
// ok accepts it, and returns it; the match is in place before anything
// the test does after dconfWatch, so no change is missed.
func dconfWatch(t *testing.T, d *testdesk.Desk) (settled func(what string, ok func(string) bool, args ...string) string) {
	t.Helper()
	bus, err := dbus.Connect(d.SessionBus)
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.AddMatchSignal(dbus.WithMatchInterface("ca.desrt.dconf.Writer"), dbus.WithMatchMember("Notify")); err != nil {
		t.Fatal(err)
	}
	changed := make(chan *dbus.Signal, 64)
	bus.Signal(changed)
	t.Cleanup(func() { bus.Close() })
	return func(what string, ok func(string) bool, args ...string) string {
		t.Helper()
		timer := time.NewTimer(testwait.Hang)
		defer timer.Stop()
		for {
			got := strings.TrimSpace(d.Run(t, "gsettings", append([]string{"get"}, args...)...))
			if ok(got) {
				return got
			}
			select {
			case <-changed:
			case <-timer.C:
				t.Fatalf("waiting for %s: GNOME keeps %s after %v", what, got, testwait.Hang)
			}
		}
	}
}

// pressRelease presses and releases Pause on the desk's keyboard and
// wants a hold started and stopped.
func pressRelease(t *testing.T, d *testdesk.Desk, l *listener) {
	t.Helper()
	ctx := testwait.Context(t)
	if err := d.Key(ctx, testdesk.KeyPause, true); err != nil {
		t.Fatal(err)
	}
	l.next(t, true, "the press of Pause")
	if err := d.Key(ctx, testdesk.KeyPause, false); err != nil {
		t.Fatal(err)
	}
	l.next(t, false, "the release of Pause")
}

// TestOnGNOME: push-to-talk through the real GNOME 48 GlobalShortcuts
// (xdg-desktop-portal 1.20, xdg-desktop-portal-gnome 48, the shortcut
// provider of gnome-control-center), with YazSes's .desktop file
// installed as make install installs it.
//
// The daemon registers its application id before anything else, so GNOME
// asks the person, in its "Add Keyboard Shortcuts" window, which the test
// answers as a person does on the seat's keyboard: first Escape (Cancel:
// the binding fails, nothing is kept), then Alt+A (the Add button's
// mnemonic). GNOME keeps the shortcut under the id, and the press and
// release of the key start and stop a hold.
//
// Then the login race: the portal is not on the bus (stopped, and no
// longer started on demand) when the daemon starts; the daemon waits,
// and when the portal's name appears it binds, asking nothing: the
// shortcut is kept in GNOME's settings, seeded the way GNOME's own window
// writes it. A bind that asked would wait for an answer the test never
// gives.
//
// The daemon reaches the desk's session bus through a relay inside the
// desk: the portal finds a caller by its process (the registry needs
// its pid), and a host process is not in the desk's PID namespace.
func TestOnGNOME(t *testing.T) {
	d := testdesk.Start(t)
	d.InstallEntry(t)
	entry := "/usr/share/applications/" + xdp.AppID + ".desktop"
	if out := strings.TrimSpace(d.Run(t, "desktop-file-validate", entry)); out != "" {
		t.Errorf("desktop-file-validate %s:\n%s", entry, out)
	}
	env := append(d.Env, "DBUS_SESSION_BUS_ADDRESS="+testdesk.BusAddress(d.Relay(t, filepath.Join(d.Runtime, "bus"))))
	focus := d.WatchFocus(t)

	// Cancel (Escape) refuses: the binding fails, and nothing is kept.
	l := listenOn(t, env, "KEY_PAUSE", "hold")
	focus.Wait(t, "Add Keyboard Shortcuts")
	if err := d.Tap(testwait.Context(t), testdesk.KeyEscape); err != nil {
		t.Fatal(err)
	}
	if err := testwait.Recv(t, l.err, "Run to end at the refusal"); err == nil || !strings.Contains(err.Error(), "bind "+ID) {
		t.Errorf("Run after Cancel = %v, want the binding's failure", err)
	}
	if got := strings.TrimSpace(d.Run(t, "gsettings", "get", appSchema, "shortcuts")); got != "@a(sa{sv}) []" {
		t.Errorf("GNOME keeps %s after Cancel, want nothing", got)
	}

	settled := dconfWatch(t, d)
	l = listenOn(t, env, "KEY_PAUSE", "hold")
	focus.WaitCount(t, "Add Keyboard Shortcuts", 2)
	if err := d.Tap(testwait.Context(t), testdesk.KeyAltL, 'a'); err != nil {
		t.Fatal(err)
	}
	if trig := l.bound(t); trig != "Press Pause" {
		t.Errorf("GNOME describes the trigger as %q, want \"Press Pause\"", trig)
	}
	// What GNOME keeps it writes after the bind's answer (seen under
	// load: the shortcut written, the application list not yet).
	settled("the shortcut kept", func(got string) bool { return got == kept }, appSchema, "shortcuts")
	settled("YazSes among GNOME's applications with shortcuts", func(got string) bool {
		return strings.Contains(got, "'"+xdp.AppID+"'")
	}, "org.gnome.settings-daemon.global-shortcuts", "applications")
	pressRelease(t, d, l)
	l.cancel()
	testwait.Recv(t, l.err, "the first Run to end")

	// What GNOME keeps, seeded as its window writes it.
	d.Run(t, "gsettings", "reset", appSchema, "shortcuts")
	d.Run(t, "gsettings", "set", appSchema, "shortcuts", kept)

	// The login race: no portal on the bus, and none started on demand.
	d.Run(t, "rm", "/usr/share/dbus-1/services/org.freedesktop.portal.Desktop.service")
	bus, err := dbus.Connect(d.SessionBus)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testwait.Context(t)
	if err := bus.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.ReloadConfig", 0).Err; err != nil {
		t.Fatalf("reload the bus's services: %v", err)
	}
	var pid uint32
	if err := bus.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetConnectionUnixProcessID", 0, xdp.Dest).Store(&pid); err != nil {
		t.Fatalf("the portal's pid: %v", err)
	}
	if err := bus.AddMatchSignal(dbus.WithMatchSender("org.freedesktop.DBus"), dbus.WithMatchMember("NameOwnerChanged"), dbus.WithMatchArg(0, xdp.Dest)); err != nil {
		t.Fatal(err)
	}
	sigs := make(chan *dbus.Signal, 16)
	bus.Signal(sigs)
	gone := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var once sync.Once
		for s := range sigs { // until bus.Close
			if len(s.Body) == 3 && s.Body[2] == "" {
				once.Do(func() { close(gone) })
			}
		}
	})
	defer testwait.Group(t, &wg, "the name watcher to end")
	defer bus.Close()
	d.Run(t, "kill", "-KILL", strconv.FormatUint(uint64(pid), 10))
	testwait.Closed(t, gone, "the portal to leave the bus")

	l = listenOn(t, env, "KEY_PAUSE", "hold")
	l.waiting(t, WaitPortal)
	portal := d.Command(t, "/usr/libexec/xdg-desktop-portal")
	if err := portal.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = portal.Process.Kill(); _ = portal.Wait() })
	if trig := l.bound(t); trig != "Press Pause" {
		t.Errorf("after the portal came: trigger %q, want \"Press Pause\"", trig)
	}
	if n := focus.Count("Add Keyboard Shortcuts"); n != 2 {
		t.Errorf("GNOME's window took the focus %d times, want twice (the bind with the shortcut kept asks nothing)", n)
	}
	pressRelease(t, d, l)
}
