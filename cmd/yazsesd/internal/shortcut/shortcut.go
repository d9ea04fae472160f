// Package shortcut is the push-to-talk key from the desktop itself: the
// XDG desktop portal's GlobalShortcuts interface
// (org.freedesktop.portal.GlobalShortcuts: GNOME 48 and later, KDE
// Plasma, Hyprland's portal), chosen with hotkey.source = "portal". It
// needs no input group and no compositor configuration: the desktop owns
// the key and tells the daemon when it goes down and up.
//
// [Run] creates a session, binds one shortcut ([ID], with [Description]
// and a preferred trigger made from hotkey.key, see [Trigger]; the desktop
// may show a dialog where the person confirms or picks another key), and
// then calls hold for its signals until the context ends:
//
//   - "hold": Activated starts a hold and Deactivated stops it (a second
//     Activated while held, a Deactivated while not, do nothing);
//   - "toggle": each Activated starts or stops in turn.
//
// Before its first call to a portal it tells it who is asking
// ([xdp.Conn.Register] with [xdp.AppID]): GNOME's provider discards a
// bind from a program without an application id, and xdg-desktop-portal
// 1.21 and later refuse its session. A portal without the host registry
// (before 1.19) knows the daemon by its systemd unit's name,
// app-io.github.yazses.YazSes.service, or not at all.
//
// A portal that is not on the session bus when Run starts (the daemon
// started at login before the desktop's portal), or one without
// GlobalShortcuts, is waited for: the shortcut is bound when the
// portal's name changes hands on the bus (NameOwnerChanged), and
// [Options.Waiting] says meanwhile what it waits for. Where the bus can
// start the portal, a try starts it too, at most one a second, less
// often each time up to one a minute. When the portal leaves the bus (a
// crash, a restart) or the desktop closes the session, a hold that is
// open is stopped at once, as the evdev listener does when its keyboard
// goes away, and the shortcut is bound again when the portal is back.
package shortcut

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/yazses/yazses/lib/bcast"
	"github.com/yazses/yazses/lib/xdp"
)

// The shortcut.
const (
	// ID is the shortcut's id in its session.
	ID = "push-to-talk"
	// Description is what the desktop shows the person.
	Description = "Hold to dictate (YazSes)"
)

const (
	gsIface = "org.freedesktop.portal.GlobalShortcuts"
	// exchange bounds every call that shows no dialog.
	exchange = 5 * time.Second
	// retryGap is the least time between two bindings; maxBackoff the
	// most between two tries while no portal owns its name (a try starts
	// one where the bus can activate it).
	retryGap   = time.Second
	maxBackoff = time.Minute
)

// Options configure Run.
type Options struct {
	// Environ is the environment whose session bus has the portal.
	Environ []string
	// Key is hotkey.key, the preferred trigger (see Trigger).
	Key string
	// Mode is "hold" or "toggle" (hotkey.mode).
	Mode string
	// Log gets debug lines; nil discards them.
	Log *slog.Logger
	// Bound, when set, is called after each binding with the trigger as
	// the desktop describes it ("" when it says none).
	Bound func(trigger string)
	// Waiting, when set, is called with what Run waits for before it can
	// bind (the portal to appear, one with GlobalShortcuts), and with ""
	// once it is bound.
	Waiting func(what string)
	// AppID is the application id told to the portal; "" is xdp.AppID.
	AppID string
}

// What Run waits for (Options.Waiting).
const (
	WaitPortal    = "the desktop portal (org.freedesktop.portal.Desktop) to appear on the session bus"
	WaitShortcuts = "a desktop portal with GlobalShortcuts (this one has none: GNOME 48 and later, KDE Plasma and Hyprland's portal have it; " +
		"hotkey.source = \"evdev\" or a compositor binding that runs `yazsesd ctl hold start|stop` work without it)"
)

