package testx

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xfixes"
	"github.com/jezek/xgb/xproto"

	"github.com/yazses/yazses/internal/testwait"
)

// xgb keeps every extension's event and error constructors in maps of
// the process (xgb.NewEventFuncs) that each connection's reader reads
// without a lock, and xfixes.Init writes them at every call: a watch
// begun while another test's watch received an event was a data race
// (-race, in parallel e2e tests). So XFixes is registered once in the
// process, by the first watch before it selects any event, and later
// connections only learn its opcode.
var xfixesOnce struct {
	sync.Once
	first uint8
	err   error
}

// initXFixes readies c for XFixes requests and events.
func initXFixes(c *xgb.Conn) error {
	reply, err := xproto.QueryExtension(c, 6, "XFIXES").Reply()
	if err != nil {
		return err
	}
	if !reply.Present {
		return fmt.Errorf("the X server has no XFIXES extension")
	}
	xfixesOnce.Do(func() {
		xfixesOnce.first = reply.FirstEvent
		xfixesOnce.err = xfixes.Init(c)
	})
	if xfixesOnce.err != nil {
		return xfixesOnce.err
	}
	if reply.FirstEvent != xfixesOnce.first {
		return fmt.Errorf("XFIXES events start at %d on this server and at %d on the first: xgb decodes one numbering per process", reply.FirstEvent, xfixesOnce.first)
	}
	c.ExtLock.Lock()
	c.Extensions["XFIXES"] = reply.MajorOpcode
	c.ExtLock.Unlock()
	return nil
}

// OwnerWatch sees a selection get a new owner (the XFixes
// SetSelectionOwner event): what a test waits for after starting xclip -i,
// which returns before its helper process has taken the selection.
type OwnerWatch struct {
	c      *xgb.Conn
	owners chan xproto.Window
	done   chan struct{}
	closed sync.Once
}

// WatchSelection starts watching selection ("CLIPBOARD") on the display of
// env; the watch ends with Close, or with the test. An owner set after it returns is
// seen.
func WatchSelection(t testing.TB, env []string, selection string) *OwnerWatch {
	t.Helper()
	display := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "DISPLAY="); ok {
			display = v
		}
	}
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatalf("connect to %q: %v", display, err)
	}
	w := &OwnerWatch{c: c, owners: make(chan xproto.Window, 16), done: make(chan struct{})}
	go w.read()
	t.Cleanup(w.Close)
	if err := initXFixes(c); err != nil {
		t.Fatalf("XFixes: %v", err)
	}
	if _, err := xfixes.QueryVersion(c, 5, 0).Reply(); err != nil {
		t.Fatalf("XFixes version: %v", err)
	}
	atom, err := xproto.InternAtom(c, false, uint16(len(selection)), selection).Reply()
	if err != nil {
		t.Fatalf("intern %s: %v", selection, err)
	}
	root := xproto.Setup(c).DefaultScreen(c).Root
	// Checked: the server has processed it when Check returns, so no owner
	// set after this call is missed.
	if err := xfixes.SelectSelectionInputChecked(c, root, atom.Atom, xfixes.SelectionEventMaskSetSelectionOwner).Check(); err != nil {
		t.Fatalf("watch %s: %v", selection, err)
	}
	return w
}

// read forwards the new owners until the connection ends.
func (w *OwnerWatch) read() {
	defer close(w.done)
	for {
		ev, xerr := w.c.WaitForEvent()
		if ev == nil && xerr == nil {
			return
		}
		if e, ok := ev.(xfixes.SelectionNotifyEvent); ok && e.Owner != 0 {
			select {
			case w.owners <- e.Owner:
			default:
			}
		}
	}
}

// Owned waits (up to testwait.Hang) until the selection got an owner after
// WatchSelection returned, or since the last Owned.
func (w *OwnerWatch) Owned(t testing.TB) {
	t.Helper()
	testwait.Recv(t, w.owners, "a new owner of the selection")
}

// Close ends the watch and its connection.
func (w *OwnerWatch) Close() {
	w.closed.Do(func() {
		w.c.Close()
		<-w.done
	})
}
