package wayland

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/tool"
	"github.com/yazses/yazses/internal/wlwire"
)

// The Wayland client of the "wayland" backend, on the wire format of
// package wlwire, with the names of wayland.xml and
// virtual-keyboard-unstable-v1.xml.

// wlIOTimeout bounds every exchange with the compositor: one that stops
// answering ends the call with an error.
const wlIOTimeout = 5 * time.Second

// Opcodes and values of virtual-keyboard-unstable-v1.xml and
// wl_keyboard.key_state.
const (
	// zwp_virtual_keyboard_manager_v1.
	zwpVirtualKeyboardManagerCreateVirtualKeyboard = 0

	// zwp_virtual_keyboard_v1.
	zwpVirtualKeyboardKeymap    = 0
	zwpVirtualKeyboardKey       = 1
	zwpVirtualKeyboardModifiers = 2
	zwpVirtualKeyboardDestroy   = 3

	wlKeyReleased = 0
	wlKeyPressed  = 1

	wlVirtualKeyboardManager = "zwp_virtual_keyboard_manager_v1"
)

// Errors of the Wayland client.
var (
	// errWlNoVirtualKeyboard: the compositor does not offer
	// zwp_virtual_keyboard_manager_v1 (GNOME, KDE) or has no seat.
	errWlNoVirtualKeyboard = errors.New("the compositor offers no virtual keyboard (zwp_virtual_keyboard_manager_v1)")
	// errWlGone: the connection to the compositor ended.
	errWlGone = errors.New("the Wayland connection ended")
)

// wlSocket is the compositor's socket for an environment:
// $XDG_RUNTIME_DIR/$WAYLAND_DISPLAY, or WAYLAND_DISPLAY itself when it is
// absolute.
func wlSocket(env []string) (string, error) {
	d := backend.Getenv(env, "WAYLAND_DISPLAY")
	if d == "" {
		return "", fmt.Errorf("no WAYLAND_DISPLAY: %w", backend.ErrUnavailable)
	}
	if filepath.IsAbs(d) {
		return d, nil
	}
	rt := backend.Getenv(env, "XDG_RUNTIME_DIR")
	if rt == "" {
		return "", fmt.Errorf("WAYLAND_DISPLAY is relative and XDG_RUNTIME_DIR is unset: %w", backend.ErrUnavailable)
	}
	return filepath.Join(rt, d), nil
}

// wlGlobal is one global of the registry.
type wlGlobal struct {
	iface   string
	version uint32
}

// wlclient is one connection to the compositor. A goroutine (read) owns
// the reading side until the connection ends; requests are written by
// one caller at a time (Route.mu).
type wlclient struct {
	path string
	conn *net.UnixConn
	r    *wlwire.Reader // read's until done is closed

	mu        sync.Mutex
	nextID    uint32
	freeIDs   []uint32
	globals   map[uint32]wlGlobal
	callbacks map[uint32]chan struct{}
	err       error         // the first fatal error
	dead      chan struct{} // closed when err is set
	watched   map[uint32]string
	drop      []uint32             // offers to destroy with the next write
	sources   map[uint32]*wlSource // the paste's data sources
	dcDevice  uint32               // the data control device (0: none)
	seatKbd   uint32               // the seat's wl_keyboard (SeatKeymap; 0: none)
	keymaps   chan seatKeymap      // its keymap events

	done   chan struct{} // closed when read has ended
	closed sync.Once

	// Set up by bindKeyboard and dataDevice; used under Route.mu only.
	registry, seat, manager, keyboard, dcManager uint32
}

// dialWl connects to the compositor of env and reads its globals.
func dialWl(ctx context.Context, env []string) (*wlclient, error) {
	path, err := wlSocket(env)
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, wlIOTimeout)
	defer cancel()
	nc, err := (&net.Dialer{}).DialContext(dctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("connect to the Wayland compositor: %w: %w", backend.ErrUnavailable, err)
	}
	c := &wlclient{
		path: path, conn: nc.(*net.UnixConn), r: wlwire.NewReader(nc.(*net.UnixConn)), nextID: 2,
		globals: map[uint32]wlGlobal{}, callbacks: map[uint32]chan struct{}{},
		watched: map[uint32]string{}, sources: map[uint32]*wlSource{},
		dead: make(chan struct{}), done: make(chan struct{}),
	}
	go c.read()
	c.registry = c.newID()
	if err := c.write(wlwire.NewMsg(wlwire.DisplayID, wlwire.DisplayGetRegistry).Uint(c.registry)); err != nil {
		c.close()
		return nil, fmt.Errorf("wayland: get_registry: %w: %w", backend.ErrUnavailable, err)
	}
	if err := c.roundtrip(ctx); err != nil {
		c.close()
		return nil, fmt.Errorf("wayland: registry: %w: %w", backend.ErrUnavailable, err)
	}
	return c, nil
}

