// Package backend is what every typing backend of package inject shares:
// the names, the [Options], the [Focus] a backend reports, the errors that
// decide whether a Typer goes on to the next backend, and the focus
// policy ([CheckFocus]). Package inject re-exports what its callers use; the
// backends (x11, wayland and inject's own) import this one.
package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/yazses/yazses/lib/untrusted"
)

// Backend names: the closed vocabulary that a Typer reports.
const (
	Wayland   = "wayland"
	Portal    = "portal"
	Wtype     = "wtype"
	X11       = "x11"
	Xdotool   = "xdotool"
	Ydotool   = "ydotool"
	Clipboard = "clipboard"
	Stdout    = "stdout"
	IBus      = "ibus"
)

// Errors.
var (
	// ErrNoTarget: no window has keyboard focus (or it cannot be told and
	// Options.RequireFocus is set). Nothing was typed.
	ErrNoTarget = errors.New("no focused window to type into")
	// ErrUnavailable: the backend cannot run in this session (no display,
	// a tool missing). Nothing was typed.
	ErrUnavailable = errors.New("typing backend unavailable")
	// ErrInterrupted: typing stopped part-way (the window closed or lost
	// the focus, the context ended, the display went away); part of the
	// text may be in the window, so no other backend types it again.
	ErrInterrupted = errors.New("typing interrupted")
	// ErrPasted: the text went through the clipboard and the paste chord,
	// and whether the window took it cannot be seen (the portal route on
	// GNOME and KDE, which offer no data control to watch the fetch).
	// Not typed, and not typed again by another backend.
	ErrPasted = errors.New("pasted through the clipboard: whether the window took it cannot be seen")
	// ErrNoRoute: no route could be opened in this session (yet): the
	// typing child tries again at the next text. It wraps ErrUnavailable.
	ErrNoRoute = fmt.Errorf("no route can type here: %w", ErrUnavailable)
	// ErrUnconfirmed: the text was committed through the input method
	// (IBus) to the focused input context, and whether a text field had
	// it cannot be seen (the field does not report the text around its
	// cursor). Not typed, and not typed again by another backend.
	ErrUnconfirmed = errors.New("committed through the input method: whether a field took it cannot be seen")
	// ErrRefused: the focused field refuses typed text (a password or PIN
	// field). Nothing was typed; no other backend types it either.
	ErrRefused = errors.New("the focused field is a password or PIN field: not typed")
	// ErrDisplayGone: the display server closed the connection or
	// stopped answering part-way; what arrived cannot be told.
	ErrDisplayGone = errors.New("the display server is gone")
	// ErrNoPreedit: the route shows no tentative text (only the IBus
	// route does). Nothing was shown.
	ErrNoPreedit = errors.New("the typing route shows no preedit")
	// ErrNotPasted: the window did not fetch a paste within [PasteWait].
	// Nothing of it arrived; another backend may type it.
	ErrNotPasted = errors.New("the window did not take the paste")
)

// PasteWait bounds the wait for the window to fetch a paste after the
// chord (35–70 ms when it does, measured with xterm under Xvfb).
const PasteWait = 5 * time.Second

// Focus is where typed keys would go.
type Focus int

const (
	// FocusUnknown: the session cannot tell (Wayland outside sway).
	FocusUnknown Focus = iota
	// FocusWindow: a window has keyboard focus.
	FocusWindow
	// FocusNone: no window has keyboard focus.
	FocusNone
)

func (f Focus) String() string {
	switch f {
	case FocusWindow:
		return "window"
	case FocusNone:
		return "none"
	default:
		return "unknown"
	}
}

// Default durations.
const (
	// DefaultRestoreDelay is the wait before the Wayland clipboard is
	// restored and before the keycodes that xdotool bound are freed: time
	// for the window to fetch the pasted text or look the keys up. (The
	// x11 backend and the X11 paste need none: they keep the bindings, and
	// see the window fetch the paste.)
	DefaultRestoreDelay = 300 * time.Millisecond
	// DefaultWtypeDelay is wtype's start delay (-s).
	DefaultWtypeDelay = 200 * time.Millisecond
)

// Options configure the backends. The zero value works for the daemon.
type Options struct {
	// Environ is the environment for session detection and for the tools
	// (DISPLAY, WAYLAND_DISPLAY, SWAYSOCK, XDG_RUNTIME_DIR, PATH);
	// nil is os.Environ().
	Environ []string
	// Stdout receives the text for the "stdout" backend; nil is os.Stdout.
	Stdout io.Writer
	// RequireFocus makes an unknown focus an ErrNoTarget too.
	RequireFocus bool
	// RestoreDelay: see DefaultRestoreDelay; 0 is the default.
	RestoreDelay time.Duration
	// WtypeDelay: see DefaultWtypeDelay; 0 is the default, negative none.
	WtypeDelay time.Duration
	// PasteOverChars: a Typer pastes a text longer than this many
	// characters through the clipboard (restoring it after) instead of
	// typing it, and types it when the paste fails; so too a shorter
	// text that the x11 backend cannot type (more distinct characters
	// than its spare keycodes hold). 0 pastes only what no typing backend
	// of "auto" can type.
	// It does not apply to the "clipboard" and "stdout" backends.
	PasteOverChars int
	// Log gets debug lines (backend, focus, durations: never text);
	// nil discards them.
	Log *slog.Logger
	// StateDir is the daemon's state folder, where the portal route
	// keeps the desktop's restore token (0600); "" is
	// $XDG_STATE_HOME/yazses of Environ (or ~/.local/state/yazses).
	StateDir string
	// Notify shows a desktop notification of a kind (the portal route's
	// "portal_consent" before its consent dialog); nil shows none.
	Notify func(kind string)
}

