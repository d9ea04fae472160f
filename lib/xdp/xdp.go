// Package xdp is the daemon's client of the XDG desktop portal: the
// frontend xdg-desktop-portal, which owns org.freedesktop.portal.Desktop on
// the session bus and hands each call to the desktop's own backend
// (xdg-desktop-portal-gnome, -kde, -hyprland …). Two of its interfaces are
// used: RemoteDesktop, to type (package portal), and
// GlobalShortcuts, for the push-to-talk key (package shortcut). What they
// share is here: the connection to the session bus (found in the
// environment the daemon was given, as libdbus finds it), the version and
// other properties of an interface, the Request pattern of every
// portal call that may show a dialog, and the application id the portal
// knows YazSes by ([AppID], [Conn.Register]).
//
// A portal method that asks the person something returns at once with the
// object path of a Request; the answer comes later as that Request's
// Response signal: 0 success, 1 cancelled by the person, 2 ended some
// other way. The path is predictable (…/request/SENDER/TOKEN, with this
// connection's unique name and a handle_token of the caller's choosing),
// so [Conn.Request] subscribes before it calls and no answer is missed.
// Its context bounds the wait; a Request still open when it ends is closed
// (org.freedesktop.portal.Request.Close), which closes the dialog.
//
// The frontend can go away (a crash, a restart, the session ending): its
// sessions go with it. [Conn.Owner] and [Conn.Changed] tell the users, who
// then start again when it is back. Every exchange is bounded by a context
// and every goroutine is owned: [Conn.Close] ends the dispatcher and waits
// for it.
package xdp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/yazses/yazses/lib/bcast"
)

// Names of the portal on the bus.
const (
	Dest          = "org.freedesktop.portal.Desktop"
	Path          = dbus.ObjectPath("/org/freedesktop/portal/desktop")
	RequestIface  = "org.freedesktop.portal.Request"
	SessionIface  = "org.freedesktop.portal.Session"
	propsIface    = "org.freedesktop.DBus.Properties"
	busIface      = "org.freedesktop.DBus"
	ownerChanged  = busIface + ".NameOwnerChanged"
	responseName  = RequestIface + ".Response"
	errNoService  = "org.freedesktop.DBus.Error.ServiceUnknown"
	errNoName     = "org.freedesktop.DBus.Error.NameHasNoOwner"
	errNoProperty = "org.freedesktop.DBus.Error.InvalidArgs"
	errUnknownIf  = "org.freedesktop.DBus.Error.UnknownInterface"
	errUnknownPr  = "org.freedesktop.DBus.Error.UnknownProperty"
	errNoReply    = "org.freedesktop.DBus.Error.NoReply"
)

// closeWait bounds the Close of a Request whose wait was cancelled.
const closeWait = 2 * time.Second

// Errors.
var (
	// ErrNoBus: the environment names no session bus, or it cannot be
	// reached.
	ErrNoBus = errors.New("no session bus")
	// ErrNoPortal: no xdg-desktop-portal on the bus, or it offers no
	// backend for the interface on this desktop.
	ErrNoPortal = errors.New("the desktop portal does not offer it")
	// ErrRefused: the person cancelled the portal's dialog (response 1).
	ErrRefused = errors.New("refused in the desktop's dialog")
	// ErrEnded: the desktop ended the request another way (response 2),
	// or it answered without what was asked for.
	ErrEnded = errors.New("the desktop ended the request")
	// ErrGone: the portal left the bus (or the bus connection ended)
	// while a request waited.
	ErrGone = errors.New("the desktop portal went away")
)

// BusAddress is the session bus of env: DBUS_SESSION_BUS_ADDRESS, else the
// socket "bus" in XDG_RUNTIME_DIR when there is one (where systemd's user
// bus and dbus-user-session put it).
func BusAddress(env []string) (string, error) {
	if a := getenv(env, "DBUS_SESSION_BUS_ADDRESS"); a != "" {
		return a, nil
	}
	if rt := getenv(env, "XDG_RUNTIME_DIR"); rt != "" {
		p := filepath.Join(rt, "bus")
		if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return "unix:path=" + p, nil
		}
	}
	return "", fmt.Errorf("%w: DBUS_SESSION_BUS_ADDRESS is not set and XDG_RUNTIME_DIR has no bus socket", ErrNoBus)
}

