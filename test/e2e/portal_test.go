package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testportal"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/internal/testwl"
	"github.com/yazses/yazses/lib/daemonapi"
)

// The portal proofs run the real yazsesd on a desktop as GNOME
// and KDE look to it: a Wayland compositor without the virtual keyboard
// (internal/testwl, which hands out a German keymap), and Debian's real
// xdg-desktop-portal 1.16 on a private session bus with the test backend
// of internal/testportal, which binds the shortcut, shows the consent
// "dialog" and types the keysyms it gets as mutter would through the same
// keymap (libxkbcommon's answers). The decoder is the fake one, so the
// words are known.

// portalDesktop is one such desktop and a daemon on it.
type portalDesktop struct {
	p     *testportal.Portal
	notes notes
	d     *daemon
}

// startPortalDesktop starts the desktop and the daemon (auto typing, the
// portal's shortcut on KEY_F13); text is what the fake decoder says.
func startPortalDesktop(t *testing.T, opts testportal.Options, text string) *portalDesktop {
	t.Helper()
	opts.Layout = "de"
	p := testportal.Start(t, opts)
	p.Backend.Expect(text)
	wl := testwl.Start(t, p.Keymap())
	n := notesOn(t, p.Addr) // the daemon's notifications go to the desktop's bus
	cfg := dictationConfig(answerWAV(), true).
		With("hotkey.enabled", "true").
		With("hotkey.source", q("portal")).
		With("hotkey.key", q("KEY_F13"))
	d := startDaemon(t, cfg, n.env, wl.Env[0], "DISPLAY=", "YAZ_FAKE_TEXT="+text)
	return &portalDesktop{p: p, notes: n, d: d}
}

// typing waits until status says the portal route is in state want.
func (pd *portalDesktop) typing(want string) daemonapi.TypingStatus {
	pd.d.T.Helper()
	var ts daemonapi.TypingStatus
	pd.d.WaitFor(time.Minute, "the portal session to be "+want, func() bool {
		st, err := pd.d.TryStatus()
		ts = st.Typing
		return err == nil && ts.Route == "portal" && ts.Session == want
	})
	return ts
}

// TestPortalDesktop: auto chooses the portal and says why; the consent
// dialog comes at the start, after a notification; the shortcut is bound
// through the portal and status says the key source is the portal; the
// shortcut's press opens a hold and nothing ends it until its release;
// the text arrives exactly, typed.
func TestPortalDesktop(t *testing.T) {
	t.Parallel()
	const text = "Grüße aus Köln, 1+2=3!"
	pd := startPortalDesktop(t, testportal.Options{}, text)
	d, b := pd.d, pd.p.Backend
	ts := pd.typing("ready")
	if !strings.Contains(ts.Why, "no virtual keyboard") || !slices.Equal(ts.Backends, []string{"portal"}) {
		t.Errorf("typing %+v: want portal alone, because the compositor has no virtual keyboard", ts)
	}
	if !strings.Contains(ts.Consent, "each start") {
		t.Errorf("consent %q: this portal (version 1) asks at each start", ts.Consent)
	}
	if n := b.Dialogs(); n != 1 {
		t.Errorf("%d consent dialogs at the start, want 1", n)
	}
	pd.notes.waitFor(t, "remote-desktop")

	if err := testwait.Until(testwait.Context(t), func() bool { return len(b.Bound()) == 1 }, &b.Changed); err != nil {
		t.Fatalf("the shortcut was never bound: %v", err)
	}
	d.WaitFor(time.Minute, "the portal key source to listen", func() bool {
		st, err := d.TryStatus()
		return err == nil && st.Hotkey.Source == "portal" && st.Hotkey.Listening
	})
	if st := d.Status(); st.Hold != daemonapi.HoldIdle {
		t.Fatalf("hold %q before any press", st.Hold)
	}

	b.Activate("push-to-talk")
	d.WaitFor(time.Minute, "the press to open a hold", func() bool { return d.Status().Hold == daemonapi.HoldHolding })
	d.waitReplayed(wavDuration(t, answerWAV()))
	if st := d.Status(); st.Hold != daemonapi.HoldHolding {
		t.Fatalf("hold %q before the release: something but the release ended it", st.Hold)
	}
	b.Deactivate("push-to-talk")
	d.WaitFor(2*time.Minute, "the release to end the hold", func() bool {
		return d.Status().Hold == daemonapi.HoldIdle && d.Count("dictation.typed", "") == 1
	})
	if err := testwait.Until(testwait.Context(t), func() bool { return len([]rune(b.Typed())) >= len([]rune(text)) }, &b.Changed); err != nil {
		t.Fatalf("waiting for the text: %q arrived", b.Typed())
	}
	if got := b.Typed(); got != text || b.Lost() != "" {
		t.Errorf("the desktop got %q (lost: %s), want %q", got, b.Lost(), text)
	}
	if l := d.lastByCtl(); l.Outcome != "typed" {
		t.Errorf("ctl last outcome %q, want typed", l.Outcome)
	}
	ev := d.Events()
	found := false
	for _, e := range ev {
		found = found || (e.Kind == "dictation.typed" && e.Backend == "portal")
	}
	if !found {
		t.Errorf("no dictation.typed with backend portal in the audit")
	}
}

