package wayland

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/tool"
	"github.com/yazses/yazses/lib/untrusted"
)

// clipboard is the "clipboard" backend of a Wayland session: in-process
// where the compositor offers data control and the virtual keyboard (see
// pasteWl), else wl-copy and wtype's chord; wl-paste saves the
// clipboard's text first and wl-copy puts it back after.
type clipboard struct{ o backend.Options }

// NewClipboard returns the Wayland "clipboard" backend.
func NewClipboard(o backend.Options) backend.Injector { return &clipboard{o: o.WithDefaults()} }

func (c *clipboard) Name() string { return backend.Clipboard }

// tools are wl-paste and wl-copy.
var tools = tool.Clipboard{
	Save:  []string{"wl-paste", "--no-newline"},
	Set:   []string{"wl-copy"},
	Clear: []string{"wl-copy", "--clear"},
}

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
	t, err := waylandFocus(ctx, tool.Call{Env: c.o.Environ})
	return t.focus, backend.IsTerminal(t.appID), err
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
	env := c.o.Environ
	// What the clipboard holds now (no text or no owner: nothing).
	prev, saveErr := tool.Call{Env: env}.Run(ctx, tools.Save[0], tools.Save[1:]...)
	if ctx.Err() != nil {
		return fmt.Errorf("clipboard: %w", ctx.Err())
	}
	restore := func() error {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if saveErr == nil && len(prev) > 0 {
			return tool.Put(rctx, env, tools, prev, string(prev))
		}
		return tool.Put(rctx, env, tools, nil, text)
	}
	if done, err := c.pasteWayland(ctx, text, terminal, restore); done {
		return err
	}
	if err := tool.Put(ctx, env, tools, []byte(text), text); err != nil {
		return fmt.Errorf("clipboard: set: %w", err)
	}
	paste := c.chord(terminal)
	_, pasteErr := tool.Call{Env: env}.Run(ctx, paste[0], paste[1:]...)
	if pasteErr == nil {
		// The window fetches the text after it sees the chord.
		_ = tool.Sleep(ctx, c.o.RestoreDelay)
	}
	restoreErr := restore()
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

// pasteWayland pastes in-process (see pasteWl) when the compositor offers
// data control and the virtual keyboard, and then restores the clipboard;
// done is false when it cannot (nothing was changed).
func (c *clipboard) pasteWayland(ctx context.Context, text string, terminal bool, restore func() error) (done bool, err error) {
	wlMu.Lock()
	defer wlMu.Unlock()
	wc, err := wlClient(ctx, c.o.Environ)
	if err != nil {
		return false, nil
	}
	if err := wc.dataDevice(ctx); err != nil {
		return false, nil
	}
	src, err := wc.pasteWl(ctx, text, terminal)
	restoreErr := restore()
	wc.dropSource(src)
	if restoreErr != nil {
		c.o.Log.Warn("clipboard: the clipboard was not restored", "err", restoreErr)
	}
	if err != nil {
		return true, fmt.Errorf("clipboard: %w", err)
	}
	return true, nil
}