func getenv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// Conn is one connection to the session bus, for portal calls.
type Conn struct {
	bus    *dbus.Conn
	log    *slog.Logger
	sender string // the unique name as it appears in request paths
	token  atomic.Uint64

	mu       sync.Mutex
	waiters  map[dbus.ObjectPath]chan response
	subs     map[string][]func(*dbus.Signal) // by interface.member
	owner    string                          // the portal's unique name; "" while none
	closed   bool                            // the bus connection ended
	changed  bcast.Signal                    // owner or closed changed
	sigs     chan *dbus.Signal
	dispatch sync.WaitGroup
	reg      *registration // the last Register
}

type response struct {
	code    uint32
	results map[string]dbus.Variant
}

// Dial connects to the session bus of env. The connection lasts until
// Close or until ctx ends, whichever comes first (so ctx is its lifetime,
// not a bound on the dial).
func Dial(ctx context.Context, env []string, log *slog.Logger) (*Conn, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	addr, err := BusAddress(env)
	if err != nil {
		return nil, err
	}
	bus, err := dbus.Connect(addr, dbus.WithContext(ctx), dbus.WithSignalHandler(dbus.NewSequentialSignalHandler()))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoBus, err)
	}
	names := bus.Names()
	if len(names) == 0 {
		bus.Close()
		return nil, fmt.Errorf("%w: no unique name after Hello", ErrNoBus)
	}
	c := &Conn{
		bus:     bus,
		log:     log,
		sender:  strings.ReplaceAll(strings.TrimPrefix(names[0], ":"), ".", "_"),
		waiters: map[dbus.ObjectPath]chan response{},
		subs:    map[string][]func(*dbus.Signal){},
		sigs:    make(chan *dbus.Signal, 64),
	}
	bus.Signal(c.sigs)
	c.dispatch.Add(1)
	go c.run()
	rules := [][]dbus.MatchOption{
		{dbus.WithMatchInterface(RequestIface), dbus.WithMatchMember("Response")},
		{dbus.WithMatchInterface(SessionIface), dbus.WithMatchMember("Closed")},
		{dbus.WithMatchSender(busIface), dbus.WithMatchInterface(busIface), dbus.WithMatchMember("NameOwnerChanged"), dbus.WithMatchArg(0, Dest)},
	}
	for _, r := range rules {
		if err := bus.AddMatchSignalContext(ctx, r...); err != nil {
			c.Close()
			return nil, fmt.Errorf("%w: add match: %w", ErrNoBus, err)
		}
	}
	var owner string
	if err := bus.BusObject().CallWithContext(ctx, busIface+".GetNameOwner", 0, Dest).Store(&owner); err == nil {
		c.setOwner(owner)
	}
	return c, nil
}

// Close ends the connection and waits for its dispatcher.
func (c *Conn) Close() error {
	err := c.bus.Close()
	c.dispatch.Wait()
	return err
}

// run hands each signal to its waiter or subscribers, in the order the bus
// sent them, until the connection ends.
func (c *Conn) run() {
	defer c.dispatch.Done()
	defer func() {
		c.mu.Lock()
		c.closed = true
		for p, w := range c.waiters {
			close(w)
			delete(c.waiters, p)
		}
		c.mu.Unlock()
		c.changed.Broadcast()
	}()
	for s := range c.sigs {
		switch s.Name {
		case responseName:
			c.respond(s)
			continue
		case ownerChanged:
			if len(s.Body) == 3 {
				name, _ := s.Body[0].(string)
				owner, _ := s.Body[2].(string)
				if name == Dest {
					c.setOwner(owner)
				}
			}
		}
		c.mu.Lock()
		subs := c.subs[s.Name]
		c.mu.Unlock()
		for _, f := range subs {
			f(s)
		}
	}
}

func (c *Conn) respond(s *dbus.Signal) {
	var r response
	if err := dbus.Store(s.Body, &r.code, &r.results); err != nil {
		r = response{code: 2}
	}
	c.mu.Lock()
	w, ok := c.waiters[s.Path]
	delete(c.waiters, s.Path)
	c.mu.Unlock()
	if ok {
		w <- r // buffered: one answer per request
	}
}

