package testportal

import (
	"fmt"
	"sync"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/yazses/yazses/internal/testwait"
)

// The backend exports a Request (and a Session) on each call and takes
// the Request away as the call returns; godbus runs every call on a
// goroutine of its own, and its Export reads the table of objects without
// its lock (godbus 5.2.4, default_handler.go PathExists). Calls that
// overlap, as the frontend's do, raced there: under -race a whole e2e
// run failed with "race detected" in every portal test that ran beside.
// Many overlapping calls straight to the backend: -race must stay quiet.
func TestBackendOverlappingCalls(t *testing.T) {
	p := Start(t, Options{})
	c, err := dbus.Connect(p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	obj := c.Object(BackendName, implPath)
	ctx := testwait.Context(t) // each call is bounded, and says so when it is not answered
	const callers, rounds = 16, 8
	var wg sync.WaitGroup
	errs := make(chan error, callers*rounds)
	for i := range callers {
		wg.Go(func() {
			for r := range rounds {
				handle := dbus.ObjectPath(fmt.Sprintf("/org/freedesktop/portal/desktop/request/t/r%d_%d", i, r))
				sess := dbus.ObjectPath(fmt.Sprintf("/org/freedesktop/portal/desktop/session/t/s%d_%d", i, r))
				var code uint32
				var res map[string]dbus.Variant
				if err := obj.CallWithContext(ctx, implRD+".CreateSession", 0, handle, sess, "", map[string]dbus.Variant{}).Store(&code, &res); err != nil {
					errs <- err
					return
				}
				if err := c.Object(BackendName, sess).CallWithContext(ctx, implSession+".Close", 0).Err; err != nil {
					errs <- err
					return
				}
			}
		})
	}
	testwait.Group(t, &wg, "the overlapping calls to be answered")
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := len(p.Backend.RemoteDesktopSessions()); got != callers*rounds {
		t.Errorf("the backend made %d sessions, want %d", got, callers*rounds)
	}
}
