// Package xconn is one connection to an X server for yaz-type's X11
// backends (package x11): DISPLAY and the authority cookie read as Xlib
// reads them, every exchange bounded ([IOTimeout]), the XTEST extension
// checked, the events that typing and the paste wait for, and where keys
// go as the server tells it ([Conn.Focus]).
package xconn

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
)

// IOTimeout bounds every exchange with the X server: a server that does
// not answer within it ends the connection (and the typing) with an error
// instead of wedging the caller.
const IOTimeout = 5 * time.Second

// quietXGB sends xgb's own log lines (authority and read errors, which it
// prints to stderr) nowhere: this package returns its errors instead.
var quietXGB = sync.OnceFunc(func() { xgb.Logger = log.New(io.Discard, "", 0) })

// Quiet silences xgb's own log lines (see quietXGB). Dial calls it; a
// test that makes X connections of its own calls it first, as every
// connection reads xgb.Logger.
func Quiet() { quietXGB() }

// xdisplay is a parsed DISPLAY: where to dial and which display number
// the authority file names.
type xdisplay struct {
	network, addr string
	host          string // "" for a local display
	number        string
	screen        int
}

// parseDisplay parses [protocol/][host]:number[.screen] and
// /path/to/socket:number[.screen], as Xlib and xgb do.
func parseDisplay(d string) (xdisplay, error) {
	colon := strings.LastIndex(d, ":")
	if colon < 0 || colon == len(d)-1 {
		return xdisplay{}, fmt.Errorf("bad DISPLAY %q", d)
	}
	var x xdisplay
	num := d[colon+1:]
	if dot := strings.LastIndex(num, "."); dot >= 0 {
		s, err := strconv.Atoi(num[dot+1:])
		if err != nil || s < 0 {
			return xdisplay{}, fmt.Errorf("bad DISPLAY %q", d)
		}
		x.screen, num = s, num[:dot]
	}
	if n, err := strconv.Atoi(num); err != nil || n < 0 {
		return xdisplay{}, fmt.Errorf("bad DISPLAY %q", d)
	}
	x.number = num
	head := d[:colon]
	switch {
	case strings.HasPrefix(head, "/"): // a socket path (launchd style)
		x.network, x.addr = "unix", head+":"+num
	default:
		proto := ""
		if slash := strings.LastIndex(head, "/"); slash >= 0 {
			proto, head = head[:slash], head[slash+1:]
		}
		if head == "" || head == "unix" {
			x.network, x.addr = "unix", "/tmp/.X11-unix/X"+num
			break
		}
		n, _ := strconv.Atoi(num)
		if proto == "" || proto == "inet" || proto == "inet6" {
			proto = "tcp"
		}
		x.network, x.addr, x.host = proto, net.JoinHostPort(head, strconv.Itoa(6000+n)), head
	}
	return x, nil
}

// xauth is one MIT-MAGIC-COOKIE-1 entry of an authority file.
type xauth struct {
	name string
	data []byte
}

// Authority file families (Xauth.h).
const (
	familyLocal = 256
	familyWild  = 65535
)

// readXauth finds the cookie for the display in the authority file that
// env names (XAUTHORITY, else $HOME/.Xauthority). No file or no entry is
// no cookie and no error: the server may not ask for one.
func readXauth(env []string, d xdisplay) (xauth, bool) {
	file := backend.Getenv(env, "XAUTHORITY")
	if file == "" {
		home := backend.Getenv(env, "HOME")
		if home == "" {
			return xauth{}, false
		}
		file = home + "/.Xauthority"
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return xauth{}, false
	}
	host, _ := os.Hostname()
	if d.host != "" && d.host != "localhost" {
		host = d.host
	}
	r := bytes.NewReader(b)
	field := func() ([]byte, error) {
		var n uint16
		if err := binary.Read(r, binary.BigEndian, &n); err != nil {
			return nil, err
		}
		f := make([]byte, n)
		_, err := io.ReadFull(r, f)
		return f, err
	}
	for {
		var family uint16
		if binary.Read(r, binary.BigEndian, &family) != nil {
			return xauth{}, false
		}
		var f [4][]byte // address, display, name, data
		for i := range f {
			if f[i], err = field(); err != nil {
				return xauth{}, false
			}
		}
		addrOK := family == familyWild || (family == familyLocal && string(f[0]) == host)
		dispOK := len(f[1]) == 0 || string(f[1]) == d.number
		if addrOK && dispOK && string(f[2]) == "MIT-MAGIC-COOKIE-1" && len(f[3]) == 16 {
			return xauth{name: string(f[2]), data: f[3]}, true
		}
	}
}