func (c *Conn) setOwner(owner string) {
	c.mu.Lock()
	changed := c.owner != owner
	c.owner = owner
	if changed && owner == "" {
		// Its requests will never be answered.
		for p, w := range c.waiters {
			close(w)
			delete(c.waiters, p)
		}
	}
	c.mu.Unlock()
	if changed {
		c.log.Debug("desktop portal", "owner", owner)
		c.changed.Broadcast()
	}
}

// Owner is the portal's current unique name ("" while none owns it: it
// went away, or has not been started yet; a call starts it where the bus
// can activate it). ok is false once the bus connection has ended.
func (c *Conn) Owner() (owner string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.owner, !c.closed
}

// Changed returns a channel closed at the next change of Owner.
func (c *Conn) Changed() <-chan struct{} { return c.changed.C() }

// Subscribe calls f with every signal of iface.member that reaches this
// connection, on the dispatcher: f must not block. The caller adds the
// match rule for signals that are not sent to it alone.
func (c *Conn) Subscribe(member string, f func(*dbus.Signal)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subs[member] = append(c.subs[member], f)
}

// AddMatch asks the bus for the signals of iface.member from the portal.
func (c *Conn) AddMatch(ctx context.Context, iface, member string) error {
	return c.bus.AddMatchSignalContext(ctx, dbus.WithMatchInterface(iface), dbus.WithMatchMember(member))
}

