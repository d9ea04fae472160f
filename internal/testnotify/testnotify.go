// Package testnotify is a freedesktop.org notification server for the
// tests where a real one (dunst) cannot do what the test needs: it owns
// org.freedesktop.Notifications on a bus, records every Notify call with
// its exact words, and answers it with an id, or, with Hang, never
// answers: each call is held until the test ends, as a hung server holds
// it. A real server cannot be made to hang, and the daemon's end-to-end
// tests read what was said without a display for dunst.
package testnotify

import (
	"strings"
	"sync"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/yazses/yazses/internal/testwait"
)

// Names of the service.
const (
	Name  = "org.freedesktop.Notifications"
	Path  = dbus.ObjectPath("/org/freedesktop/Notifications")
	Iface = "org.freedesktop.Notifications"
)

// Note is one Notify call as it arrived.
type Note struct {
	App, Icon, Summary, Body string
	Urgency                  byte // the "urgency" hint; 1 (normal) when absent
	Transient                bool // the "transient" hint
	Expire                   int32
}

// Server is a notification server on a bus.
type Server struct {
	hang    bool
	release chan struct{} // closed when the test ends: held calls return

	mu      sync.Mutex
	notes   []Note
	changed testwait.Signal
}

// Start connects to the bus at addr, exports the server and takes the
// name; hang makes it hold every call without an answer. It leaves the
// bus when the test ends.
func Start(t testing.TB, addr string, hang bool) *Server {
	t.Helper()
	c, err := dbus.Connect(addr)
	if err != nil {
		t.Fatalf("connect the notification server: %v", err)
	}
	s := &Server{hang: hang, release: make(chan struct{})}
	t.Cleanup(func() {
		close(s.release)
		c.Close()
	})
	if err := c.ExportMethodTable(map[string]any{"Notify": s.notify}, Path, Iface); err != nil {
		t.Fatalf("export the notification server: %v", err)
	}
	reply, err := c.RequestName(Name, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("take %s: %v (reply %d)", Name, err, reply)
	}
	return s
}

// notify is org.freedesktop.Notifications.Notify.
func (s *Server) notify(app string, replaces uint32, icon, summary, body string, actions []string,
	hints map[string]dbus.Variant, expire int32) (uint32, *dbus.Error) {
	n := Note{App: app, Icon: icon, Summary: summary, Body: body, Urgency: 1, Expire: expire}
	if v, ok := hints["urgency"].Value().(byte); ok {
		n.Urgency = v
	}
	if v, ok := hints["transient"].Value().(bool); ok {
		n.Transient = v
	}
	s.mu.Lock()
	s.notes = append(s.notes, n)
	id := uint32(len(s.notes))
	s.mu.Unlock()
	s.changed.Notify()
	if s.hang {
		<-s.release
		return 0, dbus.MakeFailedError(errEnded{})
	}
	return id, nil
}

type errEnded struct{}

func (errEnded) Error() string { return "the test ended" }

// Notes returns the calls so far, in the order they arrived.
func (s *Server) Notes() []Note {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Note(nil), s.notes...)
}

// Changed returns a channel closed at the next call (a testwait.Source).
func (s *Server) Changed() <-chan struct{} { return s.changed.Changed() }

// WaitFor waits until a note's body contains text, and returns it.
func (s *Server) WaitFor(t testing.TB, text string) Note {
	t.Helper()
	var got Note
	has := func() bool {
		for _, n := range s.Notes() {
			if strings.Contains(n.Body, text) {
				got = n
				return true
			}
		}
		return false
	}
	if testwait.Until(testwait.Context(t), has, s) != nil {
		t.Fatalf("no notification with %q; got %+v", text, s.Notes())
	}
	return got
}

// WaitCount waits until n calls have arrived.
func (s *Server) WaitCount(t testing.TB, n int) []Note {
	t.Helper()
	if testwait.Until(testwait.Context(t), func() bool { return len(s.Notes()) >= n }, s) != nil {
		t.Fatalf("waiting for %d notifications; got %+v", n, s.Notes())
	}
	return s.Notes()
}
