package wayland

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/sway"
	"github.com/yazses/yazses/cmd/yaz-type/internal/tool"
	"github.com/yazses/yazses/lib/untrusted"
)

// Selections is a Wayland session's clipboard, and with Primary its
// primary selection too, through wl-paste and wl-copy: the one way this
// tree reads, sets and puts back a Wayland clipboard (the "clipboard"
// backend's and the portal route's paste both use it). GNOME and KDE
// Plasma offer both selections to a client; wlroots compositors too.
type Selections struct {
	Env     []string
	Primary bool
	Log     *slog.Logger // nil: none
}

// wlClipboardTools are wl-paste and wl-copy for the clipboard, and for
// the primary selection.
var wlClipboardTools = [2]tool.Clipboard{{
	Save:  []string{"wl-paste", "--no-newline"},
	Set:   []string{"wl-copy"},
	Clear: []string{"wl-copy", "--clear"},
}, {
	Save:  []string{"wl-paste", "--primary", "--no-newline"},
	Set:   []string{"wl-copy", "--primary"},
	Clear: []string{"wl-copy", "--primary", "--clear"},
}}

// selections are the tool sets of s's selections.
func (s Selections) selections() []tool.Clipboard {
	if s.Primary {
		return wlClipboardTools[:]
	}
	return wlClipboardTools[:1]
}

// saved is what one selection held before the paste.
type saved struct {
	tools tool.Clipboard
	prev  []byte // its text; nil: none, or it could not be read
}

// save reads what one selection holds (no text or no owner: nothing).
func (s Selections) save(ctx context.Context, tools tool.Clipboard) (saved, error) {
	prev, err := tool.Call{Env: s.Env}.Run(ctx, tools.Save[0], tools.Save[1:]...)
	if ctx.Err() != nil {
		return saved{}, ctx.Err()
	}
	if err != nil || len(prev) == 0 {
		prev = nil
	}
	return saved{tools, prev}, nil
}

