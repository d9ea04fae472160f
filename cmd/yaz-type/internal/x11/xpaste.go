package x11

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/tool"
	"github.com/yazses/yazses/cmd/yaz-type/internal/xconn"
	"github.com/yazses/yazses/cmd/yaz-type/internal/xdotool"
	"github.com/yazses/yazses/lib/untrusted"
)

// The X11 paste. This process owns the selection while it pastes, so it
// sees the window fetch the text: a paste is delivered when the focused
// window's client has been sent the whole text, and only then. A terminal
// gets Shift+Insert, which every X terminal pastes with (xterm and urxvt
// as installed paste nothing on Ctrl+Shift+V: xterm types a ^V, urxvt
// starts its ISO 14755 input), with the text in both PRIMARY (which
// Shift+Insert pastes in xterm, urxvt and st) and CLIPBOARD (which it
// pastes in VTE and Qt terminals); any other window gets Ctrl+V with the
// text in CLIPBOARD.

// clipboard is the "clipboard" backend of an X11 session: the paste
// above, in-process, and the selections put back after.
type clipboard struct {
	o backend.Options
	r *Route
}

func (c *clipboard) Name() string { return backend.Clipboard }

// Focus asks the X server, or xprop when the protocol is out of reach.
func (c *clipboard) Focus(ctx context.Context) (backend.Focus, error) {
	if x, err := dialX(ctx, c.o.Environ); err == nil {
		t, err := x.Focus(false)
		x.Close()
		return t.Focus, err
	}
	t, err := xdotool.Focus(ctx, tool.Call{Env: c.o.Environ})
	return t.Focus, err
}

func (c *clipboard) Type(ctx context.Context, typed untrusted.TypedText) error {
	text := typed.Text()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	return c.pasteX11(ctx, text)
}

// xatoms are the atoms of the paste.
type xatoms struct {
	clipboard, utf8, targets, text, textPlain, incr, prop xproto.Atom
}

// selection is what a selection held before the paste.
type selection struct {
	atom  xproto.Atom
	name  string // "clipboard" or "primary", for the restoring tool
	owned bool   // it had an owner
	text  []byte // its text (owned is true)
	lost  bool   // another client took it during the paste: not restored
}

// xpaste is one paste on one connection.
type xpaste struct {
	c    *clipboard
	x    *xclient
	a    xatoms
	win  xproto.Window // ours, unmapped: owns the selections
	sels []*selection
	data []byte
}

// pasteX11 pastes text (clean, not empty) into the focused X11 window and
// puts the selections back as they were. A selection it cannot put back
// (one that holds something other than text, or whose owner does not
// answer) is left alone: the call then fails before it changes anything,
// with backend.ErrUnavailable.
func (c *clipboard) pasteX11(ctx context.Context, text string) error {
	x, err := dialX(ctx, c.o.Environ)
	if err != nil {
		return fmt.Errorf("clipboard: %w", err)
	}
	defer x.Close()
	t, err := x.Focus(false)
	if err != nil {
		return fmt.Errorf("clipboard: %w", err)
	}
	terminal := slices.ContainsFunc(t.Class, backend.IsTerminal)
	c.o.Log.Debug("focus", "backend", backend.Clipboard, "focus", t.Focus.String(), "terminal", terminal)
	if t.Focus != backend.FocusWindow {
		return fmt.Errorf("clipboard: focus %s: %w", t.Focus, backend.ErrNoTarget)
	}
	if len(text) > x.MaxRequest-64 {
		return fmt.Errorf("clipboard: the text is longer than the X server takes in one piece: %w", backend.ErrUnavailable)
	}
	names, err := x.InternAtoms("CLIPBOARD", "UTF8_STRING", "TARGETS", "TEXT", "text/plain;charset=utf-8", "INCR", "_YAZSES_PASTE")
	if err != nil {
		return fmt.Errorf("clipboard: %w", err)
	}
	p := &xpaste{c: c, x: x, data: []byte(text), a: xatoms{clipboard: names[0], utf8: names[1], targets: names[2],
		text: names[3], textPlain: names[4], incr: names[5], prop: names[6]}}
	p.sels = []*selection{{atom: p.a.clipboard, name: "clipboard"}}
	if terminal {
		p.sels = append(p.sels, &selection{atom: xproto.AtomPrimary, name: "primary"})
	}
	if err := p.createWindow(); err != nil {
		return fmt.Errorf("clipboard: %w", err)
	}
	for _, s := range p.sels {
		if err := p.save(ctx, s); err != nil {
			return fmt.Errorf("clipboard: %s: %w", s.name, err)
		}
	}
	var restore string
	if slices.ContainsFunc(p.sels, func(s *selection) bool { return s.owned }) {
		if restore, err = c.x11Restorer(); err != nil {
			return fmt.Errorf("clipboard: %w", err)
		}
	}
	// From here on the selections are ours until restored.
	err = p.paste(ctx, t, terminal)
	if rerr := p.restore(ctx, restore); rerr != nil {
		if err != nil {
			return fmt.Errorf("clipboard: %w (and the clipboard was not restored: %w)", err, rerr)
		}
		// The text is in the window: an error here would make "auto"
		// type it a second time with the next backend.
		c.o.Log.Warn("clipboard: pasted, but the clipboard was not restored", "err", rerr)
	}
	if err != nil {
		return fmt.Errorf("clipboard: %w", err)
	}
	return nil
}