// authConn puts the cookie into the connection setup that xgb writes: xgb
// reads its authority from the process environment and, given a
// connection of ours (which we need to bound every exchange), cannot tell
// which display it is for.
type authConn struct {
	net.Conn
	auth xauth
	sent bool
}

func (a *authConn) Write(p []byte) (int, error) {
	if a.sent {
		return a.Conn.Write(p)
	}
	a.sent = true
	// xgb's setup request without a cookie: byte order, pad, major 11,
	// minor 0, name length 0, data length 0, pad.
	if a.auth.name == "" || len(p) != 12 || p[0] != 'l' || binary.LittleEndian.Uint16(p[6:]) != 0 || binary.LittleEndian.Uint16(p[8:]) != 0 {
		return a.Conn.Write(p)
	}
	name, data := []byte(a.auth.name), a.auth.data
	buf := make([]byte, 12+xgb.Pad(len(name))+xgb.Pad(len(data)))
	copy(buf, p[:6])
	binary.LittleEndian.PutUint16(buf[6:], uint16(len(name)))
	binary.LittleEndian.PutUint16(buf[8:], uint16(len(data)))
	copy(buf[12:], name)
	copy(buf[12+xgb.Pad(len(name)):], data)
	if _, err := a.Conn.Write(buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Conn is one connection to the X server with the XTEST extension. X,
// for the requests of the packages that use it, and the fields below it
// are set by Dial and only read after.
type Conn struct {
	nc   net.Conn
	X    *xgb.Conn
	Root xproto.Window
	// MinKC and MaxKC are the server's keycode range.
	MinKC, MaxKC xproto.Keycode
	// IDMask is the part of a resource id that a client chooses: ids
	// that agree outside it belong to one client.
	IDMask uint32
	// MaxRequest is the longest request the server takes, in bytes.
	MaxRequest int

	events chan xgb.Event // what the reader forwards, see Focus
	done   chan struct{}  // closed when the reader has ended
	closed sync.Once
}

// Dial connects to the display of env and checks for XTEST. Errors wrap
// backend.ErrUnavailable: another backend may still work.
func Dial(ctx context.Context, env []string) (*Conn, error) {
	Quiet()
	display := backend.Getenv(env, "DISPLAY")
	if display == "" {
		return nil, fmt.Errorf("no DISPLAY: %w", backend.ErrUnavailable)
	}
	d, err := parseDisplay(display)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", backend.ErrUnavailable, err)
	}
	dctx, cancel := context.WithTimeout(ctx, IOTimeout)
	defer cancel()
	nc, err := (&net.Dialer{}).DialContext(dctx, d.network, d.addr)
	if err != nil {
		return nil, fmt.Errorf("connect to the X display: %w: %w", backend.ErrUnavailable, err)
	}
	_ = nc.SetDeadline(time.Now().Add(IOTimeout))
	auth, _ := readXauth(env, d)
	c, err := xgb.NewConnNet(&authConn{Conn: nc, auth: auth})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("connect to the X display: %w: %w", backend.ErrUnavailable, err)
	}
	x := &Conn{nc: nc, X: c, events: make(chan xgb.Event, 64), done: make(chan struct{})}
	go x.read()
	setup := xproto.Setup(c)
	if d.screen >= len(setup.Roots) {
		x.Close()
		return nil, fmt.Errorf("DISPLAY names screen %d, the server has %d: %w", d.screen, len(setup.Roots), backend.ErrUnavailable)
	}
	x.Root = setup.Roots[d.screen].Root
	x.MinKC, x.MaxKC = setup.MinKeycode, setup.MaxKeycode
	x.IDMask, x.MaxRequest = setup.ResourceIdMask, int(setup.MaximumRequestLength)*4
	if err := xtest.Init(c); err != nil {
		x.Close()
		return nil, fmt.Errorf("the X server has no XTEST extension: %w", backend.ErrUnavailable)
	}
	return x, nil
}

// read forwards the events that matter (see Focus) until the connection
// ends. It never blocks on a full channel: the typing loop reads the
// channel only at its checkpoints, and a blocked reader would stall every
// reply behind it.
func (x *Conn) read() {
	defer close(x.done)
	for {
		ev, xerr := x.X.WaitForEvent()
		if ev == nil && xerr == nil {
			return // the connection is closed
		}
		switch ev.(type) {
		case xproto.DestroyNotifyEvent, xproto.UnmapNotifyEvent, xproto.FocusOutEvent, xproto.PropertyNotifyEvent,
			xproto.SelectionRequestEvent, xproto.SelectionNotifyEvent, xproto.SelectionClearEvent:
			select {
			case x.events <- ev:
			default:
			}
		}
	}
}