// restorer puts back what done held: its text, or the selection cleared
// when it held none. secret (the pasted text) is kept out of errors.
func (s Selections) restorer(done []saved, secret string) func(context.Context) error {
	return func(ctx context.Context) error {
		var errs []error
		for _, sv := range done {
			if err := tool.Put(ctx, s.Env, sv.tools, sv.prev, secret); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
}

func (s Selections) check() error {
	if backend.Getenv(s.Env, "WAYLAND_DISPLAY") == "" {
		return fmt.Errorf("no WAYLAND_DISPLAY for wl-copy: %w", backend.ErrUnavailable)
	}
	return nil
}

// Save reads what the selections hold and returns the function that puts
// it back (for a paste that sets them some other way: the in-process data
// source). secret is the text about to be pasted, kept out of errors.
func (s Selections) Save(ctx context.Context, secret string) (restore func(context.Context) error, err error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var done []saved
	for _, tools := range s.selections() {
		sv, err := s.save(ctx, tools)
		if err != nil {
			return nil, err
		}
		done = append(done, sv)
	}
	return s.restorer(done, secret), nil
}

// Put saves each selection's text, then sets it to text (waiting until it
// holds it), and returns the function that puts back what they held. The
// primary selection is best effort (a compositor may lack it: the
// clipboard alone pastes in GTK and Qt windows).
func (s Selections) Put(ctx context.Context, text string) (restore func(context.Context) error, err error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var done []saved
	for i, tools := range s.selections() {
		sv, err := s.save(ctx, tools)
		if err != nil {
			return nil, errors.Join(err, s.restorer(done, text)(context.WithoutCancel(ctx)))
		}
		if err := tool.Put(ctx, s.Env, tools, []byte(text), text); err != nil {
			if i == 0 {
				return nil, fmt.Errorf("clipboard: %w", err)
			}
			if s.Log != nil {
				s.Log.Debug("the primary selection was not set", "err", err)
			}
			continue
		}
		done = append(done, sv)
	}
	return s.restorer(done, text), nil
}

// clipboard is the "clipboard" backend of a Wayland session: in-process
// where the compositor offers data control and the virtual keyboard (see
// pasteWl), else wl-copy and wtype's chord; the clipboard's text is saved
// first and put back after (Selections).
type clipboard struct {
	o backend.Options
	r *Route
}

func (c *clipboard) Name() string { return backend.Clipboard }

// chord is the argv that presses the paste chord with wtype:
// ctrl+shift+v in a terminal, ctrl+v elsewhere.
func (c *clipboard) chord(terminal bool) []string {
	if terminal {
		return append([]string{"wtype"}, wtypeArgs(c.o.WtypeDelay, "-M", "ctrl", "-M", "shift", "-k", "v", "-m", "shift", "-m", "ctrl")...)
	}
	return append([]string{"wtype"}, wtypeArgs(c.o.WtypeDelay, "-M", "ctrl", "-k", "v", "-m", "ctrl")...)
}

// target is the focus and whether the focused window is a terminal.
func (c *clipboard) target(ctx context.Context) (backend.Focus, bool, error) {
	t, err := sway.Focus(ctx, tool.Call{Env: c.o.Environ})
	return t.Focus, backend.IsTerminal(t.AppID), err
}

func (c *clipboard) Focus(ctx context.Context) (backend.Focus, error) {
	f, _, err := c.target(ctx)
	return f, err
}

func (c *clipboard) Type(ctx context.Context, typed untrusted.TypedText) error {
	text := typed.Text()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	f, terminal, err := c.target(ctx)
	if err != nil {
		return fmt.Errorf("clipboard: %w", err)
	}
	c.o.Log.Debug("focus", "backend", backend.Clipboard, "focus", f.String(), "terminal", terminal)
	if f == backend.FocusNone || (f == backend.FocusUnknown && c.o.RequireFocus) {
		return fmt.Errorf("clipboard: focus %s: %w", f, backend.ErrNoTarget)
	}
	sel := Selections{Env: c.o.Environ, Log: c.o.Log}
	if done, err := c.pasteWayland(ctx, text, terminal, sel); done {
		return err
	}
	restore, err := sel.Put(ctx, text)
	if err != nil {
		return fmt.Errorf("clipboard: set: %w", err)
	}
	paste := c.chord(terminal)
	_, pasteErr := tool.Call{Env: c.o.Environ}.Run(ctx, paste[0], paste[1:]...)
	if pasteErr == nil {
		// The window fetches the text after it sees the chord.
		_ = tool.Sleep(ctx, c.o.RestoreDelay)
	}
	restoreErr := restoreSoon(ctx, restore)
	if pasteErr != nil {
		return fmt.Errorf("clipboard: paste: %w", errors.Join(pasteErr, restoreErr))
	}
	if restoreErr != nil {
		c.o.Log.Warn("clipboard: pasted, but the clipboard was not restored", "err", restoreErr)
	}
	// wl-copy serves whoever asks and says nothing of it: the window may
	// have taken the paste or not. Not typed, and not typed again.
	return fmt.Errorf("clipboard: the paste chord was pressed, but whether the window took the paste cannot be told without data control: %w", backend.ErrInterrupted)
}

// restoreSoon runs restore within a few seconds, also after ctx ended.
func restoreSoon(ctx context.Context, restore func(context.Context) error) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return restore(rctx)
}

// pasteWayland pastes in-process (see pasteWl) when the compositor offers
// data control and the virtual keyboard, and then restores the clipboard;
// done is false when it cannot (nothing was changed).
func (c *clipboard) pasteWayland(ctx context.Context, text string, terminal bool, sel Selections) (done bool, err error) {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	wc, err := c.r.client(ctx)
	if err != nil {
		return false, nil
	}
	if err := wc.dataDevice(ctx); err != nil {
		return false, nil
	}
	restore, err := sel.Save(ctx, text)
	if err != nil {
		return true, fmt.Errorf("clipboard: %w", err)
	}
	src, err := wc.pasteWl(ctx, text, terminal)
	restoreErr := restoreSoon(ctx, restore)
	wc.dropSource(src)
	if restoreErr != nil {
		c.o.Log.Warn("clipboard: the clipboard was not restored", "err", restoreErr)
	}
	if err != nil {
		return true, fmt.Errorf("clipboard: %w", err)
	}
	return true, nil
}
