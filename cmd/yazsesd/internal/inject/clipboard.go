package inject

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/yazses/yazses/lib/untrusted"
)

// clipboard pastes through the clipboard and restores it.
type clipboard struct{ o Options }

func (c *clipboard) Name() string { return Clipboard }

// clipTools are the commands of one clipboard tool set.
type clipTools struct {
	save  []string // prints the clipboard's text
	set   []string // takes the text on stdin (forks a helper that serves it)
	clear []string // empties the clipboard
	// paste returns the argv that presses the paste chord.
	paste func(terminal bool) []string
	// tool is the X11 tool that keeps a restored selection (xclip or
	// xsel, see forSelection).
	tool string
}

// wayland reports whether the session is Wayland (else X11).
func (c *clipboard) wayland() (bool, error) {
	switch {
	case c.o.getenv("WAYLAND_DISPLAY") != "":
		return true, nil
	case c.o.getenv("DISPLAY") != "":
		return false, nil
	}
	return false, fmt.Errorf("no WAYLAND_DISPLAY or DISPLAY: %w", ErrUnavailable)
}

// target is the focus and whether the focused window is a terminal.
func (c *clipboard) target(ctx context.Context) (Focus, bool, error) {
	wl, err := c.wayland()
	if err != nil {
		return FocusUnknown, false, err
	}
	p := call{env: c.o.Environ}
	if wl {
		t, err := waylandFocus(ctx, p)
		return t.focus, IsTerminal(t.appID), err
	}
	if x, err := dialX(ctx, c.o.Environ); err == nil {
		t, err := x.focus(false)
		x.close()
		return t.focus, slices.ContainsFunc(t.class, IsTerminal), err
	}
	t, err := x11Focus(ctx, p)
	term := false
	for _, cl := range t.class {
		term = term || IsTerminal(cl)
	}
	return t.focus, term, err
}

func (c *clipboard) Focus(ctx context.Context) (Focus, error) {
	f, _, err := c.target(ctx)
	return f, err
}

// tools picks the clipboard programs for a Wayland session.
func (c *clipboard) tools() (clipTools, error) {
	wl, err := c.wayland()
	if err != nil {
		return clipTools{}, err
	}
	if wl {
		delay := c.o.WtypeDelay
		return clipTools{
			save:  []string{"wl-paste", "--no-newline"},
			set:   []string{"wl-copy"},
			clear: []string{"wl-copy", "--clear"},
			paste: func(terminal bool) []string {
				if terminal {
					return append([]string{"wtype"}, wtypeArgs(delay, "-M", "ctrl", "-M", "shift", "-k", "v", "-m", "shift", "-m", "ctrl")...)
				}
				return append([]string{"wtype"}, wtypeArgs(delay, "-M", "ctrl", "-k", "v", "-m", "ctrl")...)
			},
		}, nil
	}
	return clipTools{}, fmt.Errorf("X11 pastes in-process: %w", ErrUnavailable)
}

func (c *clipboard) Type(ctx context.Context, text string) error {
	text = untrusted.Typed(text)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	wl, err := c.wayland()
	if err != nil {
		return fmt.Errorf("clipboard: %w", err)
	}
	if !wl {
		x11Mu.Lock()
		defer x11Mu.Unlock()
		return c.pasteX11(ctx, text)
	}
	tools, err := c.tools()
	if err != nil {
		return fmt.Errorf("clipboard: %w", err)
	}
	f, terminal, err := c.target(ctx)
	if err != nil {
		return fmt.Errorf("clipboard: %w", err)
	}
	c.o.Log.Debug("focus", "backend", Clipboard, "focus", f.String(), "terminal", terminal)
	if f == FocusNone || (f == FocusUnknown && c.o.RequireFocus) {
		return fmt.Errorf("clipboard: focus %s: %w", f, ErrNoTarget)
	}
	env := c.o.Environ
	// What the clipboard holds now (no text or no owner: nothing).
	prev, saveErr := call{env: env}.run(ctx, tools.save[0], tools.save[1:]...)
	if ctx.Err() != nil {
		return fmt.Errorf("clipboard: %w", ctx.Err())
	}
	restore := func() error {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if saveErr == nil && len(prev) > 0 {
			return c.put(rctx, tools, prev, string(prev))
		}
		return c.put(rctx, tools, nil, text)
	}
	if done, err := c.pasteWayland(ctx, text, terminal, restore); done {
		return err
	}
	if err := c.put(ctx, tools, []byte(text), text); err != nil {
		return fmt.Errorf("clipboard: set: %w", err)
	}
	paste := tools.paste(terminal)
	_, pasteErr := call{env: env}.run(ctx, paste[0], paste[1:]...)
	if pasteErr == nil {
		// The window fetches the text after it sees the chord.
		_ = sleep(ctx, c.o.RestoreDelay)
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
	return fmt.Errorf("clipboard: the paste chord was pressed, but whether the window took the paste cannot be told without data control: %w", ErrInterrupted)
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

// confirmWait bounds the wait for a clipboard tool's helper to own the
// clipboard.
const confirmWait = 3 * time.Second

// put sets the clipboard to data (nil: clears it) and waits until the
// clipboard really holds it: xclip, xsel and wl-copy fork a helper that
// takes the clipboard some time after the command has returned, and a
// paste before that would paste the old content. secret is kept out of
// errors.
func (c *clipboard) put(ctx context.Context, tools clipTools, data []byte, secret string) error {
	argv := tools.set
	stdin := data
	if data == nil {
		argv, stdin = tools.clear, []byte{}
	}
	r := call{env: c.o.Environ, secret: secret, stdin: stdin, detach: true}
	if _, err := r.run(ctx, argv[0], argv[1:]...); err != nil {
		return err
	}
	deadline := time.Now().Add(confirmWait)
	for {
		got, err := call{env: c.o.Environ}.run(ctx, tools.save[0], tools.save[1:]...)
		if data == nil {
			// Cleared: no text, or at least not the dictated one.
			if err != nil || len(got) == 0 {
				return nil
			}
		} else if err == nil && bytes.Equal(got, data) {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the clipboard did not take the new content")
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}
