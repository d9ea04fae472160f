package wayland

import (
	"encoding/binary"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
	send := func(m *wlMsg) bool {
		_, err := c.Write(m.bytes())
		return err == nil
	}
	var registry, manager, keyboard uint32
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	buf := make([]byte, 0, 8192)
	chunk := make([]byte, 4096)
	oob := make([]byte, 256)
	for {
		n, oobn, _, _, err := c.ReadMsgUnix(chunk, oob)
		closeFds(oob[:max(oobn, 0)])
		buf = append(buf, chunk[:max(n, 0)]...)
		for len(buf) >= 8 {
			obj, word := binary.LittleEndian.Uint32(buf), binary.LittleEndian.Uint32(buf[4:])
			size, op := int(word>>16), word&0xffff
			if len(buf) < size {
				break
			}
			a := &wlArgs{b: buf[8:size]}
			switch {
			case obj == wlDisplayID && op == wlDisplayGetRegistry:
				registry = a.uint()
				send(newWlMsg(registry, wlRegistryGlobal).uint(1).str(wlSeatInterface).uint(7))
				if withManager {
					send(newWlMsg(registry, wlRegistryGlobal).uint(2).str(wlVirtualKeyboardManager).uint(1))
				}
			case obj == wlDisplayID && op == wlDisplaySync:
				id := a.uint()
				send(newWlMsg(id, wlCallbackDone).uint(0))
				send(newWlMsg(wlDisplayID, wlDisplayDeleteID).uint(id))
			case obj == registry && op == wlRegistryBind:
				name, iface := a.uint(), a.str()
				_, id := a.uint(), a.uint()
				if name == 2 && iface == wlVirtualKeyboardManager {
					manager = id
				}
			case manager != 0 && obj == manager && op == zwpVirtualKeyboardManagerCreateVirtualKeyboard:
				_ = a.uint() // the seat
				keyboard = a.uint()
			case keyboard != 0 && obj == keyboard && op == zwpVirtualKeyboardKeymap:
				if failKeymap {
					send(newWlMsg(wlDisplayID, wlDisplayError).uint(obj).uint(2).str("invalid keymap"))
					return
				}
			case keyboard != 0 && obj == keyboard && op == zwpVirtualKeyboardKey:
				f.Keys.Add(1)
			}
			buf = buf[size:]
		}
		if err != nil {
			return
		}
	}
}
