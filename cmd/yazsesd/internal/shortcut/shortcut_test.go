package shortcut

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/yazses/yazses/internal/testportal"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/xdp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The tests run Debian's real xdg-desktop-portal 1.16 frontend with the
// test backend of internal/testportal, which binds the shortcut as a
// desktop would and emits Activated and Deactivated when told.

// listener runs Run until the test ends and gathers what it calls.
type listener struct {
	holds    chan bool
	triggers chan string
	waits    chan string
	err      chan error
	cancel   context.CancelFunc
}

func listen(t *testing.T, p *testportal.Portal, mode string) *listener {
	t.Helper()
	return listenOn(t, p.Env, "KEY_F13", mode)
}

// listenOn runs Run on the session bus of env with the key.
func listenOn(t *testing.T, env []string, key, mode string) *listener {
	t.Helper()
	l := &listener{holds: make(chan bool, 16), triggers: make(chan string, 16), waits: make(chan string, 16), err: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		l.err <- Run(ctx, Options{Environ: env, Key: key, Mode: mode,
			Bound: func(trigger string) { l.triggers <- trigger }, Waiting: func(what string) { l.waits <- what }},
			func(start bool) { l.holds <- start })
	}()
	t.Cleanup(func() {
		cancel()
		testwait.Group(t, &wg, "Run to return")
	})
	return l
}

func (l *listener) next(t *testing.T, want bool, what string) {
	t.Helper()
	if got := testwait.Recv(t, l.holds, what); got != want {
		t.Fatalf("%s: hold(%v), want hold(%v)", what, got, want)
	}
}

// bound waits until the shortcut is bound, and returns the trigger the
// desktop described.
func (l *listener) bound(t *testing.T) string {
	t.Helper()
	return l.recv(t, l.triggers, "the shortcut to be bound")
}

// recv waits for a value on ch; Run returning first fails the test.
func (l *listener) recv(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	hang := time.NewTimer(testwait.Hang)
	defer hang.Stop()
	select {
	case err := <-l.err:
		t.Fatalf("Run returned %v while waiting for %s", err, what)
	case v := <-ch:
		return v
	case <-hang.C:
		t.Fatalf("waiting for %s: nothing within %v", what, testwait.Hang)
	}
	return ""
}

// pressRelease has the desktop press and release the shortcut, and wants
// a hold started and stopped.
func (l *listener) pressRelease(t *testing.T, p *testportal.Portal) {
	t.Helper()
	p.Backend.Activate(ID)
	l.next(t, true, "the press")
	p.Backend.Deactivate(ID)
	l.next(t, false, "the release")
}

// TestPressRelease: BindShortcuts with a description and the preferred
// trigger; Activated starts a hold and Deactivated stops it, each at its
// own signal, in order.
func TestPressRelease(t *testing.T) {
	p := testportal.Start(t, testportal.Options{})
	l := listen(t, p, "hold")
	if trig := l.bound(t); trig != "Press F13" {
		t.Errorf("trigger %q, want the desktop's description", trig)
	}
	b := p.Backend.Bound()
	if len(b) != 1 || b[0].ID != ID || b[0].Description != Description || b[0].PreferredTrigger != "F13" {
		t.Errorf("bound %+v, want %s (%q) on F13", b, ID, Description)
	}
	for i := range 2 {
		p.Backend.Activate(ID)
		l.next(t, true, "the press")
		if n := len(l.holds); n != 0 {
			t.Fatalf("press %d: %d more calls before the release", i, n)
		}
		p.Backend.Deactivate(ID)
		l.next(t, false, "the release")
	}
	// A shortcut of another id is not ours.
	p.Backend.Activate("something-else")
	p.Backend.Activate(ID)
	l.next(t, true, "the press after another shortcut's")
	p.Backend.Deactivate(ID)
	l.next(t, false, "its release")
}

// TestToggle: in toggle mode each activation starts or stops in turn;
// the releases do nothing.
func TestToggle(t *testing.T) {
	p := testportal.Start(t, testportal.Options{})
	l := listen(t, p, "toggle")
	l.bound(t)
	p.Backend.Activate(ID)
	l.next(t, true, "the first press")
	p.Backend.Deactivate(ID)
	p.Backend.Activate(ID)
	l.next(t, false, "the second press")
	p.Backend.Deactivate(ID)
	p.Backend.Activate(ID)
	l.next(t, true, "the third press")
}

// TestPortalGoesAwayWhileHeld: the portal leaving the bus while the key
// is held stops the hold (it never stays open by accident); when the
// portal is back the shortcut is bound again and works.
func TestPortalGoesAwayWhileHeld(t *testing.T) {
	p := testportal.Start(t, testportal.Options{})
	l := listen(t, p, "hold")
	l.bound(t)
	first := p.Backend.ShortcutSession()
	p.Backend.Activate(ID)
	l.next(t, true, "the press")
	p.StopFrontend()
	l.next(t, false, "the stop when the portal went away")
	p.StartFrontend()
	l.bound(t)
	if s := p.Backend.ShortcutSession(); s == first {
		t.Errorf("bound again in the old session %s", s)
	}
	p.Backend.Activate(ID)
	l.next(t, true, "a press after the portal came back")
	p.Backend.Deactivate(ID)
	l.next(t, false, "its release")
}

