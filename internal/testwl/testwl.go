// Package testwl is a Wayland compositor as a client of GNOME's or KDE's
// sees it, for the tests of the portal route: a seat whose keyboard
// hands out a keymap (the one the test gives, as mutter hands the
// person's layouts to every wl_keyboard), and no virtual-keyboard
// protocol (zwp_virtual_keyboard_manager_v1), which mutter and KWin do
// not implement. It speaks the few requests a client sends to learn that
// (wl_display.get_registry and sync, wl_registry.bind, wl_seat.
// get_keyboard) on a socket of the test's own, in the Wayland wire format
// (little-endian words: object id, size << 16 | opcode, arguments; the
// keymap's file descriptor over SCM_RIGHTS). Every other request is
// ignored.
package testwl

import (
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Compositor is one fake compositor.
type Compositor struct {
	// Env is what a client needs: WAYLAND_DISPLAY, an absolute path.
	Env []string
	// Socket is the socket's path.
	Socket string

	keymap []byte
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
	c := &Compositor{Env: []string{"WAYLAND_DISPLAY=" + sock}, Socket: sock, keymap: append([]byte(keymap), 0)}
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

// Wire constants (wayland.xml).
const (
	displayID          = 1
	displaySync        = 0
	displayGetRegistry = 1
	displayDeleteID    = 1 // event
	registryBind       = 0
	registryGlobal     = 0 // event
	callbackDone       = 0 // event
	seatGetKeyboard    = 1
	seatCapabilities   = 0 // event
	seatCapKeyboard    = 2
	keyboardKeymap     = 0 // event
	keymapFormatXKBV1  = 1
	seatName           = 1
	seatVersion        = 7
	ioTimeout          = time.Minute
	maxMessage         = 4096
	seatInterface      = "wl_seat"
)

// msg is one event.
type msg struct{ b []byte }

func event(obj, opcode uint32) *msg {
	m := &msg{b: make([]byte, 8)}
	binary.LittleEndian.PutUint32(m.b, obj)
	binary.LittleEndian.PutUint32(m.b[4:], opcode)
	return m
}

func (m *msg) uint(v uint32) *msg {
	m.b = binary.LittleEndian.AppendUint32(m.b, v)
	return m
}

func (m *msg) str(s string) *msg {
	m.uint(uint32(len(s) + 1))
	m.b = append(m.b, s...)
	m.b = append(m.b, 0)
	for len(m.b)%4 != 0 {
		m.b = append(m.b, 0)
	}
	return m
}

func (m *msg) bytes() []byte {
	word := binary.LittleEndian.Uint32(m.b[4:])
	binary.LittleEndian.PutUint32(m.b[4:], uint32(len(m.b))<<16|word&0xffff)
	return m.b
}

// args reads a request's arguments.
type args struct{ b []byte }

func (a *args) uint() uint32 {
	if len(a.b) < 4 {
		return 0
	}
	v := binary.LittleEndian.Uint32(a.b)
	a.b = a.b[4:]
	return v
}

func (a *args) str() string {
	n := int(a.uint())
	if n == 0 || len(a.b) < n {
		return ""
	}
	s := string(a.b[:n-1])
	a.b = a.b[(n+3)&^3:]
	return s
}

// serve answers one client until it hangs up.
func (c *Compositor) serve(uc *net.UnixConn) {
	send := func(m *msg, fd int) bool {
		var oob []byte
		if fd >= 0 {
			oob = unix.UnixRights(fd)
		}
		_, _, err := uc.WriteMsgUnix(m.bytes(), oob, nil)
		return err == nil
	}
	var registry, seat uint32
	_ = uc.SetDeadline(time.Now().Add(ioTimeout))
	buf := make([]byte, 0, 2*maxMessage)
	chunk := make([]byte, maxMessage)
	oob := make([]byte, unix.CmsgSpace(28*4))
	for {
		n, oobn, _, _, err := uc.ReadMsgUnix(chunk, oob)
		if oobn > 0 {
			if cms, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
				for _, cm := range cms {
					if fds, ferr := unix.ParseUnixRights(&cm); ferr == nil {
						for _, fd := range fds {
							unix.Close(fd)
						}
					}
				}
			}
		}
		buf = append(buf, chunk[:max(n, 0)]...)
		for len(buf) >= 8 {
			obj, word := binary.LittleEndian.Uint32(buf), binary.LittleEndian.Uint32(buf[4:])
			size, op := int(word>>16), word&0xffff
			if size < 8 || len(buf) < size {
				break
			}
			a := &args{b: buf[8:size]}
			switch {
			case obj == displayID && op == displayGetRegistry:
				registry = a.uint()
				send(event(registry, registryGlobal).uint(seatName).str(seatInterface).uint(seatVersion), -1)
			case obj == displayID && op == displaySync:
				id := a.uint()
				send(event(id, callbackDone).uint(0), -1)
				send(event(displayID, displayDeleteID).uint(id), -1)
			case registry != 0 && obj == registry && op == registryBind:
				name, iface := a.uint(), a.str()
				_, id := a.uint(), a.uint()
				if name == seatName && iface == seatInterface {
					seat = id
					send(event(seat, seatCapabilities).uint(seatCapKeyboard), -1)
				}
			case seat != 0 && obj == seat && op == seatGetKeyboard:
				kbd := a.uint()
				if !c.sendKeymap(kbd, send) {
					return
				}
			}
			buf = buf[size:]
		}
		buf = append(buf[:0:0], buf...)
		if err != nil {
			return
		}
	}
}

// sendKeymap hands the keymap over in a sealed memfd, as compositors do.
func (c *Compositor) sendKeymap(kbd uint32, send func(*msg, int) bool) bool {
	fd, err := unix.MemfdCreate("testwl-keymap", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, c.keymap); err != nil {
		return false
	}
	_, _ = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE)
	return send(event(kbd, keyboardKeymap).uint(keymapFormatXKBV1).uint(uint32(len(c.keymap))), fd)
}