// newID allocates an object id (one the compositor has deleted first).
func (c *wlclient) newID() uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.freeIDs); n > 0 {
		id := c.freeIDs[n-1]
		c.freeIDs = c.freeIDs[:n-1]
		return id
	}
	id := c.nextID
	c.nextID++
	return id
}

// fail records the first fatal error and wakes every waiter.
func (c *wlclient) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		close(c.dead)
	}
}

// failed returns the fatal error, or nil.
func (c *wlclient) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// write sends messages in one write (the last one's fd, if any, beside
// them), with a deadline.
func (c *wlclient) write(msgs ...*wlwire.Msg) error {
	if err := c.failed(); err != nil {
		return err
	}
	var buf []byte
	fd := -1
	c.mu.Lock()
	drop := c.drop
	c.drop = nil
	c.mu.Unlock()
	for _, id := range drop {
		buf = append(buf, wlwire.NewMsg(id, zwlrDataControlOfferDestroy).Bytes()...)
	}
	for _, m := range msgs {
		buf = append(buf, m.Bytes()...)
		if m.FD >= 0 {
			fd = m.FD
		}
	}
	return c.writeRaw(buf, fd)
}

// writeRaw writes messages with fd beside them (-1: none), with a
// deadline.
func (c *wlclient) writeRaw(buf []byte, fd int) error {
	_ = c.conn.SetWriteDeadline(time.Now().Add(wlIOTimeout))
	if err := wlwire.Send(c.conn, buf, fd); err != nil {
		if errors.Is(err, unix.EPIPE) || errors.Is(err, unix.ECONNRESET) {
			// The compositor hung up: its reason (wl_display.error) may
			// still be unread. The reader reads it, and then the end.
			t := time.NewTimer(wlIOTimeout)
			select {
			case <-c.done:
			case <-t.C:
			}
			t.Stop()
		}
		if ferr := c.failed(); ferr != nil {
			return ferr // the compositor's own reason (a protocol error)
		}
		err = fmt.Errorf("%w: %w", errWlGone, err)
		c.fail(err)
		return err
	}
	return nil
}

// roundtrip sends wl_display.sync and waits for its done: every request
// sent before it has been processed by the compositor when it returns.
func (c *wlclient) roundtrip(ctx context.Context) error {
	id := c.newID()
	ch := make(chan struct{})
	c.mu.Lock()
	c.callbacks[id] = ch
	c.mu.Unlock()
	if err := c.write(wlwire.NewMsg(wlwire.DisplayID, wlwire.DisplaySync).Uint(id)); err != nil {
		return err
	}
	t := time.NewTimer(wlIOTimeout)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-c.dead:
		return c.failed()
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		err := fmt.Errorf("%w: the compositor did not answer within %v", errWlGone, wlIOTimeout)
		c.fail(err)
		return err
	}
}

// global finds the name and version of the first global of an interface.
func (c *wlclient) global(iface string) (name, version uint32, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n, g := range c.globals {
		if g.iface == iface && (!ok || n < name) {
			name, version, ok = n, g.version, true
		}
	}
	return name, version, ok
}

// bind binds a global at version 1 and watches it: its removal ends the
// client.
func (c *wlclient) bind(iface string) (uint32, error) {
	name, _, ok := c.global(iface)
	if !ok {
		return 0, fmt.Errorf("wayland: no %s: %w: %w", iface, errWlNoVirtualKeyboard, backend.ErrUnavailable)
	}
	id := c.newID()
	c.mu.Lock()
	c.watched[name] = iface
	c.mu.Unlock()
	m := wlwire.NewMsg(c.registry, wlwire.RegistryBind).Uint(name).Str(iface).Uint(1).Uint(id)
	if err := c.write(m); err != nil {
		return 0, fmt.Errorf("wayland: bind %s: %w", iface, err)
	}
	return id, nil
}

