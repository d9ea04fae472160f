package wayland

import (
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/internal/wlwire"
)

// FakeCompositor is a Wayland server of the test's own that speaks the
// requests the wayland backend sends: it advertises a seat (and the
// virtual keyboard manager when manager is set), answers wl_display.sync,
// and, with failKeymap, answers the first keymap with a protocol error and
// hangs up, as wlroots does with a keymap it cannot compile. Keys counts
// the key requests it got.
type FakeCompositor struct {
	Env  []string
	Keys atomic.Int64
}

func StartFakeCompositor(t *testing.T, manager, failKeymap bool) *FakeCompositor {
	t.Helper()
	dir := t.TempDir()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "wayland-fake"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	f := &FakeCompositor{Env: []string{"XDG_RUNTIME_DIR=" + dir, "WAYLAND_DISPLAY=wayland-fake", "PATH=" + t.TempDir()}}
	done := make(chan struct{})
	var conns sync.WaitGroup
	go func() {
		defer close(done)
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				defer c.Close()
				f.serve(c, manager, failKeymap)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		conns.Wait()
	})
	return f
}

func (f *FakeCompositor) serve(c *net.UnixConn, withManager, failKeymap bool) {
	send := func(m *wlwire.Msg) bool {
		_, err := c.Write(m.Bytes())
		return err == nil
	}
	var registry, manager, keyboard uint32
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	r := wlwire.NewReader(c)
	defer r.Close()
	for {
		obj, op, a, err := r.Next()
		if err != nil {
			return
		}
		switch {
		case obj == wlwire.DisplayID && op == wlwire.DisplayGetRegistry:
			registry = a.Uint()
			send(wlwire.NewMsg(registry, wlwire.RegistryGlobal).Uint(1).Str(wlwire.SeatInterface).Uint(7))
			if withManager {
				send(wlwire.NewMsg(registry, wlwire.RegistryGlobal).Uint(2).Str(wlVirtualKeyboardManager).Uint(1))
			}
		case obj == wlwire.DisplayID && op == wlwire.DisplaySync:
			id := a.Uint()
			send(wlwire.NewMsg(id, wlwire.CallbackDone).Uint(0))
			send(wlwire.NewMsg(wlwire.DisplayID, wlwire.DisplayDeleteID).Uint(id))
		case obj == registry && op == wlwire.RegistryBind:
			name, iface := a.Uint(), a.Str()
			_, id := a.Uint(), a.Uint()
			if name == 2 && iface == wlVirtualKeyboardManager {
				manager = id
			}
		case manager != 0 && obj == manager && op == zwpVirtualKeyboardManagerCreateVirtualKeyboard:
			_ = a.Uint() // the seat
			keyboard = a.Uint()
		case keyboard != 0 && obj == keyboard && op == zwpVirtualKeyboardKeymap:
			if fd := r.TakeFd(); fd >= 0 {
				unix.Close(fd)
			}
			if failKeymap {
				send(wlwire.NewMsg(wlwire.DisplayID, wlwire.DisplayError).Uint(obj).Uint(2).Str("invalid keymap"))
				return
			}
		case keyboard != 0 && obj == keyboard && op == zwpVirtualKeyboardKey:
			f.Keys.Add(1)
		}
	}
}