// Events are the events that typing and the paste wait for: the target
// window's end and focus loss (see Focus), the root's property changes,
// and the selection events. One that comes while the channel is full is
// dropped.
func (x *Conn) Events() <-chan xgb.Event { return x.events }

// Done is closed when the connection has ended.
func (x *Conn) Done() <-chan struct{} { return x.done }

// Extend gives the next exchanges d plus IOTimeout to finish.
func (x *Conn) Extend(d time.Duration) {
	_ = x.nc.SetDeadline(time.Now().Add(d + IOTimeout))
}

// Sync is a round trip: every request sent before it has been processed
// by the server when it returns (GetInputFocus, whose answer it returns).
func (x *Conn) Sync() (xproto.Window, error) {
	x.Extend(0)
	r, err := xproto.GetInputFocus(x.X).Reply()
	if err != nil {
		return 0, fmt.Errorf("x11: %w", err)
	}
	return r.Focus, nil
}

// Close ends the connection and waits for xgb's goroutines and the
// reader. A server that does not answer is cut off after IOTimeout.
func (x *Conn) Close() {
	x.closed.Do(func() {
		x.Extend(0)
		x.X.Close()
		<-x.done
		x.nc.Close()
	})
}

// errXClosed is what xgb returns once the connection is gone.
var errXClosed = io.EOF

// IsGone reports whether err means that the connection to the X server
// is lost.
func IsGone(err error) bool {
	var ne net.Error
	return errors.Is(err, errXClosed) || errors.As(err, &ne)
}

// Target is the focused window as the protocol tells it.
type Target struct {
	Focus  backend.Focus
	Class  []string // WM_CLASS instance and class
	Win    xproto.Window
	Active xproto.Atom // _NET_ACTIVE_WINDOW when a window manager keeps it, else 0
	// Input is the X input focus when the target was read: a change of it
	// (or of the active window) before a batch of keys stops typing.
	Input xproto.Window
}

// InternAtoms interns names, creating those the server does not know.
func (x *Conn) InternAtoms(names ...string) ([]xproto.Atom, error) {
	return x.intern(false, names)
}

// Atoms interns names (0 for a name the server does not know).
func (x *Conn) Atoms(names ...string) ([]xproto.Atom, error) {
	return x.intern(true, names)
}

// intern interns names in one round trip; onlyIfExists: 0 for a name the
// server does not know, else the server creates it.
func (x *Conn) intern(onlyIfExists bool, names []string) ([]xproto.Atom, error) {
	cookies := make([]xproto.InternAtomCookie, len(names))
	for i, n := range names {
		cookies[i] = xproto.InternAtom(x.X, onlyIfExists, uint16(len(n)), n)
	}
	out := make([]xproto.Atom, len(names))
	for i, ck := range cookies {
		r, err := ck.Reply()
		if err != nil {
			return nil, fmt.Errorf("x11: intern atom: %w", err)
		}
		out[i] = r.Atom
	}
	return out, nil
}

// WindowProp reads a property of type WINDOW: the window and whether the
// property is set.
func WindowProp(r *xproto.GetPropertyReply) (xproto.Window, bool) {
	if r == nil || r.Format != 32 || r.ValueLen < 1 || len(r.Value) < 4 {
		return 0, false
	}
	return xproto.Window(xgb.Get32(r.Value)), true
}

// atomList reads a property of type ATOM.
func atomList(r *xproto.GetPropertyReply) []xproto.Atom {
	if r == nil || r.Format != 32 {
		return nil
	}
	var out []xproto.Atom
	for i := 0; i+4 <= len(r.Value) && uint32(i/4) < r.ValueLen; i += 4 {
		out = append(out, xproto.Atom(xgb.Get32(r.Value[i:])))
	}
	return out
}

