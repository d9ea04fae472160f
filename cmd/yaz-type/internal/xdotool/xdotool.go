// Package xdotool is the "xdotool" typing backend of an X11 session
// (xdotool, with the characters it lacks bound to spare keycodes by
// xmodmap first: [New]), and the focus as the X tools tell it (xprop,
// xdotool and xwininfo: [Focus]), which the X11 clipboard falls back to
// where the protocol is out of reach. Package inject describes what the
// backend does and when it is picked.
package xdotool

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/tool"
	"github.com/yazses/yazses/lib/untrusted"
)

// Target is the focused X11 window.
type Target struct {
	Focus backend.Focus
	Class []string // WM_CLASS instance and class
}

// Focus tells where keys go on the X display of c.Env.
func Focus(ctx context.Context, c tool.Call) (Target, error) {
	if backend.Getenv(c.Env, "DISPLAY") == "" {
		return Target{}, fmt.Errorf("no DISPLAY: %w", backend.ErrUnavailable)
	}
	out, err := c.Run(ctx, "xprop", "-root", "_NET_ACTIVE_WINDOW", "_NET_SUPPORTING_WM_CHECK", "_NET_SUPPORTED")
	if err != nil {
		return Target{}, fmt.Errorf("active window: %w: %w", backend.ErrUnavailable, err)
	}
	root := parseRoot(string(out))
	var win uint64
	switch {
	case root.activeSet:
		// A window manager keeps _NET_ACTIVE_WINDOW; 0 is "none".
		if root.active == 0 {
			return Target{Focus: backend.FocusNone}, nil
		}
		win = root.active
	case root.activeSupported:
		// The window manager supports it but has no active window.
		return Target{Focus: backend.FocusNone}, nil
	default:
		// No window manager (or one without _NET_ACTIVE_WINDOW): the X
		// input focus itself.
		out, err := c.Run(ctx, "xdotool", "getwindowfocus", "-f")
		if err != nil {
			return Target{}, fmt.Errorf("input focus: %w: %w", backend.ErrUnavailable, err)
		}
		id, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64)
		if err != nil {
			return Target{}, fmt.Errorf("input focus: unexpected output: %w", backend.ErrUnavailable)
		}
		if id <= 1 || id == root.wmCheck { // None, PointerRoot, the WM's own window
			return Target{Focus: backend.FocusNone}, nil
		}
		out, err = c.Run(ctx, "xwininfo", "-root")
		if err != nil {
			return Target{}, fmt.Errorf("root window: %w: %w", backend.ErrUnavailable, err)
		}
		if r, ok := rootWindow(string(out)); ok && r == id {
			return Target{Focus: backend.FocusNone}, nil
		}
		win = id
	}
	out, err = c.Run(ctx, "xprop", "-id", strconv.FormatUint(win, 10), "WM_CLASS", "_NET_WM_WINDOW_TYPE")
	if err != nil {
		// The window is gone (some window managers leave a closed window
		// in _NET_ACTIVE_WINDOW).
		return Target{Focus: backend.FocusNone}, nil
	}
	t := Target{Focus: backend.FocusWindow}
	for line := range strings.Lines(string(out)) {
		switch {
		case strings.HasPrefix(line, "WM_CLASS("):
			t.Class = quoted(line)
		case strings.HasPrefix(line, "_NET_WM_WINDOW_TYPE(") && strings.Contains(line, "_NET_WM_WINDOW_TYPE_DESKTOP"):
			t.Focus = backend.FocusNone // the desktop itself is active
		}
	}
	return t, nil
}

// rootProps is what the root window says about the window manager.
type rootProps struct {
	active          uint64
	activeSet       bool // _NET_ACTIVE_WINDOW is set
	activeSupported bool // listed in _NET_SUPPORTED
	wmCheck         uint64
}

// parseRoot parses `xprop -root _NET_ACTIVE_WINDOW _NET_SUPPORTING_WM_CHECK
// _NET_SUPPORTED`.
func parseRoot(out string) rootProps {
	var p rootProps
	for line := range strings.Lines(out) {
		switch {
		case strings.HasPrefix(line, "_NET_ACTIVE_WINDOW("):
			p.active, p.activeSet = propWindow(line)
		case strings.HasPrefix(line, "_NET_SUPPORTING_WM_CHECK("):
			p.wmCheck, _ = propWindow(line)
		case strings.HasPrefix(line, "_NET_SUPPORTED("):
			_, list, _ := strings.Cut(line, "=")
			for _, a := range strings.Split(list, ",") {
				if strings.TrimSpace(a) == "_NET_ACTIVE_WINDOW" {
					p.activeSupported = true
				}
			}
		}
	}
	return p
}

