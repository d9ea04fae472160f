package x11

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/xconn"
	"github.com/yazses/yazses/cmd/yaz-type/internal/xdotool"
	"github.com/yazses/yazses/lib/typewire"
	"github.com/yazses/yazses/lib/untrusted"
)

// errWindowChanged: the window being typed into closed, was unmapped or
// lost the focus part-way through.
var errWindowChanged = errors.New("the focused window closed or lost the focus")

// Route is what the X11 backends of one Typer share and hold: the lock
// that types one text at a time (the spare keycodes are the display's,
// whichever backend types), and whether the x11 backend bound spare
// keycodes on the display of its Options.Environ, which Close gives back.
type Route struct {
	o     backend.Options
	mu    sync.Mutex
	bound bool // guarded by mu: the x11 backend typed (and bound keycodes)
}

// NewRoute returns the X11 route of o's display; it holds nothing yet.
func NewRoute(o backend.Options) *Route { return &Route{o: o.WithDefaults()} }

// X11 returns the "x11" backend: XTEST through a connection of its own.
// It is a [backend.Pauser].
func (r *Route) X11() backend.Injector { return &x11{o: r.o, r: r} }

// Xdotool returns the "xdotool" backend.
func (r *Route) Xdotool() backend.Injector { return xdotool.New(r.o, &r.mu) }

// Clipboard returns the X11 "clipboard" backend.
func (r *Route) Clipboard() backend.Injector { return &clipboard{o: r.o, r: r} }

// xclient is one connection to the X server (package xconn), with what
// the x11 backend and the paste read and write on it (the keyboard state,
// the record of the bound keycodes).
type xclient struct{ *xconn.Conn }

// dialX connects to the display of env (xconn.Dial).
func dialX(ctx context.Context, env []string) (*xclient, error) {
	c, err := xconn.Dial(ctx, env)
	if err != nil {
		return nil, err
	}
	return &xclient{c}, nil
}

// x11 is the in-process X11 backend (XTEST through xgb).
type x11 struct {
	o backend.Options
	r *Route
}

func (x *x11) Name() string { return backend.X11 }

func (x *x11) Focus(ctx context.Context) (backend.Focus, error) {
	c, err := dialX(ctx, x.o.Environ)
	if err != nil {
		return backend.FocusUnknown, err
	}
	defer c.Close()
	t, err := c.Focus(false)
	return t.Focus, err
}

// xstate is what the keyboard is like before typing.
type xstate struct {
	m        keymap
	shiftKC  xproto.Keycode   // a Shift key, 0: none
	ctrlKC   xproto.Keycode   // a Control key, 0: none
	lockKC   xproto.Keycode   // the key of the Lock modifier (Caps Lock), 0: none
	locked   bool             // Lock is on
	modsDown []xproto.Keycode // modifier keys held down
}

// readState reads the keyboard map, the modifier map, the keys held down
// and the Lock state, in one round trip.
func (x *xclient) readState() (xstate, error) {
	x.Extend(0)
	kmC := xproto.GetKeyboardMapping(x.X, x.MinKC, byte(int(x.MaxKC)-int(x.MinKC)+1))
	mmC := xproto.GetModifierMapping(x.X)
	downC := xproto.QueryKeymap(x.X)
	ptrC := xproto.QueryPointer(x.X, x.Root)
	km, err := kmC.Reply()
	if err != nil {
		return xstate{}, fmt.Errorf("x11: read the keyboard map: %w", err)
	}
	mm, err := mmC.Reply()
	if err != nil {
		return xstate{}, fmt.Errorf("x11: read the modifier map: %w", err)
	}
	down, err := downC.Reply()
	if err != nil {
		return xstate{}, fmt.Errorf("x11: read the keys held: %w", err)
	}
	ptr, err := ptrC.Reply()
	if err != nil {
		return xstate{}, fmt.Errorf("x11: read the modifier state: %w", err)
	}
	s := xstate{m: keymap{min: x.MinKC, per: int(km.KeysymsPerKeycode), syms: km.Keysyms}}
	per := int(mm.KeycodesPerModifier)
	for mod := range 8 {
		for i := range per {
			kc := mm.Keycodes[mod*per+i]
			if kc == 0 {
				continue
			}
			switch {
			case mod == 0 && s.shiftKC == 0:
				s.shiftKC = kc
			case mod == 1 && s.lockKC == 0:
				s.lockKC = kc
			case mod == 2 && s.ctrlKC == 0:
				s.ctrlKC = kc
			}
			if isDown(down.Keys, kc) && !slices.Contains(s.modsDown, kc) {
				s.modsDown = append(s.modsDown, kc)
			}
		}
	}
	s.locked = ptr.Mask&xproto.ModMaskLock != 0
	return s, nil
}