// WithDefaults fills in what is zero (see each field).
func (o Options) WithDefaults() Options {
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.RestoreDelay <= 0 {
		o.RestoreDelay = DefaultRestoreDelay
	}
	if o.WtypeDelay == 0 {
		o.WtypeDelay = DefaultWtypeDelay
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// Getenv looks a variable up in env (the last one wins, as in exec).
func Getenv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// Injector is one backend.
type Injector interface {
	// Name is the backend's name, one of the names above.
	Name() string
	// Focus tells where typed keys would go. An error means the backend
	// cannot run here (it wraps ErrUnavailable when it is not installed or
	// the session lacks its display).
	Focus(ctx context.Context) (Focus, error)
	// Type types text into the focused window. It checks Focus first and
	// returns ErrNoTarget, typing nothing, when there is no target. Text
	// that is empty or only spaces types nothing and is no error. The
	// text is cleaned already (only untrusted.Typed makes a TypedText,
	// and a Typer makes it once): a backend never cleans it again.
	Type(ctx context.Context, text untrusted.TypedText) error
}

// Preediter is a backend that can show tentative text in the focused
// field (an input method's preedit: underlined, not part of the field's
// text). Preedit shows text, replacing what it showed; "" takes it away.
// The backend's next Type replaces it with the text it types.
type Preediter interface {
	// Preedits reports whether it shows one in this session.
	Preedits() bool
	Preedit(ctx context.Context, text untrusted.TypedText) error
}

// Pauser is a backend that can tell before typing that it cannot type a
// text (the x11 backend, for more characters than its spare keycodes
// hold): a Typer pastes such a text when pasting is on.
type Pauser interface {
	Pauses(ctx context.Context, text untrusted.TypedText) bool
}

// CheckFocus applies the focus policy: nil to type, ErrNoTarget not to.
func CheckFocus(ctx context.Context, inj Injector, requireFocus bool, log *slog.Logger) error {
	f, err := inj.Focus(ctx)
	if err != nil {
		return err
	}
	log.Debug("focus", "backend", inj.Name(), "focus", f.String())
	if f == FocusNone || (f == FocusUnknown && requireFocus) {
		return fmt.Errorf("%s: focus %s: %w", inj.Name(), f, ErrNoTarget)
	}
	return nil
}

// terminals are WM_CLASS names (instance or class) and Wayland app_ids of
// terminal emulators, lower case: they paste with ctrl+shift+v.
var terminals = []string{
	"xterm", "uxterm", "urxvt", "rxvt", "urxvt-256color", "kitty", "alacritty",
	"gnome-terminal", "gnome-terminal-server", "org.gnome.terminal",
	"kgx", "org.gnome.console", "konsole", "org.kde.konsole", "yakuake",
	"foot", "footclient", "wezterm", "org.wezfurlong.wezterm",
	"xfce4-terminal", "terminator", "tilix", "com.gexperts.tilix", "st",
	"st-256color", "lxterminal", "mate-terminal", "qterminal", "terminology",
	"sakura", "guake", "tilda", "ghostty", "com.mitchellh.ghostty",
	"cool-retro-term", "contour", "rio", "blackbox", "com.raggesilver.blackbox",
}

// IsTerminal reports whether a window class (X11 WM_CLASS instance or
// class, or a Wayland app_id) is a terminal emulator's.
func IsTerminal(class string) bool {
	c := strings.ToLower(strings.TrimSpace(class))
	return c != "" && (slices.Contains(terminals, c) || strings.Contains(c, "terminal"))
}

// PartialError is typing that stopped part-way where the backend knows
// how much arrived: Arrived characters went to the window that had the
// focus, and nothing after them went anywhere (the x11 backend proves the
// focus with the server grabbed before each batch of keys). It wraps
// ErrInterrupted.
type PartialError struct {
	Arrived int
	Cause   string // a typewire cause: "focus_moved", "display_gone"
	Err     error
}

func (e *PartialError) Error() string {
	return fmt.Sprintf("typing stopped after %d characters (%s): %v", e.Arrived, e.Cause, e.Err)
}

// Unwrap is ErrInterrupted and the cause's error.
func (e *PartialError) Unwrap() []error { return []error{ErrInterrupted, e.Err} }
