package testdesk

import (
	"context"
	"os"

	"github.com/godbus/dbus/v5"

	"github.com/yazses/yazses/internal/testwait"
)

// kwinUp waits until KWin serves Wayland clients and owns org.kde.KWin on
// the session bus.
func (d *Desk) kwinUp(ctx context.Context, exited *closedSource) {
	t := d.t
	t.Helper()
	w, err := testwait.WatchFile(d.WaylandSocket)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	socket := func() bool {
		fi, err := os.Stat(d.WaylandSocket)
		return err == nil && fi.Mode()&os.ModeSocket != 0
	}
	if err := testwait.Until(ctx, func() bool { return socket() || exited.closed() }, w, exited); err != nil || !socket() {
		t.Fatalf("KWin did not start (%v); desk log:\n%s", err, lastLines(d.log.String(), 40))
	}
	bus, err := dbus.Connect(d.SessionBus)
	if err != nil {
		t.Fatalf("connect to the desk's session bus: %v", err)
	}
	d.bus = bus
}