// portalErr maps a bus error of a call to the portal to this package's
// errors.
func portalErr(op string, err error) error {
	var de dbus.Error
	if errors.As(err, &de) {
		switch de.Name {
		case errNoService, errNoName, errUnknownIf, errUnknownPr, errNoProperty,
			"org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownObject":
			return fmt.Errorf("%s: %w (%s)", op, ErrNoPortal, de.Name)
		case errNoReply:
			// The portal left the bus with the call unanswered (or kept
			// it past the bus's timeout): gone, as a closed connection.
			return fmt.Errorf("%s: %w (%s)", op, ErrGone, de.Name)
		}
		return fmt.Errorf("%s: %s", op, de.Name)
	}
	if errors.Is(err, dbus.ErrClosed) {
		return fmt.Errorf("%s: %w", op, ErrGone)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// Property reads the portal's property iface.name.
func (c *Conn) Property(ctx context.Context, iface, name string) (dbus.Variant, error) {
	var v dbus.Variant
	err := c.bus.Object(Dest, Path).CallWithContext(ctx, propsIface+".Get", 0, iface, name).Store(&v)
	if err != nil {
		return v, portalErr("get "+iface+"."+name, err)
	}
	c.noteOwner(ctx)
	return v, nil
}

// Version is the version of the portal's interface iface; ErrNoPortal when
// the portal does not offer it.
func (c *Conn) Version(ctx context.Context, iface string) (uint32, error) {
	v, err := c.Property(ctx, iface, "version")
	if err != nil {
		return 0, err
	}
	n, ok := v.Value().(uint32)
	if !ok {
		return 0, fmt.Errorf("%s.version is %s, not a uint32: %w", iface, v.Signature(), ErrNoPortal)
	}
	if n == 0 {
		// The frontend reports 0 for an interface without a backend.
		return 0, fmt.Errorf("%s: %w", iface, ErrNoPortal)
	}
	return n, nil
}

// noteOwner learns the portal's unique name after a call that may have
// started it (bus activation), unless a NameOwnerChanged already said.
func (c *Conn) noteOwner(ctx context.Context) {
	if o, _ := c.Owner(); o != "" {
		return
	}
	var owner string
	if err := c.bus.BusObject().CallWithContext(ctx, busIface+".GetNameOwner", 0, Dest).Store(&owner); err == nil {
		c.setOwner(owner)
	}
}

// Call calls a portal method that answers at once (the Notify* methods).
func (c *Conn) Call(ctx context.Context, method string, args ...any) error {
	if err := c.bus.Object(Dest, Path).CallWithContext(ctx, method, 0, args...).Err; err != nil {
		return portalErr(shortName(method), err)
	}
	return nil
}

// CallObject calls a method of another portal object (a Session's Close).
func (c *Conn) CallObject(ctx context.Context, path dbus.ObjectPath, method string, args ...any) error {
	if err := c.bus.Object(Dest, path).CallWithContext(ctx, method, 0, args...).Err; err != nil {
		return portalErr(shortName(method), err)
	}
	return nil
}

func shortName(method string) string {
	return method[strings.LastIndexByte(method, '.')+1:]
}

// Token returns a new handle_token (or session_handle_token): unique on
// this connection, a valid object path element.
func (c *Conn) Token(kind string) string {
	return "yazses_" + kind + strconv.FormatUint(c.token.Add(1), 10)
}

// SessionPath is the path a session_handle_token makes on this connection
// (the portal returns it too; the prediction lets a caller match the
// session's Closed signal from the start).
func (c *Conn) SessionPath(token string) dbus.ObjectPath {
	return dbus.ObjectPath(string(Path) + "/session/" + c.sender + "/" + token)
}

// Request calls a portal method that answers through a Request's Response
// signal and returns its results. options is the call's last argument: a
// handle_token is added to it. The wait ends with ctx (the Request is then
// closed, which closes its dialog), or with ErrGone when the portal leaves
// the bus first. Response 1 is ErrRefused, 2 ErrEnded.
func (c *Conn) Request(ctx context.Context, method string, options map[string]dbus.Variant, args ...any) (map[string]dbus.Variant, error) {
	op := shortName(method)
	token := c.Token("r")
	path := dbus.ObjectPath(string(Path) + "/request/" + c.sender + "/" + token)
	opts := make(map[string]dbus.Variant, len(options)+1)
	for k, v := range options {
		opts[k] = v
	}
	opts["handle_token"] = dbus.MakeVariant(token)
	w := make(chan response, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", op, ErrGone)
	}
	c.waiters[path] = w
	c.mu.Unlock()
	forget := func(p dbus.ObjectPath) {
		c.mu.Lock()
		delete(c.waiters, p)
		c.mu.Unlock()
	}
	closeRequest := func(p dbus.ObjectPath) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeWait)
		defer cancel()
		if err := c.CallObject(cctx, p, RequestIface+".Close"); err != nil {
			c.log.Debug("close a request", "err", err)
		}
	}
	var handle dbus.ObjectPath
	err := c.bus.Object(Dest, Path).CallWithContext(ctx, method, 0, append(args, opts)...).Store(&handle)
	if err != nil {
		forget(path)
		if ctx.Err() != nil {
			// Ended before the portal's reply: its Request may be open
			// all the same (at the predicted path).
			closeRequest(path)
			return nil, fmt.Errorf("%s: %w", op, ctx.Err())
		}
		return nil, portalErr(op, err)
	}
	c.noteOwner(ctx)
	if handle != path {
		// A portal older than 0.9 makes its own path: wait there (its
		// answer can only come after this reply).
		c.mu.Lock()
		delete(c.waiters, path)
		path = handle
		c.waiters[path] = w
		c.mu.Unlock()
	}
	select {
	case r, ok := <-w:
		if !ok {
			return nil, fmt.Errorf("%s: %w", op, ErrGone)
		}
		switch r.code {
		case 0:
			return r.results, nil
		case 1:
			return r.results, fmt.Errorf("%s: %w", op, ErrRefused)
		default:
			return r.results, fmt.Errorf("%s: %w (response %d)", op, ErrEnded, r.code)
		}
	case <-ctx.Done():
		forget(path)
		closeRequest(path)
		return nil, fmt.Errorf("%s: %w", op, ctx.Err())
	}
}

// CallFD calls a portal method that answers with a file descriptor (the
// Clipboard's SelectionRead and SelectionWrite) and returns it as a file,
// which the caller closes.
func (c *Conn) CallFD(ctx context.Context, method string, args ...any) (*os.File, error) {
	var fd dbus.UnixFD
	if err := c.bus.Object(Dest, Path).CallWithContext(ctx, method, 0, args...).Store(&fd); err != nil {
		return nil, portalErr(shortName(method), err)
	}
	if fd < 0 {
		return nil, fmt.Errorf("%s: no file descriptor in the answer", shortName(method))
	}
	// Non-blocking, so that the file's reads and writes take deadlines.
	if err := syscall.SetNonblock(int(fd), true); err != nil {
		syscall.Close(int(fd))
		return nil, fmt.Errorf("%s: %w", shortName(method), err)
	}
	return os.NewFile(uintptr(fd), shortName(method)), nil
}