// TestPortalDesktopRefused: the person refuses the dialog: status says so
// (and how to be asked again), a dictation is not typed but kept for
// `last`, and a notification says the text could not be typed.
func TestPortalDesktopRefused(t *testing.T) {
	t.Parallel()
	const text = "nicht erlaubt"
	pd := startPortalDesktop(t, testportal.Options{Refuse: true}, text)
	d := pd.d
	ts := pd.typing("refused")
	if !strings.Contains(ts.Consent, "refused") || !strings.Contains(ts.Consent, "restart") {
		t.Errorf("consent %q: want it refused, and how to be asked again", ts.Consent)
	}
	c := d.Client()
	d.holdWhileSpeaking(c, wavDuration(t, answerWAV()))
	r := d.stopHold(c)
	if r.Outcome != "kept" {
		t.Errorf("hold.stop = %+v, want kept", r)
	}
	if l := d.lastByCtl(); l.Text != text || l.Outcome != "kept" {
		t.Errorf("ctl last = %+v, want %q kept", l, text)
	}
	if got := pd.p.Backend.Typed(); got != "" {
		t.Errorf("%q arrived although the dialog was refused", got)
	}
	pd.notes.waitFor(t, "could not be typed")
}

// press dictates once with the portal's shortcut: press, the speech
// replayed, release, and the hold's end.
func (pd *portalDesktop) press(t *testing.T, typed int) {
	t.Helper()
	d, b := pd.d, pd.p.Backend
	b.Activate("push-to-talk")
	d.WaitFor(time.Minute, "the press to open a hold", func() bool { return d.Status().Hold == daemonapi.HoldHolding })
	d.waitReplayed(wavDuration(t, answerWAV()))
	b.Deactivate("push-to-talk")
	d.WaitFor(2*time.Minute, "the release to end the hold", func() bool {
		return d.Status().Hold == daemonapi.HoldIdle && d.Count("dictation.typed", "") == typed
	})
}

// TestPortalDesktopPortalRestarts: xdg-desktop-portal dies mid-session
// and comes back: the daemon lives on, its key source and its typing
// session come back by themselves (one more dialog: this portal cannot
// keep consent), and the next dictation types.
func TestPortalDesktopPortalRestarts(t *testing.T) {
	t.Parallel()
	const text = "Zweimal, bitte."
	pd := startPortalDesktop(t, testportal.Options{}, text)
	d, p := pd.d, pd.p
	pd.typing("ready")
	if err := testwait.Until(testwait.Context(t), func() bool { return len(p.Backend.Bound()) == 1 }, &p.Backend.Changed); err != nil {
		t.Fatalf("the shortcut was never bound: %v", err)
	}
	first := p.Backend.ShortcutSession()
	pd.press(t, 1)
	// The frontend passes each key on after answering it: the last ones
	// may still be on their way.
	if err := testwait.Until(testwait.Context(t), func() bool { return p.Backend.Typed() == text }, &p.Backend.Changed); err != nil {
		t.Fatalf("waiting for the first text: %q arrived", p.Backend.Typed())
	}
	p.StopFrontend()
	pd.typing("gone")
	p.Backend.Reset()
	p.StartFrontend()
	pd.typing("ready")
	if err := testwait.Until(testwait.Context(t), func() bool { return p.Backend.ShortcutSession() != first }, &p.Backend.Changed); err != nil {
		t.Fatalf("the shortcut was not bound again: %v", err)
	}
	if n := p.Backend.Dialogs(); n != 2 {
		t.Errorf("%d dialogs, want 2 (one more after the portal came back)", n)
	}
	pd.press(t, 2)
	if err := testwait.Until(testwait.Context(t), func() bool { return len([]rune(p.Backend.Typed())) >= len([]rune(text)) }, &p.Backend.Changed); err != nil {
		t.Fatalf("waiting for the text: %q arrived", p.Backend.Typed())
	}
	if got := p.Backend.Typed(); got != text {
		t.Errorf("after the restart the desktop got %q, want %q", got, text)
	}
	if st := d.Status(); st.Hotkey.Source != "portal" || !st.Hotkey.Listening {
		t.Errorf("hotkey %+v after the restart, want the portal listening", st.Hotkey)
	}
}