func isDown(keys []byte, kc xproto.Keycode) bool {
	return int(kc/8) < len(keys) && keys[kc/8]&(1<<(kc%8)) != 0
}

// xsession is one text being typed.
type xsession struct {
	c      *xclient
	t      xconn.Target
	st     xstate
	shift  bool // Shift is pressed by us
	pressd xproto.Keycode
	// unlocked: Lock was on and we turned it off.
	unlocked bool
	sent     bool // a key of the text has been sent
}

// key sends one key event.
func (s *xsession) key(press bool, kc xproto.Keycode) {
	typ := byte(xproto.KeyRelease)
	if press {
		typ = xproto.KeyPress
	}
	xtest.FakeInput(s.c.X, typ, byte(kc), 0, 0, 0, 0, 0)
}

// interrupted reports why typing must stop: the caller gave up, or the
// window went away or lost the focus.
func (s *xsession) interrupted(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for {
		select {
		case ev := <-s.c.Events():
			if err := s.check(ev); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// check tells whether an event ends typing.
func (s *xsession) check(ev xgb.Event) error {
	switch e := ev.(type) {
	case xproto.DestroyNotifyEvent:
		if e.Window == s.t.Win {
			return errWindowChanged
		}
	case xproto.UnmapNotifyEvent:
		if e.Window == s.t.Win {
			return errWindowChanged
		}
	case xproto.FocusOutEvent:
		if e.Event == s.t.Win && (e.Mode == xproto.NotifyModeNormal || e.Mode == xproto.NotifyModeWhileGrabbed) &&
			e.Detail != xproto.NotifyDetailInferior && e.Detail != xproto.NotifyDetailPointer {
			return errWindowChanged
		}
	case xproto.PropertyNotifyEvent:
		if s.t.Active != 0 && e.Window == s.c.Root && e.Atom == s.t.Active {
			r, err := xproto.GetProperty(s.c.X, false, s.c.Root, s.t.Active, xproto.AtomWindow, 0, 1).Reply()
			if err != nil {
				return fmt.Errorf("x11: active window: %w", err)
			}
			if w, _ := xconn.WindowProp(r); w != s.t.Win {
				return errWindowChanged
			}
		}
	}
	return nil
}

// setShift presses or releases our Shift.
func (s *xsession) setShift(on bool) {
	if on != s.shift {
		s.key(on, s.st.shiftKC)
		s.shift = on
	}
}

// bind makes the text's bindings: one ChangeKeyboardMapping per keycode
// (spare keycodes are rarely adjacent, and rewriting a used key through
// the core protocol could lose what XKB knows about it) and the record of
// what the spare keycodes now hold (x11Held), then one round trip, after
// which the server has applied all of them and every client that asked
// for map notifications has its MappingNotify ahead of the keys that
// follow. (A core client always gets them. An Xlib client that uses XKB
// asks for them only at its first key lookup, in a request it sends when
// it next flushes, and hears of no change made in between: bindings made
// within moments of a window's very first key. No request tells another
// client's selection, so the typer cannot wait for it; the tests prove
// it of xev first, see xevRecorder.readsMapChanges.)
func (s *xsession) bind(p xplan) error {
	if len(p.bind) == 0 {
		return nil
	}
	for _, b := range p.bind {
		xproto.ChangeKeyboardMapping(s.c.X, 1, b.kc, 2, b.syms[:])
	}
	if err := s.c.writeHeld(p.held); err != nil {
		return err
	}
	_, err := s.c.Sync()
	return err
}

// typeText types text (clean, not empty) into s.t, in one round of
// bindings (see xplan).
func (s *xsession) typeText(ctx context.Context, text string) error {
	held, err := s.c.readHeld(s.st.m)
	if err != nil {
		return err
	}
	p, err := planX(text, s.st.m, s.st.shiftKC != 0, held)
	if err != nil {
		return fmt.Errorf("x11: %w: %w", err, backend.ErrUnavailable)
	}
	// Keys held down would turn letters into shortcuts: release them (and
	// never press them again). Caps Lock would change the case: turn it
	// off for the text, and on again after.
	for _, kc := range s.st.modsDown {
		s.key(false, kc)
	}
	if s.st.locked && s.st.lockKC != 0 {
		s.key(true, s.st.lockKC)
		s.key(false, s.st.lockKC)
		s.unlocked = true
	}
	if err := s.bind(p); err != nil {
		return err
	}
	for start := 0; start < len(p.text); start += xBatch {
		// With the server held, no other client's request (a window
		// manager's or a person's focus change) runs between the proof
		// of the focus and the batch's keys: every key of the batch goes
		// to the window that had the focus when typing began.
		if err := s.proveFocus(ctx); err != nil {
			return s.stopped(start, err)
		}
		for _, r := range p.text[start:min(start+xBatch, len(p.text))] {
			k := p.keys[r]
			s.setShift(k.shift)
			s.key(true, k.kc)
			s.pressd = k.kc
			s.sent = true
			s.key(false, k.kc)
			s.pressd = 0
		}
		s.setShift(false)
		xproto.UngrabServer(s.c.X)
	}
	// The server has queued every key to the window once this returns.
	if _, err := s.c.Sync(); err != nil {
		return s.stopped(len(p.text), err)
	}
	return s.interrupted(ctx)
}

// xBatch is how many characters go between two proofs of the focus.
const xBatch = 16

// proveFocus grabs the server and proves, in a round trip, that the focus
// is where typing began; it returns with the server grabbed (the caller
// ungrabs it after the batch) or with an error and the server let go.
// The round trip also proves that every key sent before it was processed.
func (s *xsession) proveFocus(ctx context.Context) error {
	if err := s.interrupted(ctx); err != nil {
		return err
	}
	s.c.Extend(0)
	xproto.GrabServer(s.c.X)
	var activeC xproto.GetPropertyCookie
	if s.t.Active != 0 {
		activeC = xproto.GetProperty(s.c.X, false, s.c.Root, s.t.Active, xproto.AtomWindow, 0, 1)
	}
	fr, err := xproto.GetInputFocus(s.c.X).Reply()
	if err == nil && s.t.Active != 0 {
		var r *xproto.GetPropertyReply
		if r, err = activeC.Reply(); err == nil {
			if w, _ := xconn.WindowProp(r); w != s.t.Win {
				err = errWindowChanged
			}
		}
	}
	if err == nil && fr.Focus != s.t.Input {
		err = errWindowChanged
	}
	if err == nil {
		// Events that came before the round trip (the window unmapped).
		err = s.interrupted(ctx)
	}
	if err != nil {
		xproto.UngrabServer(s.c.X)
		if xconn.IsGone(err) {
			return fmt.Errorf("x11: %w", err)
		}
		return err
	}
	return nil
}

// stopped is the error of typing that stopped before character n: every
// character before n was processed by the server and went to the target
// (proveFocus), nothing after went anywhere.
func (s *xsession) stopped(n int, err error) error {
	switch {
	case xconn.IsGone(err):
		return fmt.Errorf("%w: %w", backend.ErrDisplayGone, err)
	case errors.Is(err, errWindowChanged):
		return &backend.PartialError{Arrived: n, Cause: "focus_moved", Err: err}
	}
	return err
}

// release leaves nothing pressed: the key of a press whose release was not
// sent, Shift, and Lock back on if we turned it off. It runs after
// success, errors and cancellation alike.
func (s *xsession) release() error {
	s.c.Extend(0)
	if s.pressd != 0 {
		s.key(false, s.pressd)
		s.pressd = 0
	}
	s.setShift(false)
	if s.unlocked {
		s.key(true, s.st.lockKC)
		s.key(false, s.st.lockKC)
		s.unlocked = false
	}
	_, err := s.c.Sync()
	return err
}

// ourRow reports whether a map row holds what we bound: the two levels
// (the server shows a key of one group in the second group's columns as
// well, "a A a A"), and nothing else.
func ourRow(row []xproto.Keysym, syms [2]xproto.Keysym) bool {
	for i, s := range row {
		if s != 0 && s != syms[i%2] {
			return false
		}
	}
	return len(row) > 0 && row[0] == syms[0]
}

// x11Held records, in a property of the root window, what the x11
// backend left on the spare keycodes: a list of (keycode, keysym, shifted
// keysym), least recently used first. The bindings stay until a later text
// needs the keycodes for other characters, or until Route.Close: a window reads
// the map only when it looks up a key, which on a busy machine can be long
// after the key was sent, and no timer can tell when it has. Kept on the
// server, the record outlives this process: a daemon that was killed
// finds its keycodes again (those that still hold what it bound).
const x11Held = "_YAZSES_HELD_KEYCODES"

// heldAtom interns x11Held.
func (x *xclient) heldAtom() (xproto.Atom, error) {
	r, err := xproto.InternAtom(x.X, false, uint16(len(x11Held)), x11Held).Reply()
	if err != nil {
		return 0, fmt.Errorf("x11: intern atom: %w", err)
	}
	return r.Atom, nil
}

// readHeld returns the recorded bindings whose keycodes still hold what
// was bound in m (the map may have been replaced since).
func (x *xclient) readHeld(m keymap) ([]binding, error) {
	atom, err := x.heldAtom()
	if err != nil {
		return nil, err
	}
	r, err := xproto.GetProperty(x.X, false, x.Root, atom, xproto.AtomCardinal, 0, 3*256).Reply()
	if err != nil {
		return nil, fmt.Errorf("x11: read the bound keycodes: %w", err)
	}
	if r.Format != 32 {
		return nil, nil
	}
	var out []binding
	for i := 0; i+12 <= len(r.Value); i += 12 {
		kc := xgb.Get32(r.Value[i:])
		b := binding{kc: xproto.Keycode(kc), syms: [2]xproto.Keysym{
			xproto.Keysym(xgb.Get32(r.Value[i+4:])), xproto.Keysym(xgb.Get32(r.Value[i+8:]))}}
		if kc > 8 && kc <= 255 && ourRow(m.row(b.kc), b.syms) &&
			!slices.ContainsFunc(out, func(o binding) bool { return o.kc == b.kc }) {
			out = append(out, b)
		}
	}
	return out, nil
}

// writeHeld records held (without a round trip).
func (x *xclient) writeHeld(held []binding) error {
	atom, err := x.heldAtom()
	if err != nil {
		return err
	}
	if len(held) == 0 {
		xproto.DeleteProperty(x.X, x.Root, atom)
		return nil
	}
	data := make([]byte, 12*len(held))
	for i, b := range held {
		xgb.Put32(data[12*i:], uint32(b.kc))
		xgb.Put32(data[12*i+4:], uint32(b.syms[0]))
		xgb.Put32(data[12*i+8:], uint32(b.syms[1]))
	}
	xproto.ChangeProperty(x.X, xproto.PropModeReplace, x.Root, atom, xproto.AtomCardinal, 32, uint32(3*len(held)), data)
	return nil
}

// freeHeld empties the keycodes that x11Held records (those that still
// hold what was bound) and deletes the record.
func (x *xclient) freeHeld() error {
	st, err := x.readState()
	if err != nil {
		return err
	}
	held, err := x.readHeld(st.m)
	if err != nil {
		return err
	}
	empty := make([]xproto.Keysym, max(st.m.per, 2))
	for _, b := range held {
		xproto.ChangeKeyboardMapping(x.X, 1, b.kc, byte(len(empty)), empty)
	}
	if err := x.writeHeld(nil); err != nil {
		return err
	}
	if _, err := x.Sync(); err != nil {
		return fmt.Errorf("x11: free the bound keycodes: %w", err)
	}
	return nil
}

// Close gives the spare keycodes that the x11 backend bound their empty
// rows back (see x11Held), waiting at most a few seconds for the display;
// a display that is gone is skipped. The bindings stay between texts, so
// that a window that reads its keys late still finds them: a program that
// typed calls Close before it exits, unless a window may still read its
// last keys after it (yaz-type in a pipeline: it does not close, and the
// next text, of any process, reuses the bindings). The route can type
// again after.
func (r *Route) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.bound {
		return
	}
	r.bound = false
	ctx, cancel := context.WithTimeout(context.Background(), xconn.IOTimeout)
	c, err := dialX(ctx, r.o.Environ)
	cancel()
	if err != nil {
		return
	}
	_ = c.freeHeld()
	c.Close()
}

// Pauses reports whether text is more than the x11 backend types: it has
// more characters to bind than the spare keycodes hold at once (see
// xplan). A Typer pastes such a text when pasting is on (see
// Options.PasteOverChars).
func (x *x11) Pauses(ctx context.Context, text untrusted.TypedText) bool {
	x.r.mu.Lock()
	defer x.r.mu.Unlock()
	c, err := dialX(ctx, x.o.Environ)
	if err != nil {
		return false
	}
	defer c.Close()
	st, err := c.readState()
	if err != nil {
		return false
	}
	held, err := c.readHeld(st.m)
	if err != nil {
		return false
	}
	_, err = planX(text.Text(), st.m, st.shiftKC != 0, held)
	return errors.Is(err, errTooMany)
}

func (x *x11) Type(ctx context.Context, typed untrusted.TypedText) error {
	text := typed.Text()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	x.r.mu.Lock()
	defer x.r.mu.Unlock()
	c, err := dialX(ctx, x.o.Environ)
	if err != nil {
		return fmt.Errorf("x11: %w", err)
	}
	defer c.Close()
	t, err := c.Focus(true)
	if err != nil {
		return err
	}
	x.o.Log.Debug("focus", "backend", backend.X11, "focus", t.Focus.String())
	if t.Focus != backend.FocusWindow {
		return fmt.Errorf("%s: focus %s: %w", backend.X11, t.Focus, backend.ErrNoTarget)
	}
	if tg := typewire.TargetOf(ctx); tg != nil {
		// A text bound to a window (the pieces of one dictation) goes
		// there or nowhere.
		win := strconv.FormatUint(uint64(t.Win), 10)
		if tg.Want != "" && tg.Want != win {
			return &backend.PartialError{Arrived: 0, Cause: typewire.CauseFocusMoved, Err: errWindowChanged}
		}
		tg.Got = win
	}
	st, err := c.readState()
	if err != nil {
		return err
	}
	x.r.bound = true
	s := &xsession{c: c, t: t, st: st}
	err = s.typeText(ctx, text)
	if rerr := s.release(); rerr != nil && err == nil {
		err = rerr
	}
	switch {
	case err == nil:
		return nil
	case s.sent:
		// Part of the text is in the window: no other backend may type it
		// all again.
		return fmt.Errorf("x11: %w: %w", backend.ErrInterrupted, err)
	}
	return err
}