// createWindow makes the window that owns the selections and receives
// what their owners send.
func (p *xpaste) createWindow() error {
	id, err := xproto.NewWindowId(p.x.X)
	if err != nil {
		return fmt.Errorf("x11: new window id: %w", err)
	}
	p.win = id
	err = xproto.CreateWindowChecked(p.x.X, 0, id, p.x.Root, -10, -10, 1, 1, 0, xproto.WindowClassInputOnly, 0,
		xproto.CwOverrideRedirect|xproto.CwEventMask, []uint32{1, xproto.EventMaskPropertyChange}).Check()
	if err != nil {
		return fmt.Errorf("x11: create a window: %w", err)
	}
	return nil
}

// next waits for the next event until d has passed (nil event then).
func (p *xpaste) next(ctx context.Context, timer *time.Timer) (xgb.Event, error) {
	select {
	case ev := <-p.x.Events():
		return ev, nil
	case <-timer.C:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.x.Done():
		return nil, fmt.Errorf("x11: the connection to the X server ended")
	}
}

// save reads what s holds now: no owner, or its text. A selection whose
// owner offers no text, sends it in pieces (INCR) or does not answer is
// backend.ErrUnavailable: it could not be put back.
func (p *xpaste) save(ctx context.Context, s *selection) error {
	p.x.Extend(0)
	r, err := xproto.GetSelectionOwner(p.x.X, s.atom).Reply()
	if err != nil {
		return fmt.Errorf("x11: selection owner: %w", err)
	}
	if r.Owner == 0 {
		return nil
	}
	s.owned = true
	targets := []xproto.Atom{p.a.utf8, xproto.AtomString}
	if list, ok, err := p.convert(ctx, s.atom, p.a.targets); err != nil {
		return err
	} else if ok {
		// What the owner offers (xclip -t image/png would hand its image
		// out as text too, if asked).
		var offered []xproto.Atom
		for i := 0; i+4 <= len(list); i += 4 {
			offered = append(offered, xproto.Atom(xgb.Get32(list[i:])))
		}
		targets = slices.DeleteFunc(targets, func(a xproto.Atom) bool { return !slices.Contains(offered, a) })
	}
	for _, target := range targets {
		text, ok, err := p.convert(ctx, s.atom, target)
		if err != nil {
			return err
		}
		if ok {
			if target == xproto.AtomString {
				text = latin1ToUTF8(text)
			}
			s.text = text
			return nil
		}
	}
	return fmt.Errorf("it holds no text, which could not be put back: %w", backend.ErrUnavailable)
}

