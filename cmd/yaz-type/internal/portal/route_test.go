package portal

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/wayland"
	"github.com/yazses/yazses/internal/testportal"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/internal/testwl"
	"github.com/yazses/yazses/lib/untrusted"
)

// The tests run Debian's real xdg-desktop-portal 1.16 frontend with the
// test backend of internal/testportal (it types as mutter does, through a
// real XKB keymap). The compositor's keymap (what wl_keyboard hands out)
// and its clipboard are the only parts given by the test: the keymap is
// the one the backend types with, the clipboard the one its window
// pastes from.

// mixed is a text of mixed scripts: Latin with a combining mark, Greek,
// Hebrew, CJK and an emoji.
const mixed = "Grüße, cafe\u0301 Καλημέρα שלום 日本語 🎉"

// desktop is one test desktop and what the route told the daemon.
type desktop struct {
	p *testportal.Portal
	o backend.Options
	r *Route // made at the first route(), from o as it is then
	t testing.TB

	mu        sync.Mutex
	notes     []string // notification kinds
	atDialogs []int    // the backend's dialogs when each was shown
}

// route is the desktop's route (one, as a daemon has one), made from d.o
// at the first call and closed when the test ends.
func (d *desktop) route() *Route {
	if d.r == nil {
		d.r = New(d.o)
		r := d.r
		d.t.Cleanup(r.Close)
	}
	return d.r
}

func (d *desktop) notify(kind string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.notes = append(d.notes, kind)
	d.atDialogs = append(d.atDialogs, d.p.Backend.Dialogs())
}

func (d *desktop) notified() ([]string, []int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.notes), slices.Clone(d.atDialogs)
}

// fakeClipboard is the desktop's clipboard: the backend's window pastes
// from it.
type fakeClipboard struct{ b *testportal.Backend }

func (c fakeClipboard) Put(ctx context.Context, text string) (func(context.Context) error, error) {
	prev := c.b.Clipboard()
	c.b.SetClipboard(text)
	return func(context.Context) error { c.b.SetClipboard(prev); return nil }, nil
}

// start starts a desktop and points the route at its keymap and
// clipboard. Every session is closed when the test ends.
func start(t testing.TB, opts testportal.Options) *desktop {
	t.Helper()
	p := testportal.Start(t, opts)
	d := &desktop{p: p, t: t}
	km := p.Keymap()
	setHooks(t, func(context.Context, []string) (string, error) { return km, nil },
		func(backend.Options) clipboard { return fakeClipboard{p.Backend} })
	oldLEDs := ledDir
	ledDir = p.Backend.LEDs()
	p.Backend.SetCapsLock(false) // whatever this machine's keyboard shows
	t.Cleanup(func() { ledDir = oldLEDs })
	d.o = backend.Options{
		Environ:  p.Env,
		StateDir: filepath.Join(t.TempDir(), "state"),
		Notify:   d.notify,
		Log:      slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}.WithDefaults()
	return d
}

