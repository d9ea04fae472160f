// Package testwl is a Wayland compositor as a client of GNOME's or KDE's
// sees it, for the tests of the portal route: a seat whose keyboard
// hands out a keymap (the one the test gives, as mutter hands the
// person's layouts to every wl_keyboard), and no virtual-keyboard
// protocol (zwp_virtual_keyboard_manager_v1), which mutter and KWin do
// not implement. It speaks the few requests a client sends to learn that
// (wl_display.get_registry and sync, wl_registry.bind, wl_seat.
// get_keyboard) on a socket of the test's own, in the Wayland wire format
// of package wlwire (the keymap's file descriptor over SCM_RIGHTS). Every
// other request is ignored.
package testwl

import (
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/internal/wlwire"
)

// Compositor is one fake compositor.
type Compositor struct {
	// Env is what a client needs: WAYLAND_DISPLAY, an absolute path.
	Env []string
	// Socket is the socket's path.
	Socket string

	keymap string
}

// Start listens on a socket in a fresh folder and serves until the test
// ends. keymap is the XKB keymap (text format v1) the seat hands out.
func Start(t testing.TB, keymap string) *Compositor {
	t.Helper()
	dir, err := os.MkdirTemp("", "ytwl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "wayland-gnome")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	c := &Compositor{Env: []string{"WAYLAND_DISPLAY=" + sock}, Socket: sock, keymap: keymap}
	done := make(chan struct{})
	var conns sync.WaitGroup
	var mu sync.Mutex
	open := map[*net.UnixConn]bool{}
	go func() {
		defer close(done)
		for {
			uc, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			mu.Lock()
			open[uc] = true
			mu.Unlock()
			conns.Add(1)
			go func() {
				defer conns.Done()
				defer func() {
					mu.Lock()
					delete(open, uc)
					mu.Unlock()
					uc.Close()
				}()
				c.serve(uc)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		for uc := range open {
			uc.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	return c
}

// What the compositor offers: one seat with a keyboard.
const (
	seatName    = 1
	seatVersion = 7
	ioTimeout   = time.Minute
)

// serve answers one client until it hangs up.
func (c *Compositor) serve(uc *net.UnixConn) {
	send := func(m *wlwire.Msg) bool {
		_, err := uc.Write(m.Bytes())
		return err == nil
	}
	var registry, seat uint32
	_ = uc.SetDeadline(time.Now().Add(ioTimeout))
	r := wlwire.NewReader(uc)
	defer r.Close()
	for {
		obj, op, a, err := r.Next()
		if err != nil {
			return
		}
		switch {
		case obj == wlwire.DisplayID && op == wlwire.DisplayGetRegistry:
			registry = a.Uint()
			send(wlwire.NewMsg(registry, wlwire.RegistryGlobal).Uint(seatName).Str(wlwire.SeatInterface).Uint(seatVersion))
		case obj == wlwire.DisplayID && op == wlwire.DisplaySync:
			id := a.Uint()
			send(wlwire.NewMsg(id, wlwire.CallbackDone).Uint(0))
			send(wlwire.NewMsg(wlwire.DisplayID, wlwire.DisplayDeleteID).Uint(id))
		case registry != 0 && obj == registry && op == wlwire.RegistryBind:
			name, iface := a.Uint(), a.Str()
			_, id := a.Uint(), a.Uint()
			if name == seatName && iface == wlwire.SeatInterface {
				seat = id
				send(wlwire.NewMsg(seat, wlwire.SeatCapabilities).Uint(wlwire.SeatCapKeyboard))
			}
		case seat != 0 && obj == seat && op == wlwire.SeatGetKeyboard:
			if !c.sendKeymap(uc, a.Uint()) {
				return
			}
		}
	}
}

// sendKeymap hands the keymap over in a sealed memfd, as compositors do.
func (c *Compositor) sendKeymap(uc *net.UnixConn, kbd uint32) bool {
	fd, size, err := wlwire.KeymapFile(c.keymap)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return wlwire.Send(uc, wlwire.NewMsg(kbd, wlwire.KeyboardKeymap).Uint(wlwire.KeymapFormatXKBV1).Uint(size).Bytes(), fd) == nil
}