// Focus tells where keys go, with the rules of the xprop-based
// xdotool.Focus:
// the root's _NET_ACTIVE_WINDOW where an EWMH window manager keeps it (0,
// unset while listed in _NET_SUPPORTED, a window that is gone or a desktop
// window mean none), else the X input focus (None, PointerRoot, the root
// and the window manager's check window mean none). With watch, the
// target window's structure and focus changes (and the root's properties)
// are selected, so that typing stops when it goes away.
func (x *Conn) Focus(watch bool) (Target, error) {
	x.Extend(0)
	a, err := x.Atoms("_NET_ACTIVE_WINDOW", "_NET_SUPPORTING_WM_CHECK", "_NET_SUPPORTED",
		"_NET_WM_WINDOW_TYPE", "_NET_WM_WINDOW_TYPE_DESKTOP")
	if err != nil {
		return Target{}, err
	}
	netActive, netCheck, netSupported, netType, netDesktop := a[0], a[1], a[2], a[3], a[4]
	prop := func(w xproto.Window, atom xproto.Atom, typ xproto.Atom, n uint32) xproto.GetPropertyCookie {
		return xproto.GetProperty(x.X, false, w, atom, typ, 0, n)
	}
	var activeC, checkC, supportedC xproto.GetPropertyCookie
	if netActive != 0 {
		activeC = prop(x.Root, netActive, xproto.AtomWindow, 1)
	}
	if netCheck != 0 {
		checkC = prop(x.Root, netCheck, xproto.AtomWindow, 1)
	}
	if netSupported != 0 {
		supportedC = prop(x.Root, netSupported, xproto.AtomAtom, 4096)
	}
	focusC := xproto.GetInputFocus(x.X)
	reply := func(c xproto.GetPropertyCookie, ok bool) (*xproto.GetPropertyReply, error) {
		if !ok {
			return nil, nil
		}
		return c.Reply()
	}
	active, err := reply(activeC, netActive != 0)
	if err != nil {
		return Target{}, fmt.Errorf("x11: active window: %w", err)
	}
	check, err := reply(checkC, netCheck != 0)
	if err != nil {
		return Target{}, fmt.Errorf("x11: window manager: %w", err)
	}
	supported, err := reply(supportedC, netSupported != 0)
	if err != nil {
		return Target{}, fmt.Errorf("x11: window manager: %w", err)
	}
	fr, err := focusC.Reply()
	if err != nil {
		return Target{}, fmt.Errorf("x11: input focus: %w", err)
	}
	t := Target{Input: fr.Focus}
	win, activeSet := WindowProp(active)
	wmCheck, _ := WindowProp(check)
	switch {
	case activeSet:
		if win == 0 {
			return Target{Focus: backend.FocusNone}, nil
		}
		t.Active = netActive
	case slices.Contains(atomList(supported), netActive):
		return Target{Focus: backend.FocusNone}, nil
	default:
		win = fr.Focus
		if win <= 1 || win == wmCheck || win == x.Root { // None, PointerRoot
			return Target{Focus: backend.FocusNone}, nil
		}
	}
	t.Win = win
	if watch {
		// From here on the window's end and focus loss reach us as events.
		mask := uint32(xproto.EventMaskStructureNotify | xproto.EventMaskFocusChange)
		if err := xproto.ChangeWindowAttributesChecked(x.X, win, xproto.CwEventMask, []uint32{mask}).Check(); err != nil {
			if IsGone(err) {
				return Target{}, fmt.Errorf("x11: %w", err)
			}
			return Target{Focus: backend.FocusNone}, nil // the window is gone
		}
		if t.Active != 0 {
			xproto.ChangeWindowAttributes(x.X, x.Root, xproto.CwEventMask, []uint32{xproto.EventMaskPropertyChange})
		}
	}
	classC := prop(win, xproto.AtomWmClass, xproto.AtomString, 256)
	var typeC xproto.GetPropertyCookie
	if netType != 0 {
		typeC = prop(win, netType, xproto.AtomAtom, 64)
	}
	class, err := classC.Reply()
	if err != nil {
		if IsGone(err) {
			return Target{}, fmt.Errorf("x11: %w", err)
		}
		// The window is gone (some window managers leave a closed window
		// in _NET_ACTIVE_WINDOW).
		return Target{Focus: backend.FocusNone}, nil
	}
	types, err := reply(typeC, netType != 0)
	if err != nil {
		return Target{Focus: backend.FocusNone}, nil
	}
	if netDesktop != 0 && slices.Contains(atomList(types), netDesktop) {
		return Target{Focus: backend.FocusNone}, nil // the desktop itself is active
	}
	t.Focus = backend.FocusWindow
	if class != nil && class.Format == 8 {
		t.Class = strings.Split(strings.TrimRight(string(class.Value), "\x00"), "\x00")
	}
	return t, nil
}