// bindKeyboard binds the first seat and the virtual keyboard manager and
// creates the virtual keyboard, once per connection.
func (c *wlclient) bindKeyboard(ctx context.Context) error {
	if c.keyboard != 0 {
		return nil
	}
	var err error
	if c.seat, err = c.bind(wlwire.SeatInterface); err != nil {
		return err
	}
	if c.manager, err = c.bind(wlVirtualKeyboardManager); err != nil {
		return err
	}
	kb := c.newID()
	if err := c.write(wlwire.NewMsg(c.manager, zwpVirtualKeyboardManagerCreateVirtualKeyboard).Uint(c.seat).Uint(kb)); err != nil {
		return fmt.Errorf("wayland: create_virtual_keyboard: %w", err)
	}
	// A compositor that refuses (zwp_virtual_keyboard_manager_v1.error
	// unauthorized) says so before this answers.
	if err := c.roundtrip(ctx); err != nil {
		return fmt.Errorf("wayland: create_virtual_keyboard: %w", err)
	}
	c.keyboard = kb
	return nil
}

// read parses events until the connection ends.
func (c *wlclient) read() {
	defer close(c.done)
	for {
		obj, opcode, a, err := c.r.Next()
		switch {
		case errors.Is(err, wlwire.ErrMalformed):
			c.fail(fmt.Errorf("%w: a malformed message from the compositor", errWlGone))
			return
		case err != nil:
			c.fail(fmt.Errorf("%w: %w", errWlGone, err))
			return
		}
		c.event(obj, opcode, a)
	}
}

// event handles one event.
func (c *wlclient) event(obj, opcode uint32, a *wlwire.Args) {
	c.mu.Lock()
	handled := c.dataEvent(obj, opcode, a) || c.keyboardEvent(obj, opcode, a)
	c.mu.Unlock()
	if handled {
		return
	}
	switch {
	case obj == wlwire.DisplayID && opcode == wlwire.DisplayError:
		id, code, msg := a.Uint(), a.Uint(), a.Str()
		// The compositor's message names a request or an object, never
		// the text (which is only in the keymap and the key codes).
		c.fail(fmt.Errorf("wayland: protocol error on object %d, code %d: %s", id, code, tool.Redact(msg, "")))
	case obj == wlwire.DisplayID && opcode == wlwire.DisplayDeleteID:
		id := a.Uint()
		if a.Bad() {
			return
		}
		c.mu.Lock()
		if _, pending := c.callbacks[id]; !pending {
			c.freeIDs = append(c.freeIDs, id)
		}
		c.mu.Unlock()
	case obj == c.registry && opcode == wlwire.RegistryGlobal:
		name, iface, version := a.Uint(), a.Str(), a.Uint()
		if a.Bad() {
			return
		}
		c.mu.Lock()
		c.globals[name] = wlGlobal{iface: iface, version: version}
		c.mu.Unlock()
	case obj == c.registry && opcode == wlwire.RegistryGlobalRemove:
		name := a.Uint()
		c.mu.Lock()
		delete(c.globals, name)
		iface, watched := c.watched[name]
		c.mu.Unlock()
		if watched {
			c.fail(fmt.Errorf("%w: the compositor removed its %s", errWlGone, iface))
		}
	case opcode == wlwire.CallbackDone:
		c.mu.Lock()
		ch, ok := c.callbacks[obj]
		delete(c.callbacks, obj)
		c.mu.Unlock()
		if ok {
			close(ch)
		}
	}
}

// close destroys the virtual keyboard (when the connection still works)
// and ends the connection, waiting for the reader.
func (c *wlclient) close() {
	c.closed.Do(func() {
		if c.keyboard != 0 && c.failed() == nil {
			_ = c.write(wlwire.NewMsg(c.keyboard, zwpVirtualKeyboardDestroy))
		}
		c.fail(fmt.Errorf("%w: closed", errWlGone))
		_ = c.conn.Close()
		<-c.done
		c.r.Close()
	})
}