// convert asks the owner of sel for target and reads the answer.
func (p *xpaste) convert(ctx context.Context, sel, target xproto.Atom) ([]byte, bool, error) {
	p.x.Extend(backend.PasteWait)
	xproto.ConvertSelection(p.x.X, p.win, sel, target, p.a.prop, xproto.TimeCurrentTime)
	timer := time.NewTimer(backend.PasteWait)
	defer timer.Stop()
	for {
		ev, err := p.next(ctx, timer)
		if err != nil {
			return nil, false, err
		}
		if ev == nil {
			return nil, false, fmt.Errorf("its owner did not answer: %w", backend.ErrUnavailable)
		}
		n, ok := ev.(xproto.SelectionNotifyEvent)
		if !ok || n.Requestor != p.win || n.Selection != sel {
			continue
		}
		if n.Property == 0 {
			return nil, false, nil
		}
		p.x.Extend(0)
		r, err := xproto.GetProperty(p.x.X, true, p.win, n.Property, xproto.GetPropertyTypeAny, 0, uint32(p.x.MaxRequest/4)).Reply()
		if err != nil {
			return nil, false, fmt.Errorf("x11: read the selection: %w", err)
		}
		if r.Type == p.a.incr || r.BytesAfter > 0 {
			return nil, false, fmt.Errorf("it holds more text than is put back: %w", backend.ErrUnavailable)
		}
		return r.Value, true, nil
	}
}

// latin1ToUTF8 converts ISO 8859-1 (the STRING type) to UTF-8.
func latin1ToUTF8(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		out = utf8.AppendRune(out, rune(c))
	}
	return out
}

// paste takes the selections, presses the chord and serves the window
// until its client has fetched the text.
func (p *xpaste) paste(ctx context.Context, t xconn.Target, terminal bool) error {
	p.x.Extend(0)
	for _, s := range p.sels {
		xproto.SetSelectionOwner(p.x.X, p.win, s.atom, xproto.TimeCurrentTime)
	}
	for _, s := range p.sels {
		r, err := xproto.GetSelectionOwner(p.x.X, s.atom).Reply()
		if err != nil {
			return fmt.Errorf("x11: selection owner: %w", err)
		}
		if r.Owner != p.win {
			return fmt.Errorf("x11: the %s could not be taken: %w", s.name, backend.ErrUnavailable)
		}
	}
	if err := p.chord(t, terminal); err != nil {
		return err
	}
	// The window fetches the text when it sees the chord.
	p.x.Extend(backend.PasteWait)
	timer := time.NewTimer(backend.PasteWait)
	defer timer.Stop()
	elsewhere := false
	for {
		ev, err := p.next(ctx, timer)
		if err != nil {
			// The window may fetch the text still, or have fetched it:
			// no other backend types it again.
			return fmt.Errorf("%w: %w", backend.ErrInterrupted, err)
		}
		switch e := ev.(type) {
		case nil:
			if elsewhere {
				// Another client fetched the text after the chord: it may
				// be the window (through a window of another client).
				return fmt.Errorf("%w: another client than the focused window's fetched the paste", backend.ErrInterrupted)
			}
			return backend.ErrNotPasted
		case xproto.SelectionClearEvent:
			for _, s := range p.sels {
				if s.atom == e.Selection {
					s.lost = true
				}
			}
		case xproto.SelectionRequestEvent:
			if !p.serve(e) {
				continue
			}
			if e.Requestor&^xproto.Window(p.x.IDMask) == t.Win&^xproto.Window(p.x.IDMask) {
				return nil
			}
			elsewhere = true
		}
	}
}

// chord presses the paste chord: Shift+Insert into a terminal, Ctrl+V
// elsewhere, with any modifier held released first and Caps Lock off.
func (p *xpaste) chord(t xconn.Target, terminal bool) error {
	st, err := p.x.readState()
	if err != nil {
		return err
	}
	mod, key := st.shiftKC, keycodeOf(st.m, 0xff63) // Insert
	if !terminal {
		mod, key = st.ctrlKC, keycodeOf(st.m, 'v')
	}
	if mod == 0 || key == 0 {
		return fmt.Errorf("x11: the keyboard map has no key for the paste chord: %w", backend.ErrUnavailable)
	}
	s := &xsession{c: p.x, t: t, st: st}
	for _, kc := range st.modsDown {
		s.key(false, kc)
	}
	if st.locked && st.lockKC != 0 {
		s.key(true, st.lockKC)
		s.key(false, st.lockKC)
		s.unlocked = true
	}
	s.key(true, mod)
	s.key(true, key)
	s.key(false, key)
	s.key(false, mod)
	return s.release()
}

// keycodeOf is a keycode whose first level in either group is ks (0:
// none).
func keycodeOf(m keymap, ks xproto.Keysym) xproto.Keycode {
	for i := range m.keycodes() {
		kc := m.min + xproto.Keycode(i)
		row := m.row(kc)
		if (len(row) > 0 && row[0] == ks) || (len(row) > 2 && row[2] == ks) {
			return kc
		}
	}
	return 0
}