// propWindow parses an xprop line of type WINDOW:
// "_NET_ACTIVE_WINDOW(WINDOW): window id # 0x1200007".
func propWindow(out string) (uint64, bool) {
	_, after, ok := strings.Cut(out, "window id # ")
	if !ok {
		return 0, false
	}
	f := strings.FieldsFunc(after, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' })
	if len(f) == 0 {
		return 0, false
	}
	id, err := strconv.ParseUint(f[0], 0, 64)
	return id, err == nil
}

// rootWindow parses `xwininfo -root`: "xwininfo: Window id: 0x50d (the root window) …".
func rootWindow(out string) (uint64, bool) {
	_, after, ok := strings.Cut(out, "Window id: ")
	if !ok {
		return 0, false
	}
	f := strings.Fields(after)
	if len(f) == 0 {
		return 0, false
	}
	id, err := strconv.ParseUint(f[0], 0, 64)
	return id, err == nil
}

// quoted returns the double-quoted strings of an xprop line.
func quoted(line string) []string {
	var out []string
	for {
		_, rest, ok := strings.Cut(line, `"`)
		if !ok {
			return out
		}
		s, rest2, ok := strings.Cut(rest, `"`)
		if !ok {
			return out
		}
		out = append(out, s)
		line = rest2
	}
}

// errTooMany: the text has more characters to bind than the spare
// keycodes hold at once.
var errTooMany = errors.New("more characters to bind than the spare keycodes hold")

// xdotool is the X11 backend that runs xdotool.
type xdotool struct {
	o       backend.Options
	display sync.Locker
}

// New returns the "xdotool" backend. display is held while it types: the
// spare keycodes are the display's, whichever backend binds them (package
// x11's Route), so one text at a time is typed on a display.
func New(o backend.Options, display sync.Locker) backend.Injector {
	return &xdotool{o: o.WithDefaults(), display: display}
}

func (x *xdotool) Name() string { return backend.Xdotool }

func (x *xdotool) Focus(ctx context.Context) (backend.Focus, error) {
	t, err := Focus(ctx, tool.Call{Env: x.o.Environ})
	return t.Focus, err
}

func (x *xdotool) Type(ctx context.Context, typed untrusted.TypedText) error {
	text := typed.Text()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	x.display.Lock()
	defer x.display.Unlock()
	if err := backend.CheckFocus(ctx, x, x.o.RequireFocus, x.o.Log); err != nil {
		return err
	}
	if err := typeX11(ctx, tool.Call{Env: x.o.Environ, Secret: text}, text, x.o.RestoreDelay); err != nil {
		return fmt.Errorf("xdotool: %w", err)
	}
	return nil
}

// typeX11 types text with xdotool, its non-ASCII characters bound to spare
// keycodes first (as package inject describes).
func typeX11(ctx context.Context, c tool.Call, text string, hold time.Duration) error {
	if isASCII(text) {
		return xdotoolType(ctx, c, text)
	}
	out, err := c.Run(ctx, "xmodmap", "-pke")
	if err != nil {
		return fmt.Errorf("read keymap: %w", err)
	}
	spare := spareKeycodes(out)
	// Leave one spare keycode to xdotool for anything still missing.
	if len(spare) < 2 {
		return fmt.Errorf("no spare keycodes in the keyboard map: %w", backend.ErrUnavailable)
	}
	spare = spare[:len(spare)-1]
	// One round of bindings a text: a keycode bound again part-way
	// through would give a window that reads its keys late the later
	// character.
	if len(distinctNonASCII(text)) > len(spare) {
		return fmt.Errorf("%w: %w", errTooMany, backend.ErrUnavailable)
	}
	return typeBound(ctx, c, text, spare, hold)
}

// typeBound binds chunk's non-ASCII runes to spare keycodes, types chunk,
// waits hold and frees the keycodes (even when ctx ends).
func typeBound(ctx context.Context, c tool.Call, chunk string, spare []int, hold time.Duration) error {
	var bind, unbind bytes.Buffer
	for i, r := range distinctNonASCII(chunk) {
		fmt.Fprintf(&bind, "keycode %d = U%04X U%04X\n", spare[i], r, r)
		fmt.Fprintf(&unbind, "keycode %d =\n", spare[i])
	}
	if bind.Len() > 0 {
		// The keysyms go on stdin: a command line would show them.
		b := c
		b.Stdin = bind.Bytes()
		if _, err := b.Run(ctx, "xmodmap", "-"); err != nil {
			return fmt.Errorf("bind keycodes: %w", err)
		}
		defer func() {
			// Give the window time to look the keys up, then free the
			// keycodes, also after a cancel.
			_ = tool.Sleep(ctx, hold)
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			u := c
			u.Stdin = unbind.Bytes()
			_, _ = u.Run(uctx, "xmodmap", "-")
		}()
	}
	return xdotoolType(ctx, c, chunk)
}

// xdotoolType runs `xdotool type` with the text on stdin and the default
// key delay (12 ms).
func xdotoolType(ctx context.Context, c tool.Call, text string) error {
	c.Stdin = []byte(text)
	_, err := c.Run(ctx, "xdotool", "type", "--clearmodifiers", "--file", "-")
	return err
}

// spareKeycodes lists the keycodes of `xmodmap -pke` that have no keysym.
func spareKeycodes(pke []byte) []int {
	var spare []int
	sc := bufio.NewScanner(bytes.NewReader(pke))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "keycode" && f[2] == "=" {
			if n, err := strconv.Atoi(f[1]); err == nil && n > 8 && n < 256 {
				spare = append(spare, n)
			}
		}
	}
	return spare
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// distinctNonASCII lists the runes above U+007E of s, each once, in order.
func distinctNonASCII(s string) []rune {
	var out []rune
	seen := map[rune]bool{}
	for _, r := range s {
		if r > 0x7e && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}