// Run binds the shortcut and calls hold(true) to start a hold and
// hold(false) to stop it, from its own goroutine, until ctx ends (it then
// returns ctx's error, after stopping a hold that is open). A portal that
// is not there, or has no GlobalShortcuts, is waited for; a binding the
// person refuses, or one that fails before the first binding, ends it
// with an error.
func Run(ctx context.Context, o Options, hold func(start bool)) error {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.AppID == "" {
		o.AppID = xdp.AppID
	}
	r := &runner{o: o, hold: hold}
	defer r.release()
	conn, err := xdp.Dial(ctx, o.Environ, o.Log)
	if err != nil {
		return fmt.Errorf("shortcut: %w", err)
	}
	defer conn.Close()
	for _, m := range []string{"Activated", "Deactivated"} {
		if err := conn.AddMatch(ctx, gsIface, m); err != nil {
			return fmt.Errorf("shortcut: %w", err)
		}
		conn.Subscribe(gsIface+"."+m, r.signal)
	}
	conn.Subscribe(xdp.SessionIface+".Closed", r.signal)
	bound := false // bound once: later failures are the portal's passing state
	backoff := retryGap
	for {
		tried := time.Now()
		err := r.bind(ctx, conn)
		from := "" // waitPortal: any portal will do
		owner, _ := conn.Owner()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil:
			bound = true
			backoff = retryGap
			r.serve(ctx, conn)
			r.release()
		case errors.Is(err, xdp.ErrRefused):
			return err
		case owner == "":
			// Not on the bus (yet): the daemon started before the
			// desktop's portal, or the portal went away.
			r.waiting(WaitPortal, "shortcut: waiting for the desktop portal to appear on the session bus", "err", err)
		case errors.Is(err, xdp.ErrNoPortal):
			// This portal has no GlobalShortcuts: the next one may.
			from = owner
			r.waiting(WaitShortcuts, "shortcut: the desktop portal has no GlobalShortcuts; waiting for a portal that has it", "err", err)
		case !bound:
			return err
		default:
			o.Log.Warn("shortcut: binding again failed; trying when the portal changes", "err", err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if _, ok := conn.Owner(); !ok {
			return fmt.Errorf("shortcut: the session bus connection ended: %w", xdp.ErrGone)
		}
		if !waitPortal(ctx, conn, tried, backoff, from) {
			return ctx.Err()
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// waiting tells Options.Waiting what Run waits for, and logs it the first
// time.
func (r *runner) waiting(what, msg string, args ...any) {
	if r.wait == what {
		return
	}
	r.wait = what
	if what == WaitShortcuts {
		r.o.Log.Error(msg, args...)
	} else {
		r.o.Log.Info(msg, args...)
	}
	if r.o.Waiting != nil {
		r.o.Waiting(what)
	}
}

// runner is one Run's state.
type runner struct {
	o    Options
	hold func(start bool)

	mu      sync.Mutex
	session dbus.ObjectPath
	events  []bool // Activated true, Deactivated false, in order
	closed  bool   // the desktop closed session
	changed bcast.Signal

	held bool   // a hold is open (Run's goroutine only)
	wait string // what Run waits for ("" while bound)
}

// signal queues a signal of the bound session (on the bus's dispatcher:
// it must not block).
func (r *runner) signal(s *dbus.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch s.Name {
	case xdp.SessionIface + ".Closed":
		if s.Path == r.session && r.session != "" {
			r.closed = true
		}
	case gsIface + ".Activated", gsIface + ".Deactivated":
		if len(s.Body) < 2 {
			return
		}
		sess, _ := s.Body[0].(dbus.ObjectPath)
		id, _ := s.Body[1].(string)
		if sess != r.session || id != ID || r.session == "" {
			return
		}
		r.events = append(r.events, s.Name == gsIface+".Activated")
	default:
		return
	}
	r.changed.Broadcast()
}

// bind creates a session and binds the shortcut.
func (r *runner) bind(ctx context.Context, conn *xdp.Conn) error {
	bctx, cancel := context.WithTimeout(ctx, exchange)
	defer cancel()
	// First: the portal takes an id only before any other call.
	regErr := conn.Register(bctx, r.o.AppID)
	switch {
	case regErr == nil, errors.Is(regErr, xdp.ErrNoRegistry), errors.Is(regErr, xdp.ErrNoPortal):
	default:
		r.o.Log.Warn("shortcut: the desktop portal did not take YazSes's application id; it may refuse the shortcut", "app_id", r.o.AppID, "err", regErr)
	}
	if _, err := conn.Version(bctx, gsIface); err != nil {
		if errors.Is(err, xdp.ErrNoPortal) {
			return fmt.Errorf("shortcut: this desktop's portal has no GlobalShortcuts (GNOME 48 and later, KDE Plasma and Hyprland's portal have it): "+
				"use hotkey.source = \"evdev\" or a compositor binding that runs `yazsesd ctl hold start|stop`: %w", err)
		}
		return fmt.Errorf("shortcut: %w", err)
	}
	res, err := conn.Request(bctx, gsIface+".CreateSession", map[string]dbus.Variant{
		"session_handle_token": dbus.MakeVariant(conn.Token("s")),
	})
	if err != nil {
		return fmt.Errorf("shortcut: create a session: %w%s", err, identity(regErr, r.o.AppID))
	}
	var sess dbus.ObjectPath
	switch v := res["session_handle"].Value().(type) {
	case string:
		sess = dbus.ObjectPath(v)
	case dbus.ObjectPath:
		sess = v
	}
	if !sess.IsValid() {
		return fmt.Errorf("shortcut: the portal created a session without a handle: %w", xdp.ErrEnded)
	}
	r.mu.Lock()
	r.session, r.events, r.closed = sess, nil, false
	r.mu.Unlock()
	opts := map[string]dbus.Variant{"description": dbus.MakeVariant(Description)}
	if t := Trigger(r.o.Key); t != "" {
		opts["preferred_trigger"] = dbus.MakeVariant(t)
	}
	shortcuts := []shortcut{{ID, opts}}
	// The desktop may show a dialog: as long as the person takes.
	res, err = conn.Request(ctx, gsIface+".BindShortcuts", map[string]dbus.Variant{}, sess, shortcuts, "")
	trigger, ok := boundTrigger(res)
	switch {
	case err == nil:
	case errors.Is(err, xdp.ErrEnded) && ok:
		// xdg-desktop-portal-gnome 48.0 (Debian 13) answers a binding
		// that succeeded with an unset response code, most often 2, and
		// the shortcuts it bound; a real failure has none.
		r.o.Log.Debug("shortcut: the desktop bound the shortcut and answered it failed; taken as bound", "err", err)
	default:
		return fmt.Errorf("shortcut: bind %s: %w%s", ID, err, identity(regErr, r.o.AppID))
	}
	r.o.Log.Info("push-to-talk shortcut bound through the desktop portal", "trigger", trigger)
	if r.wait != "" && r.o.Waiting != nil {
		r.o.Waiting("")
	}
	r.wait = ""
	if r.o.Bound != nil {
		r.o.Bound(trigger)
	}
	return nil
}

// boundTrigger reads a BindShortcuts answer: ok when it lists the
// shortcut, with the trigger as the desktop describes it.
func boundTrigger(res map[string]dbus.Variant) (trigger string, ok bool) {
	var bound []shortcut
	if v, found := res["shortcuts"]; found && dbus.Store([]any{v.Value()}, &bound) == nil {
		for _, s := range bound {
			if s.ID == ID {
				trigger, _ = s.Opts["trigger_description"].Value().(string)
				ok = true
			}
		}
	}
	return trigger, ok
}

// identity is what a refusal adds when the portal did not take the
// application id: the likely cause.
func identity(regErr error, appID string) string {
	if regErr == nil || errors.Is(regErr, xdp.ErrNoPortal) {
		return ""
	}
	if errors.Is(regErr, xdp.ErrNoRegistry) {
		return " (this portal has no host registry: it knows YazSes as " + appID + " only when the user unit app-" + appID + ".service runs it)"
	}
	return " (the portal did not take the application id " + appID + ": is " + appID + ".desktop installed? make install puts it in share/applications)"
}

// shortcut is a(sa{sv})'s element.
type shortcut struct {
	ID   string
	Opts map[string]dbus.Variant
}

// serve turns the session's signals into holds until the session ends:
// the portal went away, the desktop closed it, or ctx ended.
func (r *runner) serve(ctx context.Context, conn *xdp.Conn) {
	owner, _ := conn.Owner()
	for {
		changed, portal := r.changed.C(), conn.Changed()
		r.mu.Lock()
		events, closed := r.events, r.closed
		r.events = nil
		r.mu.Unlock()
		for _, down := range events {
			r.press(down)
		}
		if closed {
			r.o.Log.Warn("shortcut: the desktop closed the shortcut's session; binding it again")
			return
		}
		if now, ok := conn.Owner(); !ok || now != owner {
			r.o.Log.Warn("shortcut: the desktop portal went away; binding again when it is back")
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-portal:
		}
	}
}

// press applies one Activated (down) or Deactivated.
func (r *runner) press(down bool) {
	switch {
	case r.o.Mode == "toggle" && down:
		r.held = !r.held
		r.hold(r.held)
	case r.o.Mode == "toggle":
	case down && !r.held:
		r.held = true
		r.hold(true)
	case !down && r.held:
		r.held = false
		r.hold(false)
	}
}

// release stops a hold that is open, and forgets the session.
func (r *runner) release() {
	r.mu.Lock()
	r.session, r.events = "", nil
	r.mu.Unlock()
	if r.held {
		r.held = false
		r.hold(false)
	}
}

// waitPortal waits until a portal other than from owns its name (from
// "": any, the same one too when the desktop only closed the session),
// or backoff has passed (a try then starts the portal where the bus can
// activate it), and retryGap since the last try at least. false: ctx
// ended first.
func waitPortal(ctx context.Context, conn *xdp.Conn, last time.Time, backoff time.Duration, from string) bool {
	gap := time.NewTimer(time.Until(last.Add(retryGap)))
	defer gap.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-gap.C:
	}
	give := time.NewTimer(time.Until(last.Add(backoff)))
	defer give.Stop()
	for {
		ch := conn.Changed()
		if owner, ok := conn.Owner(); (owner != "" && owner != from) || !ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-ch:
		case <-give.C:
			return true
		}
	}
}

// Trigger is the preferred trigger for a Linux key name, in the shortcuts
// specification's terms (an XKB keysym name): KEY_F13 is "F13",
// KEY_RIGHTCTRL "Control_R", KEY_A "a". "" for a key it has no name for
// (the desktop then asks the person).
func Trigger(key string) string {
	k := strings.ToUpper(strings.TrimSpace(key))
	name, ok := strings.CutPrefix(k, "KEY_")
	if !ok {
		return ""
	}
	if t, ok := triggers[name]; ok {
		return t
	}
	switch {
	case len(name) == 1 && name[0] >= 'A' && name[0] <= 'Z':
		return strings.ToLower(name)
	case len(name) == 1 && name[0] >= '0' && name[0] <= '9':
		return name
	case len(name) >= 2 && name[0] == 'F' && isDigits(name[1:]):
		return name
	}
	return ""
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

var triggers = map[string]string{
	"RIGHTCTRL": "Control_R", "LEFTCTRL": "Control_L", "RIGHTALT": "Alt_R", "LEFTALT": "Alt_L",
	"RIGHTSHIFT": "Shift_R", "LEFTSHIFT": "Shift_L", "RIGHTMETA": "Super_R", "LEFTMETA": "Super_L",
	"CAPSLOCK": "Caps_Lock", "SCROLLLOCK": "Scroll_Lock", "PAUSE": "Pause", "INSERT": "Insert",
	"MENU": "Menu", "COMPOSE": "Menu", "PRINT": "Print", "SYSRQ": "Print", "SPACE": "space",
	"HOME": "Home", "END": "End", "PAGEUP": "Prior", "PAGEDOWN": "Next", "ESC": "Escape",
}