// TestStopWhileHeld: Run ending while the key is held stops the hold.
func TestStopWhileHeld(t *testing.T) {
	p := testportal.Start(t, testportal.Options{})
	l := listen(t, p, "hold")
	l.bound(t)
	p.Backend.Activate(ID)
	l.next(t, true, "the press")
	l.cancel()
	l.next(t, false, "the stop at the end")
	if err := testwait.Recv(t, l.err, "Run to return"); !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

// waiting waits until Run says what it waits for.
func (l *listener) waiting(t *testing.T, want string) {
	t.Helper()
	if got := l.recv(t, l.waits, "Run to say what it waits for"); got != want {
		t.Fatalf("waiting for %q, want %q", got, want)
	}
}

// TestNoGlobalShortcuts: a desktop whose portal lacks the interface is
// said at once, naming what to use instead, and waited for: Run does not
// end, and binds when a portal with it takes the name.
func TestNoGlobalShortcuts(t *testing.T) {
	p := testportal.Start(t, testportal.Options{Interfaces: []string{"RemoteDesktop"}})
	l := listen(t, p, "hold")
	l.waiting(t, WaitShortcuts)
	if !strings.Contains(WaitShortcuts, "evdev") {
		t.Errorf("%q does not name hotkey.source = \"evdev\"", WaitShortcuts)
	}
}

// TestPortalAfterDaemon: the login race. The daemon starts before the
// desktop's portal is on the session bus; it says that it waits for the
// portal, and binds the shortcut when the portal's name appears, with
// no try of its own in between (the test bus cannot start a portal).
func TestPortalAfterDaemon(t *testing.T) {
	p := testportal.Start(t, testportal.Options{Late: true})
	l := listen(t, p, "hold")
	l.waiting(t, WaitPortal)
	p.StartFrontend()
	l.bound(t)
	if got := testwait.Recv(t, l.waits, "the wait's end"); got != "" {
		t.Errorf("Waiting(%q) after the binding, want \"\"", got)
	}
	l.pressRelease(t, p)
}

// TestBindAnsweredFailed: GNOME 48.0's portal (xdg-desktop-portal-gnome
// in Debian 13) answers a binding that succeeded with response 2 and the
// shortcuts it bound: the shortcut is bound (its presses arrive), so Run
// takes it as bound. A response 2 without the shortcut stays a failure
// (TestRequireAppID).
func TestBindAnsweredFailed(t *testing.T) {
	p := testportal.Start(t, testportal.Options{BindResponse: 2})
	l := listen(t, p, "hold")
	if trig := l.bound(t); trig != "Press F13" {
		t.Errorf("trigger %q, want the desktop's description", trig)
	}
	l.pressRelease(t, p)
}

// TestRequireAppID: a portal that refuses a program without an
// application id (xdg-desktop-portal 1.21 and later) ends Run with an
// error that names the id and how the portal learns it. Here the portal
// cannot learn it: Run is outside the user unit, and the portal has no
// .desktop file of YazSes (the frontend on these machines, 1.16, has no
// host registry at all).
func TestRequireAppID(t *testing.T) {
	p := testportal.Start(t, testportal.Options{RequireAppID: true, NoDesktopFile: true})
	err := Run(testwait.Context(t), Options{Environ: p.Env, Key: "KEY_F13", Mode: "hold"}, func(bool) {})
	if !errors.Is(err, xdp.ErrEnded) || !strings.Contains(err.Error(), xdp.AppID) {
		t.Errorf("Run = %v, want the refusal naming %s", err, xdp.AppID)
	}
	if ids := p.Backend.AppIDs(); len(ids) != 1 || ids[0] != "" {
		t.Errorf("app ids %q, want one session asked for without one", ids)
	}
	if testportal.AppID != xdp.AppID {
		t.Errorf("testportal installs %s.desktop, the daemon registers %s", testportal.AppID, xdp.AppID)
	}
}

func TestTrigger(t *testing.T) {
	for key, want := range map[string]string{
		"KEY_F13": "F13", "KEY_RIGHTCTRL": "Control_R", "KEY_PAUSE": "Pause", "KEY_A": "a",
		"KEY_5": "5", "KEY_SCROLLLOCK": "Scroll_Lock", "BTN_EXTRA": "", "KEY_NOPE": "",
	} {
		if got := Trigger(key); got != want {
			t.Errorf("Trigger(%q) = %q, want %q", key, got, want)
		}
	}
	if Description != "Hold to dictate (YazSes)" {
		t.Errorf("Description = %q", Description)
	}
}
