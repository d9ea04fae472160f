package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testportal"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/daemonapi"
)

// TestPortalDesktopPortalAfterDaemon: the login race. The daemon starts
// before the desktop's portal is on the session bus (a user service at
// login); its key source does not give up: status says it waits for the
// portal, and when the portal's name appears the shortcut is bound and
// its press and release hold and stop, with no restart of the daemon.
func TestPortalDesktopPortalAfterDaemon(t *testing.T) {
	t.Parallel()
	const text = "Spät, aber da."
	pd := startPortalDesktop(t, testportal.Options{Late: true}, text)
	d, p := pd.d, pd.p
	var hk daemonapi.HotkeyStatus
	d.WaitFor(time.Minute, "status to say the key source waits for the portal", func() bool {
		st, err := d.TryStatus()
		hk = st.Hotkey
		return err == nil && hk.Waiting != ""
	})
	if !hk.Listening || !strings.Contains(hk.Waiting, "org.freedesktop.portal.Desktop") || hk.Error != "" {
		t.Errorf("hotkey %+v before the portal, want listening, waiting for org.freedesktop.portal.Desktop", hk)
	}
	p.StartFrontend()
	if err := testwait.Until(testwait.Context(t), func() bool { return len(p.Backend.Bound()) == 1 }, &p.Backend.Changed); err != nil {
		t.Fatalf("the shortcut was never bound after the portal came: %v", err)
	}
	d.WaitFor(time.Minute, "status to say the key works", func() bool {
		st, err := d.TryStatus()
		hk = st.Hotkey
		return err == nil && hk.Listening && hk.Waiting == ""
	})
	p.Backend.Activate("push-to-talk")
	d.WaitFor(time.Minute, "the press to open a hold", func() bool { return d.Status().Hold == daemonapi.HoldHolding })
	p.Backend.Deactivate("push-to-talk")
	d.WaitFor(2*time.Minute, "the release to end the hold", func() bool { return d.Status().Hold == daemonapi.HoldIdle })
	if n := d.Count("hotkey.failed", ""); n != 0 {
		t.Errorf("%d hotkey.failed events, want none", n)
	}
}
