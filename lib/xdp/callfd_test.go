package xdp

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/yazses/yazses/internal/testportal"
	"github.com/yazses/yazses/internal/testwait"
)

// fdPortal answers Open with the read end of a pipe that holds "hello"
// (kept open in sent until the test ends: the reply carries its number).
type fdPortal struct{ sent chan *os.File }

func (p fdPortal) Open() (dbus.UnixFD, *dbus.Error) {
	r, w, err := os.Pipe()
	if err != nil {
		return -1, dbus.MakeFailedError(err)
	}
	defer w.Close()
	if _, err := w.WriteString("hello"); err != nil {
		r.Close()
		return -1, dbus.MakeFailedError(err)
	}
	fd := dbus.UnixFD(r.Fd())
	p.sent <- r
	return fd, nil
}

// TestCallFD: a method answering with a file descriptor (the Clipboard
// portal's SelectionRead and SelectionWrite) gives a file that reads
// what the other side wrote and takes a deadline (non-blocking).
func TestCallFD(t *testing.T) {
	env := testportal.Bus(t)
	var addr string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "DBUS_SESSION_BUS_ADDRESS="); ok {
			addr = v
		}
	}
	srv, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p := fdPortal{sent: make(chan *os.File, 1)}
	defer func() {
		select {
		case r := <-p.sent:
			r.Close()
		default:
		}
	}()
	if err := srv.Export(p, Path, "org.example.Fd"); err != nil {
		t.Fatal(err)
	}
	if reply, err := srv.RequestName(Dest, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own %s: %v, %v", Dest, reply, err)
	}
	ctx := testwait.Context(t)
	c, err := Dial(ctx, env, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := c.CallFD(ctx, "org.example.Fd.Open")
	if err != nil {
		t.Fatalf("CallFD: %v", err)
	}
	defer f.Close()
	if err := f.SetReadDeadline(time.Now().Add(testwait.Hang)); err != nil {
		t.Fatalf("SetReadDeadline: %v (the descriptor is not non-blocking)", err)
	}
	b, err := io.ReadAll(io.LimitReader(f, 5))
	if err != nil || string(b) != "hello" {
		t.Fatalf("read %q, %v; want hello", b, err)
	}
	if _, err := c.CallFD(ctx, "org.example.Fd.Nothing"); err == nil {
		t.Error("CallFD of a method that does not exist: no error")
	}
}
