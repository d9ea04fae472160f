package app

import (
	"bytes"
	"strings"
	"testing"

	"github.com/yazses/yazses/lib/daemonapi"
)

// TestPrintStatusPortal: status names the typing route and why, the
// portal's session and consent, and the live key source.
func TestPrintStatusPortal(t *testing.T) {
	st := daemonapi.Status{
		Typing: daemonapi.TypingStatus{Inject: "auto", Backends: []string{"portal"}, Route: "portal",
			Why:     "the compositor has no virtual keyboard (GNOME, KDE Plasma): the RemoteDesktop portal offers a keyboard",
			Session: "ready", Consent: "stored: the desktop restores it at the next start without asking"},
		Hotkey: daemonapi.HotkeyStatus{Enabled: true, Source: "portal", Listening: true, Key: "KEY_F13", Mode: "hold"},
	}
	var b bytes.Buffer
	printStatus(&b, st)
	out := strings.Join(strings.Fields(b.String()), " ") // columns as single spaces
	for _, want := range []string{
		"typing auto → portal",
		"portal: the compositor has no virtual keyboard (GNOME, KDE Plasma): the RemoteDesktop portal offers a keyboard",
		"portal session ready",
		"consent stored: the desktop restores it",
		"hotkey KEY_F13 (listening), hold, from the desktop's shortcut portal",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status has no %q:\n%s", want, out)
		}
	}
	st.Hotkey.Waiting = "the desktop portal (org.freedesktop.portal.Desktop) to appear on the session bus"
	b.Reset()
	printStatus(&b, st)
	if want := "hotkey KEY_F13 (waiting for the desktop portal (org.freedesktop.portal.Desktop) to appear on the session bus), hold, from the desktop's shortcut portal"; !strings.Contains(strings.Join(strings.Fields(b.String()), " "), want) {
		t.Errorf("status has no %q:\n%s", want, b.String())
	}
	st.Typing = daemonapi.TypingStatus{Inject: "auto", Backends: []string{}, Error: "open auto: nothing can type on this desktop"}
	st.Hotkey = daemonapi.HotkeyStatus{Enabled: true, Source: "evdev", Key: "KEY_RIGHTCTRL", Mode: "hold", Error: "permission denied"}
	b.Reset()
	printStatus(&b, st)
	for _, want := range []string{"auto: none (open auto: nothing can type on this desktop)", "(not listening: permission denied), from evdev"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status has no %q:\n%s", want, b.String())
		}
	}
}
