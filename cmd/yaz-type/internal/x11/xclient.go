package x11

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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
)

// xIOTimeout bounds every exchange with the X server: a server that does
// not answer within it ends the connection (and the typing) with an error
// instead of wedging the caller.
const xIOTimeout = 5 * time.Second

// quietXGB sends xgb's own log lines (authority and read errors, which it
// prints to stderr) nowhere: this package returns its errors instead.
var quietXGB = sync.OnceFunc(func() { xgb.Logger = log.New(io.Discard, "", 0) })

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

// xclient is one connection to the X server with the XTEST extension.
type xclient struct {
	nc   net.Conn
	c    *xgb.Conn
	root xproto.Window
	// minKC and maxKC are the server's keycode range.
	minKC, maxKC xproto.Keycode
	// idMask is the part of a resource id that a client chooses: ids
	// that agree outside it belong to one client.
	idMask uint32
	// maxRequest is the longest request the server takes, in bytes.
	maxRequest int

	events chan xgb.Event // what the reader forwards, see watch
	done   chan struct{}  // closed when the reader has ended
	closed sync.Once
}

// dialX connects to the display of env and checks for XTEST. Errors wrap
// backend.ErrUnavailable: another backend may still work.
func dialX(ctx context.Context, env []string) (*xclient, error) {
	quietXGB()
	display := backend.Getenv(env, "DISPLAY")
	if display == "" {
		return nil, fmt.Errorf("no DISPLAY: %w", backend.ErrUnavailable)
	}
	d, err := parseDisplay(display)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", backend.ErrUnavailable, err)
	}
	dctx, cancel := context.WithTimeout(ctx, xIOTimeout)
	defer cancel()
	nc, err := (&net.Dialer{}).DialContext(dctx, d.network, d.addr)
	if err != nil {
		return nil, fmt.Errorf("connect to the X display: %w: %w", backend.ErrUnavailable, err)
	}
	_ = nc.SetDeadline(time.Now().Add(xIOTimeout))
	auth, _ := readXauth(env, d)
	c, err := xgb.NewConnNet(&authConn{Conn: nc, auth: auth})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("connect to the X display: %w: %w", backend.ErrUnavailable, err)
	}
	x := &xclient{nc: nc, c: c, events: make(chan xgb.Event, 64), done: make(chan struct{})}
	go x.read()
	setup := xproto.Setup(c)
	if d.screen >= len(setup.Roots) {
		x.close()
		return nil, fmt.Errorf("DISPLAY names screen %d, the server has %d: %w", d.screen, len(setup.Roots), backend.ErrUnavailable)
	}
	x.root = setup.Roots[d.screen].Root
	x.minKC, x.maxKC = setup.MinKeycode, setup.MaxKeycode
	x.idMask, x.maxRequest = setup.ResourceIdMask, int(setup.MaximumRequestLength)*4
	if err := xtest.Init(c); err != nil {
		x.close()
		return nil, fmt.Errorf("the X server has no XTEST extension: %w", backend.ErrUnavailable)
	}
	return x, nil
}

// read forwards the events that matter (see watch) until the connection
// ends. It never blocks on a full channel: the typing loop reads the
// channel only at its checkpoints, and a blocked reader would stall every
// reply behind it.
func (x *xclient) read() {
	defer close(x.done)
	for {
		ev, xerr := x.c.WaitForEvent()
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

// extend gives the next exchanges d plus xIOTimeout to finish.
func (x *xclient) extend(d time.Duration) {
	_ = x.nc.SetDeadline(time.Now().Add(d + xIOTimeout))
}

// sync is a round trip: every request sent before it has been processed
// by the server when it returns (GetInputFocus, whose answer it returns).
func (x *xclient) sync() (xproto.Window, error) {
	x.extend(0)
	r, err := xproto.GetInputFocus(x.c).Reply()
	if err != nil {
		return 0, fmt.Errorf("x11: %w", err)
	}
	return r.Focus, nil
}

// close ends the connection and waits for xgb's goroutines and the
// reader. A server that does not answer is cut off after xIOTimeout.
func (x *xclient) close() {
	x.closed.Do(func() {
		x.extend(0)
		x.c.Close()
		<-x.done
		x.nc.Close()
	})
}

// errXClosed is what xgb returns once the connection is gone.
var errXClosed = io.EOF

// isXGone reports whether err means that the connection to the X server
// is lost.
func isXGone(err error) bool {
	var ne net.Error
	return errors.Is(err, errXClosed) || errors.As(err, &ne)
}