// serve answers one request for a selection we own and reports whether
// it sent the text.
func (p *xpaste) serve(e xproto.SelectionRequestEvent) bool {
	prop := e.Property
	if prop == 0 {
		prop = e.Target // an obsolete client
	}
	sent := false
	p.x.Extend(0)
	switch {
	case e.Owner != p.win || !slices.ContainsFunc(p.sels, func(s *selection) bool { return s.atom == e.Selection && !s.lost }):
		prop = 0
	case e.Target == p.a.targets:
		atoms := []xproto.Atom{p.a.targets, p.a.utf8, p.a.text, p.a.textPlain}
		if utf8IsLatin1(p.data) {
			atoms = append(atoms, xproto.AtomString)
		}
		data := make([]byte, 4*len(atoms))
		for i, a := range atoms {
			xgb.Put32(data[4*i:], uint32(a))
		}
		xproto.ChangeProperty(p.x.X, xproto.PropModeReplace, e.Requestor, prop, xproto.AtomAtom, 32, uint32(len(atoms)), data)
	case e.Target == p.a.utf8 || e.Target == p.a.text || e.Target == p.a.textPlain:
		typ := p.a.utf8
		if e.Target == p.a.textPlain {
			typ = p.a.textPlain
		}
		xproto.ChangeProperty(p.x.X, xproto.PropModeReplace, e.Requestor, prop, typ, 8, uint32(len(p.data)), p.data)
		sent = true
	case e.Target == xproto.AtomString && utf8IsLatin1(p.data):
		l := utf8ToLatin1(p.data)
		xproto.ChangeProperty(p.x.X, xproto.PropModeReplace, e.Requestor, prop, xproto.AtomString, 8, uint32(len(l)), l)
		sent = true
	default:
		prop = 0
	}
	ev := xproto.SelectionNotifyEvent{Time: e.Time, Requestor: e.Requestor, Selection: e.Selection, Target: e.Target, Property: prop}
	xproto.SendEvent(p.x.X, false, e.Requestor, 0, string(ev.Bytes()))
	return sent
}

func utf8IsLatin1(b []byte) bool {
	for _, r := range string(b) {
		if r > 0xff {
			return false
		}
	}
	return true
}

func utf8ToLatin1(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for _, r := range string(b) {
		out = append(out, byte(r))
	}
	return out
}

// restore gives every selection we still own back what it held: no
// owner, or its text through xclip or xsel (which keep serving it after
// this process has gone). A selection that another client took during the
// paste is left to it.
func (p *xpaste) restore(ctx context.Context, restorer string) error {
	p.x.Extend(0)
	for _, s := range p.sels {
		if !s.lost {
			xproto.SetSelectionOwner(p.x.X, 0, s.atom, xproto.TimeCurrentTime)
		}
	}
	if _, err := p.x.Sync(); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*tool.ConfirmWait)
	defer cancel()
	var errs []error
	for _, s := range p.sels {
		if s.lost || !s.owned {
			continue
		}
		if err := tool.Put(rctx, p.c.o.Environ, forSelection(restorer, s.name), s.text, string(p.data)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.name, err))
		}
	}
	return errors.Join(errs...)
}

// x11Restorer is the tool that keeps a restored selection's text: xclip,
// else xsel.
func (c *clipboard) x11Restorer() (string, error) {
	for _, name := range []string{"xclip", "xsel"} {
		if _, err := tool.LookPath(c.o.Environ, name); err == nil {
			return name, nil
		}
	}
	return "", fmt.Errorf("neither xclip nor xsel found to put the clipboard back: %w", backend.ErrUnavailable)
}

// forSelection is the commands of restorer (xclip or xsel) for one X
// selection ("clipboard" or "primary").
func forSelection(restorer, sel string) tool.Clipboard {
	if restorer == "xsel" {
		return tool.Clipboard{
			Save:  []string{"xsel", "--" + sel, "--output"},
			Set:   []string{"xsel", "--" + sel, "--input"},
			Clear: []string{"xsel", "--" + sel, "--clear"},
		}
	}
	set := []string{"xclip", "-selection", sel, "-i"}
	return tool.Clipboard{Save: []string{"xclip", "-selection", sel, "-o"}, Set: set, Clear: set}
}
