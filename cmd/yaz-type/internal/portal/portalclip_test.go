package portal

import (
	"slices"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/internal/testportal"
	"github.com/yazses/yazses/internal/testwait"
)

// TestOwnerSignal: SelectionOwnerChanged's types, as the documentation
// has them (as) and as xdg-desktop-portal-gnome 48 sends them ((as)),
// tell the session whether another window owns the clipboard with text
// (and only its own session's signal counts).
func TestOwnerSignal(t *testing.T) {
	const handle = dbus.ObjectPath("/org/freedesktop/portal/desktop/session/1_2/s")
	sig := func(h dbus.ObjectPath, types any, own bool) *dbus.Signal {
		return &dbus.Signal{Name: ownerSignal, Body: []any{h, map[string]dbus.Variant{
			"mime_types":       dbus.MakeVariant(types),
			"session_is_owner": dbus.MakeVariant(own),
		}}}
	}
	for _, tc := range []struct {
		name string
		sig  *dbus.Signal
		want bool
	}{
		{"documented", sig(handle, []string{"image/png", "text/plain;charset=utf-8"}, false), true},
		{"gnome", sig(handle, []any{[]string{"text/plain;charset=utf-8"}}, false), true},
		{"own", sig(handle, []any{[]string{"text/plain;charset=utf-8"}}, true), false},
		{"image", sig(handle, []any{[]string{"image/png"}}, false), false},
		{"another session", sig(handle+"x", []string{"UTF8_STRING"}, false), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSession(backend.Options{}.WithDefaults())
			s.handle = handle
			s.onOwner(tc.sig)
			if s.otherText != tc.want {
				t.Errorf("otherText = %v, want %v", s.otherText, tc.want)
			}
		})
	}
	if got := mimeTypes([]any{[]string{"a", "b"}}); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("mimeTypes((as)) = %q", got)
	}
}

// TestSettle: Settle waits while the consent dialog is open and returns
// the state the answer brings (ready), so that yaz-type in a pipeline
// types after the person allowed it instead of failing at once.
func TestSettle(t *testing.T) {
	d := start(t, testportal.Options{Layout: "de"})
	d.p.Backend.HoldDialogs()
	r := d.route()
	settled := make(chan Status, 1)
	go func() { settled <- r.Settle(testwait.Context(t)) }()
	waitState(t, r, StateAsking)
	select {
	case st := <-settled:
		t.Fatalf("Settle returned %q while the dialog was open", st.Session)
	default:
	}
	d.p.Backend.Answer(true)
	if st := testwait.Recv(t, settled, "Settle after the answer"); st.Session != StateReady {
		t.Fatalf("Settle = %q (%s), want ready", st.Session, st.Cause)
	}
}
