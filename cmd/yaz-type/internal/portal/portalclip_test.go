package portal

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

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

// TestOfferStandsAgainstAnEarlierOwner: a signal that another window
// owns the clipboard which comes after the session's offer but before
// the portal said the session owns it (mutter's first signal, for the
// owner when the clipboard was enabled, late through the portal) leaves
// the offer served: a window that fetches gets the text. Once the
// session was said to own it, another owner ends the offer. (Seen on
// GNOME under load: the late signal dropped the offer, the GTK 3 field's
// fetches got nothing, and the paste failed after 5 s.)
func TestOfferStandsAgainstAnEarlierOwner(t *testing.T) {
	const handle = dbus.ObjectPath("/org/freedesktop/portal/desktop/session/1_2/s")
	sig := func(own bool) *dbus.Signal {
		return &dbus.Signal{Name: ownerSignal, Body: []any{handle, map[string]dbus.Variant{
			"mime_types":       dbus.MakeVariant([]any{[]string{"text/plain;charset=utf-8"}}),
			"session_is_owner": dbus.MakeVariant(own),
		}}}
	}
	s := newSession(backend.Options{}.WithDefaults())
	s.handle = handle
	s.offering([]byte("Grüße"), true)
	s.onOwner(sig(false)) // the owner before the offer, told late
	if data, ok := s.offered(); !ok || string(data) != "Grüße" {
		t.Fatalf("after a late signal of the earlier owner: serving %q (%v), want the offer", data, ok)
	}
	select {
	case <-s.ownerHeard:
	default:
		t.Error("the first owner signal did not mark the owner heard")
	}
	s.onOwner(sig(true)) // the offer took effect
	if _, ok := s.offered(); !ok {
		t.Fatal("the offer ended when the portal said the session owns the clipboard")
	}
	s.onOwner(sig(false)) // a copy in another window after it
	if data, ok := s.offered(); ok || data != nil {
		t.Fatalf("another owner after the offer took effect: still serving %q", data)
	}
	if !s.otherText {
		t.Error("another window's text on the clipboard not kept for the restore")
	}
}

// TestPasteHearsTheOwnerFirst: the first paste of a session waits for
// the portal's word on who owned the clipboard when the session got it
// (mutter's first SelectionOwnerChanged, which can come after the
// session's start), so that a copy made before yaz-type started is put
// back; at most ownerGrace after the clipboard was given (no word comes
// where nothing owns it), and not at all later in the session.
func TestPasteHearsTheOwnerFirst(t *testing.T) {
	const handle = dbus.ObjectPath("/org/freedesktop/portal/desktop/session/1_2/s")
	other := &dbus.Signal{Name: ownerSignal, Body: []any{handle, map[string]dbus.Variant{
		"mime_types":       dbus.MakeVariant([]any{[]string{"text/plain;charset=utf-8"}}),
		"session_is_owner": dbus.MakeVariant(false),
	}}}
	waited := func(s *session, during func()) time.Duration {
		start := time.Now()
		done := make(chan time.Duration, 1)
		go func() {
			s.heardOwner(context.Background())
			done <- time.Since(start)
		}()
		synctest.Wait()
		if during != nil {
			time.Sleep(50 * time.Millisecond)
			during()
		}
		return <-done
	}
	fresh := func() *session {
		s := newSession(backend.Options{}.WithDefaults())
		s.handle, s.clipReady = handle, time.Now()
		return s
	}
	synctest.Test(t, func(t *testing.T) {
		s := fresh()
		if d := waited(s, func() { s.onOwner(other) }); d != 50*time.Millisecond {
			t.Errorf("the word came after 50ms: the paste went on after %v", d)
		}
		if !s.otherText {
			t.Error("another window's text, said late, not known to the paste")
		}
	})
	synctest.Test(t, func(t *testing.T) {
		if d := waited(fresh(), nil); d != ownerGrace {
			t.Errorf("no word: the paste waited %v, want %v", d, ownerGrace)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		s := fresh()
		time.Sleep(time.Minute)
		if d := waited(s, nil); d != 0 {
			t.Errorf("a minute into the session the paste waited %v", d)
		}
	})
}

// TestLingerKeepsTheCopy: a session that owns the clipboard lives on
// clipLinger after the last fetch of its offer, so that mutter's clipboard
// manager has finished its copy before the session (the owner) goes; one
// that does not own it, or whose offer nobody fetched lately, closes at
// once.
func TestLingerKeepsTheCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSession(backend.Options{}.WithDefaults())
		if d := s.linger(); d != 0 {
			t.Errorf("nothing offered: linger %v, want 0", d)
		}
		s.offering([]byte("zurück"), true)
		if d := s.linger(); d != 0 {
			t.Errorf("offered, never fetched: linger %v, want 0", d)
		}
		s.mu.Lock()
		s.served = time.Now()
		s.mu.Unlock()
		time.Sleep(100 * time.Millisecond)
		if d := s.linger(); d != clipLinger-100*time.Millisecond {
			t.Errorf("fetched 100ms ago: linger %v, want %v", d, clipLinger-100*time.Millisecond)
		}
		time.Sleep(clipLinger)
		if d := s.linger(); d != 0 {
			t.Errorf("fetched long ago: linger %v, want 0", d)
		}
		s.mu.Lock()
		s.served = time.Now()
		s.mu.Unlock()
		s.offering(nil, false)
		if d := s.linger(); d != 0 {
			t.Errorf("the clipboard given up: linger %v, want 0", d)
		}
	})
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