// setHooks replaces the keymap and clipboard until the test ends.
func setHooks(t testing.TB, km func(context.Context, []string) (string, error), clip func(backend.Options) clipboard) {
	oldK, oldC := keymapSource, newClipboard
	keymapSource, newClipboard = km, clip
	t.Cleanup(func() { keymapSource, newClipboard = oldK, oldC })
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// waitState waits until r's session is in state want.
func waitState(t testing.TB, r *Route, want string) Status {
	t.Helper()
	var st Status
	err := testwait.Until(testwait.Context(t), func() bool {
		st = r.State()
		return st.Session == want
	}, changes{r})
	if err != nil {
		t.Fatalf("waiting for the portal session to be %q: it is %q (%s)", want, st.Session, st.Cause)
	}
	return st
}

// changes is a route's state changes as a testwait.Source.
type changes struct{ r *Route }

func (c changes) Changed() <-chan struct{} { return c.r.Changes() }

// typed waits until the backend's window shows want (and fails on
// anything else once it has as many characters).
func typed(t *testing.T, b *testportal.Backend, want string) {
	t.Helper()
	err := testwait.Until(testwait.Context(t), func() bool {
		return len([]rune(b.Typed())) >= len([]rune(want)) || b.Lost() != ""
	}, &b.Changed)
	if err != nil {
		t.Fatalf("waiting for %q to arrive: %q arrived", want, b.Typed())
	}
	if got := b.Typed(); got != want || b.Lost() != "" {
		t.Fatalf("arrived %q (lost: %s), want %q", got, b.Lost(), want)
	}
}

// TestTypeExact: a text the German keymap has arrives exactly, key by
// key, after one consent dialog that the notification announced.
func TestTypeExact(t *testing.T) {
	d := start(t, testportal.Options{Layout: "de"})
	const text = "Grüße aus Köln: 1+2=3, ÄÖÜ? ß! (ok)"
	d.p.Backend.Expect(text)
	d.route().Prepare()
	st := waitState(t, d.route(), StateReady)
	if err := d.route().Type(testwait.Context(t), untrusted.Typed(text)); err != nil {
		t.Fatalf("Type: %v", err)
	}
	typed(t, d.p.Backend, text)
	if n := d.p.Backend.Pastes(); n != 0 {
		t.Errorf("%d pastes, want none", n)
	}
	if n := d.p.Backend.Dialogs(); n != 1 {
		t.Errorf("%d consent dialogs, want 1", n)
	}
	notes, at := d.notified()
	if !slices.Equal(notes, []string{NotifyConsent}) || at[0] != 0 {
		t.Errorf("notifications %q at dialogs %v, want one %q before the dialog", notes, at, NotifyConsent)
	}
	if !strings.Contains(st.Consent, "each start") {
		t.Errorf("consent %q: the frontend's RemoteDesktop is version 1, which cannot keep it", st.Consent)
	}
}

// TestTypeMixedScriptsPasted: characters the keymap lacks (mutter would
// drop them) make the whole text go through the clipboard and the paste
// chord, exactly, and the result says so; the clipboard is put back.
func TestTypeMixedScriptsPasted(t *testing.T) {
	d := start(t, testportal.Options{Layout: "de"})
	d.p.Backend.Expect(mixed)
	d.p.Backend.SetClipboard("what the person copied")
	d.route().Prepare()
	waitState(t, d.route(), StateReady)
	err := d.route().Type(testwait.Context(t), untrusted.Typed(mixed))
	if !errors.Is(err, backend.ErrPasted) {
		t.Fatalf("Type: %v, want ErrPasted", err)
	}
	typed(t, d.p.Backend, mixed)
	if n := d.p.Backend.Keysyms(); n != 0 {
		t.Errorf("%d keysyms typed besides the paste chord, want none", n)
	}
	if n := d.p.Backend.Pastes(); n != 1 {
		t.Errorf("%d pastes, want 1", n)
	}
	if got := d.p.Backend.Clipboard(); got != "what the person copied" {
		t.Errorf("clipboard after the paste %q, want what it held", got)
	}
}

// TestTypeGreek: Greek typed key by key on a Greek keymap.
func TestTypeGreek(t *testing.T) {
	d := start(t, testportal.Options{Layout: "gr"})
	const text = "αβγ δεζ ΑΒΓ; 123."
	d.p.Backend.Expect(text)
	d.route().Prepare()
	waitState(t, d.route(), StateReady)
	if err := d.route().Type(testwait.Context(t), untrusted.Typed(text)); err != nil {
		t.Fatalf("Type: %v", err)
	}
	typed(t, d.p.Backend, text)
}

// TestTypeCapsLockOn: with Caps Lock on (its LED lit), a text of both
// cases arrives exactly, key by key, in each layout swept, and Caps Lock
// is on again afterwards. mutter leaves the lock as it is when it presses
// a keysym's key: before the fix "Grüße" arrived as "gRÜSSE".
func TestTypeCapsLockOn(t *testing.T) {
	for _, tc := range []struct{ layout, text string }{
		{"us", "Hello World: 1+2=3, OK? yes!"},
		{"de", "Grüße aus Köln, ÄÖÜ äöü ß."},
		{"gr", "αβγ ΑΒΓ; καλη ΜΕΡΑ 123."},
	} {
		t.Run(tc.layout, func(t *testing.T) {
			d := start(t, testportal.Options{Layout: tc.layout})
			d.p.Backend.Expect(tc.text)
			d.p.Backend.SetCapsLock(true)
			d.route().Prepare()
			waitState(t, d.route(), StateReady)
			if err := d.route().Type(testwait.Context(t), untrusted.Typed(tc.text)); err != nil {
				t.Fatalf("Type: %v", err)
			}
			typed(t, d.p.Backend, tc.text)
			// The portal has passed every key on when Type returns; the
			// backend may take the last Caps_Lock a moment later.
			b := d.p.Backend
			if err := testwait.Until(testwait.Context(t), b.CapsLock, &b.Changed); err != nil {
				t.Error("Caps Lock stays off after typing: it was on before")
			}
			if n := d.p.Backend.Pastes(); n != 0 {
				t.Errorf("%d pastes, want none", n)
			}
		})
	}
}

// TestTypeCapsLockOff: with the LED dark, no Caps_Lock is pressed (it
// would lock it) and the text arrives exactly.
func TestTypeCapsLockOff(t *testing.T) {
	d := start(t, testportal.Options{Layout: "us"})
	const text = "Hello World"
	d.p.Backend.Expect(text)
	d.route().Prepare()
	waitState(t, d.route(), StateReady)
	if err := d.route().Type(testwait.Context(t), untrusted.Typed(text)); err != nil {
		t.Fatalf("Type: %v", err)
	}
	typed(t, d.p.Backend, text)
	if d.p.Backend.CapsLock() {
		t.Error("Caps Lock is on after typing: it was off before")
	}
}

// TestTypeCapsLockNoKey: Caps Lock on while the keymap has no Caps_Lock
// key to turn it off (caps:none; the lock came from another keyboard):
// the text is pasted, exactly, and says so.
func TestTypeCapsLockNoKey(t *testing.T) {
	d := start(t, testportal.Options{Layout: "us", Options: "caps:none"})
	const text = "Hello World"
	d.p.Backend.Expect(text)
	d.p.Backend.SetCapsLock(true)
	d.route().Prepare()
	waitState(t, d.route(), StateReady)
	if err := d.route().Type(testwait.Context(t), untrusted.Typed(text)); !errors.Is(err, backend.ErrPasted) {
		t.Fatalf("Type: %v, want ErrPasted", err)
	}
	typed(t, d.p.Backend, text)
	if n := d.p.Backend.Keysyms(); n != 0 {
		t.Errorf("%d keysyms typed besides the paste chord, want none", n)
	}
}

// TestNoKeymap: when the compositor's keymap cannot be read, no keysym
// is risked: the text is pasted.
func TestNoKeymap(t *testing.T) {
	d := start(t, testportal.Options{Layout: "de"})
	setHooks(t, func(context.Context, []string) (string, error) { return "", errors.New("no compositor") },
		func(backend.Options) clipboard { return fakeClipboard{d.p.Backend} })
	d.p.Backend.Expect("hello")
	d.route().Prepare()
	waitState(t, d.route(), StateReady)
	if err := d.route().Type(testwait.Context(t), untrusted.Typed("hello")); !errors.Is(err, backend.ErrPasted) {
		t.Fatalf("Type: %v, want ErrPasted", err)
	}
	typed(t, d.p.Backend, "hello")
}

// TestConsentRefused: a refused dialog is a clear cause, nothing is
// typed, and the route does not ask again at each dictation.
func TestConsentRefused(t *testing.T) {
	d := start(t, testportal.Options{Layout: "de", Refuse: true})
	d.route().Prepare()
	st := waitState(t, d.route(), StateRefused)
	if !strings.Contains(st.Consent, "refused") || !strings.Contains(st.Cause, "refused") {
		t.Errorf("status %+v: does not say the dialog was refused", st)
	}
	for range 2 {
		err := d.route().Type(testwait.Context(t), untrusted.Typed("hello"))
		if !errors.Is(err, backend.ErrUnavailable) || !strings.Contains(err.Error(), "refused") {
			t.Errorf("Type after a refusal: %v, want ErrUnavailable saying it was refused", err)
		}
	}
	if got := d.p.Backend.Typed(); got != "" {
		t.Errorf("%q arrived after a refusal", got)
	}
	if n := d.p.Backend.Dialogs(); n != 1 {
		t.Errorf("%d dialogs, want 1: a refusal is not asked again until the daemon restarts", n)
	}
}

// TestTypeWhileAsking: a dictation while the dialog is open is not
// typed (and says why); once allowed, the next one is.
func TestTypeWhileAsking(t *testing.T) {
	d := start(t, testportal.Options{Layout: "de"})
	d.p.Backend.HoldDialogs()
	d.p.Backend.Expect("jetzt")
	d.route().Prepare()
	waitState(t, d.route(), StateAsking)
	err := d.route().Type(testwait.Context(t), untrusted.Typed("zu früh"))
	if !errors.Is(err, backend.ErrUnavailable) || !strings.Contains(err.Error(), "dialog") {
		t.Errorf("Type while the dialog is open: %v, want ErrUnavailable naming the dialog", err)
	}
	d.p.Backend.Answer(true)
	waitState(t, d.route(), StateReady)
	if err := d.route().Type(testwait.Context(t), untrusted.Typed("jetzt")); err != nil {
		t.Fatalf("Type: %v", err)
	}
	typed(t, d.p.Backend, "jetzt")
}

// TestRestartAsksAgainOnVersion1: the frontend here (xdg-desktop-portal
// 1.16, RemoteDesktop version 1) cannot keep consent: a restart asks
// again, and the route says so instead of pretending.
func TestRestartAsksAgainOnVersion1(t *testing.T) {
	d := start(t, testportal.Options{Layout: "de"})
	d.route().Prepare()
	waitState(t, d.route(), StateReady)
	d.route().Close() // the daemon stops
	d.route().Prepare()
	st := waitState(t, d.route(), StateReady)
	if n := d.p.Backend.Dialogs(); n != 2 {
		t.Errorf("%d dialogs after a restart, want 2 (version 1 cannot restore)", n)
	}
	for i, sel := range d.p.Backend.Selects() {
		if _, ok := sel["restore_token"]; ok {
			t.Errorf("SelectDevices %d carried a restore_token to a version 1 backend", i)
		}
	}
	if _, err := os.Stat(filepath.Join(d.o.StateDir, TokenFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a token file was written for a portal that cannot restore: %v", err)
	}
	if !strings.Contains(st.Consent, "each start") {
		t.Errorf("consent %q, want it to say it is asked at each start", st.Consent)
	}
}

// TestPortalGoesAway: the frontend dies mid-session: the next dictation
// is not typed (nothing is sent anywhere) and says why; when the portal is
// back the route starts a new session by itself and types again.
func TestPortalGoesAway(t *testing.T) {
	d := start(t, testportal.Options{Layout: "de"})
	d.p.Backend.Expect("vorher nachher")
	d.route().Prepare()
	waitState(t, d.route(), StateReady)
	if err := d.route().Type(testwait.Context(t), untrusted.Typed("vorher")); err != nil {
		t.Fatalf("Type: %v", err)
	}
	typed(t, d.p.Backend, "vorher")
	d.p.StopFrontend()
	err := d.route().Type(testwait.Context(t), untrusted.Typed("verloren"))
	if !errors.Is(err, backend.ErrUnavailable) {
		t.Errorf("Type with the portal gone: %v, want ErrUnavailable", err)
	}
	d.p.Backend.Reset()
	d.p.StartFrontend()
	waitState(t, d.route(), StateReady)
	if n := d.p.Backend.Dialogs(); n != 2 {
		t.Errorf("%d dialogs, want 2 (a new session after the portal came back)", n)
	}
	if err := d.route().Type(testwait.Context(t), untrusted.Typed("nachher")); err != nil {
		t.Fatalf("Type after the portal came back: %v", err)
	}
	typed(t, d.p.Backend, "nachher")
}

// TestDesktopEndsSession: the person stops the session in the desktop's
// indicator: the route notices, keeps the next text, and asks again.
func TestDesktopEndsSession(t *testing.T) {
	d := start(t, testportal.Options{Layout: "de"})
	d.p.Backend.Expect("wieder")
	d.route().Prepare()
	waitState(t, d.route(), StateReady)
	d.p.Backend.EndSession(d.p.Backend.RemoteDesktopSessions()[0])
	waitState(t, d.route(), StateEnded)
	if err := d.route().Type(testwait.Context(t), untrusted.Typed("wieder")); !errors.Is(err, backend.ErrUnavailable) {
		t.Errorf("Type after the desktop ended the session: %v, want ErrUnavailable", err)
	}
	waitState(t, d.route(), StateReady)
	if err := d.route().Type(testwait.Context(t), untrusted.Typed("wieder")); err != nil {
		t.Fatalf("Type: %v", err)
	}
	typed(t, d.p.Backend, "wieder")
	if n := d.p.Backend.Dialogs(); n != 2 {
		t.Errorf("%d dialogs, want 2", n)
	}
}

// TestNoRemoteDesktop: a portal without a RemoteDesktop backend (a
// desktop that has none) is unavailable, and Offers says so.
func TestNoRemoteDesktop(t *testing.T) {
	d := start(t, testportal.Options{Interfaces: []string{"GlobalShortcuts"}})
	offers, known := Offers(testwait.Context(t), d.o.Environ)
	if offers || !known {
		t.Errorf("Offers = %v, %v; want false, true", offers, known)
	}
	d.route().Prepare()
	st := waitState(t, d.route(), StateUnavailable)
	if err := d.route().Type(testwait.Context(t), untrusted.Typed("x")); !errors.Is(err, backend.ErrUnavailable) {
		t.Errorf("Type: %v, want ErrUnavailable", err)
	}
	if st.Cause == "" {
		t.Error("no cause")
	}
}

func TestOffers(t *testing.T) {
	d := start(t, testportal.Options{})
	if offers, known := Offers(testwait.Context(t), d.o.Environ); !offers || !known {
		t.Errorf("Offers = %v, %v; want true, true", offers, known)
	}
	if offers, known := Offers(context.Background(), []string{"DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent/bus"}); offers || known {
		t.Errorf("Offers without a bus = %v, %v; want false, false", offers, known)
	}
}

// TestTypeThroughSeatKeymap: the keymap read as production reads it, from
// the compositor's seat (internal/testwl: a compositor as GNOME's looks
// to a client), not given by the test.
func TestTypeThroughSeatKeymap(t *testing.T) {
	d := start(t, testportal.Options{Layout: "de"})
	wl := testwl.Start(t, d.p.Keymap())
	setHooks(t, wayland.SeatKeymap, func(backend.Options) clipboard { return fakeClipboard{d.p.Backend} })
	d.o.Environ = append(slices.Clone(d.o.Environ), wl.Env...)
	const text = "Straße, Öl, Übermut"
	d.p.Backend.Expect(text)
	d.route().Prepare()
	waitState(t, d.route(), StateReady)
	if err := d.route().Type(testwait.Context(t), untrusted.Typed(text)); err != nil {
		t.Fatalf("Type: %v", err)
	}
	typed(t, d.p.Backend, text)
	if n := d.p.Backend.Pastes(); n != 0 {
		t.Errorf("%d pastes, want none", n)
	}
}

// TestLongTextPasted: a text over Options.PasteOverChars is pasted even
// where every character has its key (keys cost about 3 ms each here).
func TestLongTextPasted(t *testing.T) {
	d := start(t, testportal.Options{Layout: "de"})
	d.o.PasteOverChars = 10
	const text = "ein langer Text"
	d.p.Backend.Expect(text)
	d.route().Prepare()
	waitState(t, d.route(), StateReady)
	if err := d.route().Type(testwait.Context(t), untrusted.Typed(text)); !errors.Is(err, backend.ErrPasted) {
		t.Fatalf("Type: %v, want ErrPasted", err)
	}
	typed(t, d.p.Backend, text)
	if n := d.p.Backend.Keysyms(); n != 0 {
		t.Errorf("%d keys besides the chord", n)
	}
}

// TestRoutesHoldTheirOwnSessions: two routes in one process (two Typers)
// hold a session each; closing one closes its session at the portal (the
// desktop stops showing it) and leaves the other's, which types on.
func TestRoutesHoldTheirOwnSessions(t *testing.T) {
	d := start(t, testportal.Options{Layout: "de"})
	a := d.route()
	b := New(d.o)
	t.Cleanup(b.Close)
	a.Prepare()
	waitState(t, a, StateReady)
	b.Prepare()
	waitState(t, b, StateReady)
	sessions := d.p.Backend.RemoteDesktopSessions()
	if len(sessions) != 2 {
		t.Fatalf("%d sessions for two routes, want 2", len(sessions))
	}
	if n := len(d.p.Backend.Closed()); n != 0 {
		t.Fatalf("%d sessions closed before any route closed", n)
	}
	a.Close()
	waitClosed(t, d.p.Backend, 1)
	if closed := d.p.Backend.Closed(); closed[0] != sessions[0] {
		t.Fatalf("closed %v after the first route closed, want [%s]", closed, sessions[0])
	}
	if st := b.State(); st.Session != StateReady {
		t.Fatalf("the other route is %q after the first closed, want ready", st.Session)
	}
	d.p.Backend.Expect("weiter")
	if err := b.Type(testwait.Context(t), untrusted.Typed("weiter")); err != nil {
		t.Fatalf("Type on the other route: %v", err)
	}
	typed(t, d.p.Backend, "weiter")
	b.Close()
	waitClosed(t, d.p.Backend, 2)
}

// waitClosed waits until the portal has closed n sessions (the frontend
// passes a Session.Close on to the backend after it answered the route),
// and fails if it closes more.
func waitClosed(t *testing.T, b *testportal.Backend, n int) {
	t.Helper()
	if err := testwait.Until(testwait.Context(t), func() bool { return len(b.Closed()) >= n }, &b.Changed); err != nil {
		t.Fatalf("%d sessions closed, want %d", len(b.Closed()), n)
	}
	if got := len(b.Closed()); got != n {
		t.Fatalf("%d sessions closed, want %d", got, n)
	}
}
