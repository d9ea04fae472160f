// Package inject types dictated text into the focused window: the Typer,
// "auto"'s choice and fallback, and the ydotool, stdout and clipboard
// backends; the X11 backends are in x11, the Wayland ones in
// wayland, what they share in backend and tool.
//
// Backends: an in-process X11 client, an in-process Wayland client, and
// small external tools run without a shell:
//
//   - "x11" (X11, in-process): a connection to the display (DISPLAY and
//     XAUTHORITY of Options.Environ; github.com/jezek/xgb, pure Go) with
//     the XTEST extension. The characters the keyboard map has on a key's
//     first or second (Shift) level are typed on that key, if the key's
//     second group holds the same (so a person who switched to another
//     layout group gets the same characters); every other character is
//     bound to a spare keycode (one without keysyms; two characters on
//     each, the second with Shift) in one batch of ChangeKeyboardMapping
//     requests followed by a round trip, so the server has applied them
//     and every client has its MappingNotify ahead of the keys. Then the
//     keys go out as XTEST key presses and releases. A keycode is never
//     bound again while one text is typed: a client reads the new map only
//     when it looks up the first key after the MappingNotify, which on a
//     busy machine can be long after the key was sent, and it would find
//     the later character (no timer can tell when it has read it). So a
//     text with more such characters than the spare keycodes hold (Xvfb's
//     US map has 18, so 36 characters) is refused before any key, with
//     [ErrUnavailable]: a Typer pastes it (see PasteOverChars; "auto" goes
//     on to the clipboard). The bindings stay after the text, recorded in
//     the root window's _YAZSES_HELD_KEYCODES property, so that a window
//     still reading the keys finds them; a later text types on them what
//     they hold and binds the keycodes again only when none is free, the
//     least recently used first; [Typer.Close] empties them (the daemon
//     calls it when it exits; one killed before finds them again through
//     the property). Modifier
//     keys held down are released first (and never pressed again), Caps
//     Lock is turned off for the text and on again after, and nothing is
//     left pressed, also after an error or a cancelled context. Typing
//     stops with [ErrInterrupted] when the window is destroyed, unmapped or
//     loses the focus. A display it cannot reach, or one without XTEST, is
//     [ErrUnavailable]: "auto" goes on to xdotool.
//   - "xdotool" (X11): `xdotool type --clearmodifiers --file -`, the text on
//     stdin. xdotool types a character that the keyboard map lacks by
//     binding it to a spare keycode for one key press and unbinding it at
//     once; the receiving client often looks the keycode up after the
//     unbinding, and the character is lost ("Grüße" arrives as "Gre", more
//     often under load, whatever --delay says), and an upper-case letter
//     bound that way arrives in lower case ("Ü" as "ü"). So before typing,
//     every non-ASCII character of the text is bound to a spare keycode with
//     `xmodmap -` (both shift levels the same character), xdotool finds them
//     in the map and needs no binding of its own, and the spare keycodes are
//     freed again after Options.RestoreDelay. A text with more of them than
//     the spare keycodes hold is refused ([ErrUnavailable]), as with x11.
//     xdotool keeps its default 12 ms key delay; --delay 0 is never used.
//   - "wayland" (wlroots compositors: sway, Hyprland, river, labwc,
//     Wayfire; in-process): a Wayland client of the process's own
//     (the wire protocol in pure Go, no libwayland) on
//     $XDG_RUNTIME_DIR/$WAYLAND_DISPLAY, with one virtual keyboard
//     (zwp_virtual_keyboard_v1 on the first wl_seat). For each text it
//     builds an XKB keymap with one key per distinct character at the
//     only level (the keysym of U+XXXX is UXXXX: Latin-1 its own,
//     every other one 0x01000000 | the code point), so that every
//     character types whatever the user's layout or the daemon's locale,
//     and no modifier is pressed; hands it over in a sealed memfd
//     (keymap, then modifiers all clear), and waits for a wl_display.sync
//     round trip, so that a keymap the compositor refuses is an error
//     before any key, which a Typer falls back from. Then a press and a
//     release per character (CLOCK_MONOTONIC milliseconds), with a round
//     trip after every 128 characters and at the end: the call returns
//     when the compositor has processed every key, and it delivers keys to
//     the focused client in the order it got them, after the keymap.
//     A text with more than 247 distinct characters (keycodes 9-255) is
//     typed in pieces, each with its keymap. The connection and the
//     virtual keyboard stay between texts (one client per Typer; a
//     failed one is dialled again at the next text), so the seat's own
//     keyboard and its keymap are never touched; [Typer.Close] closes it,
//     which destroys the virtual keyboard. No process is spawned: the
//     focus comes from sway's IPC socket in-process. A compositor that
//     lacks zwp_virtual_keyboard_manager_v1 (GNOME, KDE) or cannot be
//     reached is [ErrUnavailable]; a protocol error or the compositor
//     going away after keys went out is [ErrInterrupted], and every
//     exchange has a deadline (5 s). Xwayland windows get the keymap
//     through Xwayland, untested here. On a seat with no keyboard at all
//     (a headless compositor; never a desktop with a keyboard), clients
//     bind their keyboard only when the virtual keyboard appears, and
//     keys before that are lost: "auto" dials (and creates the virtual
//     keyboard) when the Typer is opened, when the daemon starts.
//   - "portal" (GNOME, KDE Plasma; in-process, over D-Bus): the XDG
//     desktop portal's RemoteDesktop interface (package portal):
//     one session per Typer, started when the Typer opens (the
//     desktop's consent dialog comes at the daemon's start, after a
//     notification), with the consent kept where the portal can keep it
//     (a restore token in the state folder). Characters go as keysyms
//     where every layout of the compositor's keymap has them at the first
//     or second level; any other text is pasted whole (Shift+Insert, the
//     clipboard and the primary selection put back after), which is
//     [ErrPasted]: whether the window took it cannot be seen there.
//   - "wtype" (Wayland, virtual-keyboard protocol): `wtype -s 200 -`, the
//     text on stdin. The short start delay keeps the first key, which a
//     client can otherwise lose while it takes the new keymap.
//   - "ydotool" (uinput, any session; needs ydotoold and access to
//     /dev/uinput): `ydotool type --file /dev/stdin`. It types on GNOME's
//     and KDE's Wayland sessions without the portal, at the price of a
//     root daemon. Its command line is tested, the typing is not: the
//     development machine has no /dev/uinput.
//   - "clipboard": paste through the clipboard and put back what it held.
//     On X11 (in-process, with XTEST) this process owns the CLIPBOARD (and,
//     for a terminal, detected from the focused window's WM_CLASS, the
//     PRIMARY selection too) while it pastes, presses Shift+Insert in a
//     terminal (what xterm, urxvt, st, VTE and Qt terminals paste with as
//     installed; xterm types a ^V for Ctrl+Shift+V) and Ctrl+V elsewhere,
//     and serves the text itself: the paste succeeds when the focused
//     window's client has fetched the whole text, and only then. A window
//     that fetches nothing within 5 s is an error (nothing arrived: a Typer
//     types the text); a fetch by another client only, or a cancel after
//     the chord, is [ErrInterrupted] (it may have arrived). Then each
//     selection gets back what it held: no owner, or its text, which xclip
//     (or xsel) keeps serving. A selection that holds something else (an
//     image), or whose owner does not answer, cannot be put back: the
//     backend then changes nothing and fails with [ErrUnavailable]. A text
//     longer than the X server's largest request (256 KiB without
//     BIG-REQUESTS) is refused the same way. On Wayland, Ctrl+Shift+V in a
//     terminal (by app_id) and Ctrl+V elsewhere; wl-paste saves the
//     clipboard's text first and wl-copy puts it back after (or clears
//     it if it held no text). Where the compositor offers data control
//     (zwlr_data_control_manager_v1) and the virtual keyboard (wlroots
//     compositors), the paste is in-process: this process's own data
//     source holds the text, its virtual keyboard presses the chord, and
//     the paste succeeds when a client fetches the text after the chord,
//     and only then (no fetch within 5 s: an error, and a Typer types
//     the text; a fetch before the chord, a clipboard manager's, gets
//     nothing; the protocol does not name the client that fetched).
//     Elsewhere wl-copy and wtype's chord, which cannot tell whether the
//     window took the paste: that is [ErrInterrupted] (not typed, and not
//     typed again), the text kept by the daemon.
//   - "stdout": the text and a newline to Options.Stdout.
//
// "auto" (see [Choose]) picks from the session, and says why: an X11
// session: x11, then the clipboard; a Wayland compositor that offers the
// virtual keyboard (or cannot be asked yet): wayland, ydotool when
// ydotoold runs, the clipboard; one without it
// (GNOME, KDE) whose RemoteDesktop portal offers a keyboard: portal, then
// ydotool when ydotoold runs; else ydotool when ydotoold runs; else
// nothing, and the error says what to install or allow. It falls back to
// the next backend when one fails before typing (not after
// ErrInterrupted or ErrPasted: see [Typer.Type]).

// With Options.PasteOverChars a Typer pastes a text longer than that
// through the clipboard backend (and one that the x11 backend cannot type
// in one round of bindings), and types it when the paste fails.
// Measured on Xvfb with an xterm (BenchmarkInject), the x11 backend types
// about 11 µs a character after about 1.5 ms of setup, and a paste arrives
// 35–70 ms after the call: typing wins up to about 3000 characters.
//
// Every tool runs with a UTF-8 character type (LC_CTYPE=C.UTF-8 when the
// environment's is not UTF-8): in the C locale, which a systemd user
// manager often has, wtype types "Gr" for "Grüße 日本語" and exits 0.
//
// # What is typed
//
// untrusted.Typed (package lib/untrusted) runs on every text first: line
// breaks and tabs become a space and other control characters are
// removed, so no Enter (and no other control key) is ever typed. Everything else, all of Unicode, arrives as it was.
// It runs once, in [Typer.Type], where a text enters typing: every
// backend's Type takes the untrusted.TypedText it makes, which nothing
// else can make, so no backend can be handed a text that was not cleaned,
// and none cleans it again.
//
// # No text target
//
// Before typing, each backend asks where the keys would go ([Focus]):
//
//   - X11 can tell (x11 through the protocol, xdotool and the clipboard
//     with xprop when the protocol is out of reach): the root window's
//     _NET_ACTIVE_WINDOW, which an EWMH
//     window manager keeps (0, unset while the manager lists it as supported,
//     a window that no longer exists, or a desktop window mean none);
//     without such a window manager the X input focus (None, PointerRoot,
//     the root window or the manager's own check window mean none).
//   - Wayland cannot tell in general; under sway the focused node of
//     `swaymsg -t get_tree` tells (a workspace or output focused: none).
//
// [FocusNone] is [ErrNoTarget] and nothing is typed. [FocusUnknown] (Wayland
// outside sway, ydotool outside X11 and sway) types by default: a Wayland
// compositor delivers virtual keys only to the surface that holds keyboard
// focus, so with none they reach no window, and the daemon keeps every
// transcript for `yazsesd ctl last` anyway. Options.RequireFocus turns
// unknown into ErrNoTarget as well, for those who want the stricter rule
// (then nothing is ever typed where the focus cannot be told).
//
// # Privacy and processes
//
// The text is never put on a command line (other users see those in ps) and
// never into an error or log line: errors name the tool and its exit status,
// and a tool's own message only when it does not contain a word of the text.
// Every tool runs in its own process group, which is killed when the context
// is cancelled. The x11 backend's errors name protocol requests, never
// keysyms; every exchange with the X server has a deadline (5 s), so a
// server that stops answering ends the call with an error.
package inject

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/portal"
	"github.com/yazses/yazses/cmd/yaz-type/internal/wayland"
	"github.com/yazses/yazses/cmd/yaz-type/internal/x11"
	"github.com/yazses/yazses/lib/typewire"
	"github.com/yazses/yazses/lib/untrusted"
)

// Backend names: the closed vocabulary that [Typer.Type] reports.
const (
	Wayland   = backend.Wayland
	Portal    = backend.Portal
	Wtype     = backend.Wtype
	X11       = backend.X11
	Xdotool   = backend.Xdotool
	Ydotool   = backend.Ydotool
	Clipboard = backend.Clipboard
	Stdout    = backend.Stdout
	IBus      = backend.IBus
	Auto      = "auto"
)

// Backends are the names [New] accepts; [Open] also accepts [Auto].
var Backends = []string{Wayland, Portal, IBus, Wtype, X11, Xdotool, Ydotool, Clipboard, Stdout}

// Errors (see package backend for each).
var (
	ErrNoTarget    = backend.ErrNoTarget
	ErrUnavailable = backend.ErrUnavailable
	ErrInterrupted = backend.ErrInterrupted
	ErrPasted      = backend.ErrPasted
	ErrNoPreedit   = backend.ErrNoPreedit
	// ErrUnknownBackend: a name that is not one of Backends (or Auto).
	ErrUnknownBackend = errors.New("unknown typing backend")
)

// Focus is where typed keys would go.
type Focus = backend.Focus

// The focus a backend reports.
const (
	FocusUnknown = backend.FocusUnknown
	FocusWindow  = backend.FocusWindow
	FocusNone    = backend.FocusNone
)

// Default durations (see package backend).
const (
	DefaultRestoreDelay = backend.DefaultRestoreDelay
	DefaultWtypeDelay   = backend.DefaultWtypeDelay
)

// Options configure the backends. The zero value works for the daemon.
type Options = backend.Options

// Injector is one backend.
type Injector = backend.Injector

// routes are what the in-process backends of one Typer hold, one per
// display protocol (see each package's Route): the X11 display's spare
// keycodes, the Wayland connection and its virtual keyboard, the portal's
// session. The backends of one Typer share them.
type routes struct {
	x  *x11.Route
	wl *wayland.Route
	pt *portal.Route
	ib *ibusBackend // its preedit's session
}

func newRoutes(o Options) *routes {
	return &routes{x: x11.NewRoute(o), wl: wayland.NewRoute(o), pt: portal.New(o), ib: newIBus(o)}
}

// backend returns the backend called name, on rs.
func (rs *routes) backend(name string, opts Options) (Injector, error) {
	switch name {
	case X11:
		return rs.x.X11(), nil
	case Xdotool:
		return rs.x.Xdotool(), nil
	case Wayland:
		return rs.wl.Wayland(), nil
	case Portal:
		return rs.pt, nil
	case Wtype:
		return wayland.NewWtype(opts), nil
	case Ydotool:
		return &ydotool{o: opts}, nil
	case Clipboard:
		return newClipboard(opts, rs), nil
	case Stdout:
		return &stdoutInjector{w: opts.Stdout}, nil
	case IBus:
		return rs.ib, nil
	}
	return nil, fmt.Errorf("new %q: %w", name, ErrUnknownBackend)
}

// close puts back what rs holds; keepKeys leaves the X11 spare keycodes
// bound.
func (rs *routes) close(keepKeys bool) {
	rs.ib.Close()
	rs.pt.Close()
	rs.wl.Close()
	if !keepKeys {
		rs.x.Close()
	}
}

// Backend is one backend with routes of its own: Close puts back what
// they hold, as [Typer.Close] does.
type Backend interface {
	Injector
	Close()
}

// New returns the backend called name (one of Backends), on routes of its
// own: a Typer's backends share theirs (see [Open]).
func New(name string, opts Options) (Backend, error) {
	opts = opts.WithDefaults()
	rs := newRoutes(opts)
	inj, err := rs.backend(name, opts)
	if err != nil {
		return nil, err
	}
	return &single{Injector: inj, rs: rs}, nil
}

// single is a backend and its routes.
type single struct {
	Injector
	rs *routes
}

func (s *single) Close() { s.rs.close(false) }

// Pauses is the backend's, when it is a [backend.Pauser].
func (s *single) Pauses(ctx context.Context, text untrusted.TypedText) bool {
	p, ok := s.Injector.(backend.Pauser)
	return ok && p.Pauses(ctx, text)
}

// Choice is what "auto" chose for a session: the backends, tried in
// order, and why the first one.
type Choice struct {
	Names []string
	Why   string
}

// probes are what "auto" asks the session; tests replace them.
type probes struct {
	virtualKeyboard func(wl *wayland.Route, ctx context.Context) (offers, known bool)
	remoteDesktop   func(ctx context.Context, env []string) (offers, known bool)
	ibus            func(ctx context.Context, env []string) bool
	ydotoold        func(env []string) bool
}

var probe = probes{
	virtualKeyboard: (*wayland.Route).Offers,
	remoteDesktop:   portal.Offers,
	ibus:            ibusRunning,
	ydotoold:        ydotooldRunning,
}

// Choose is "auto"'s choice, in this order: an X11 session (DISPLAY, no
// WAYLAND_DISPLAY): x11 (XTEST in-process), the clipboard. A Wayland
// session whose compositor offers the virtual keyboard (wlroots: sway,
// Hyprland, river, labwc, Wayfire), or cannot be asked yet: wayland
// (in-process), ydotool when ydotoold runs, the clipboard. One without it:
// on GNOME (XDG_CURRENT_DESKTOP) where IBus answers, ibus; else (KDE Plasma
// too) when the session bus has a RemoteDesktop portal with a keyboard:
// portal, then ydotool when ydotoold runs. Else ydotool when
// ydotoold runs. Else nothing can type: ErrUnavailable, saying what to
// install or allow. xdotool and wtype speak the protocols of x11 and
// wayland without their bounds, their proof of the focus or their
// exactness: they are backends a person names, never auto's. Choose holds
// nothing after it returns ([Open] keeps the Wayland client it dials).
func Choose(ctx context.Context, opts Options) (Choice, error) {
	rs := newRoutes(opts)
	defer rs.close(false)
	return rs.choose(ctx, opts)
}

// choose is Choose on rs: the Wayland client that asked the compositor
// stays in rs.wl, ready for the first text.
func (rs *routes) choose(ctx context.Context, opts Options) (Choice, error) {
	env := opts.Environ
	ydotool := probe.ydotoold(env)
	withYdotool := func(names ...string) []string {
		if ydotool {
			return append(names, Ydotool)
		}
		return names
	}
	switch {
	case backend.Getenv(env, "WAYLAND_DISPLAY") != "":
		offers, known := probe.virtualKeyboard(rs.wl, ctx)
		switch {
		case offers:
			return Choice{append(withYdotool(Wayland), Clipboard),
				"the compositor offers the virtual keyboard (zwp_virtual_keyboard_v1): typed in-process"}, nil
		case !known:
			return Choice{append(withYdotool(Wayland), Clipboard),
				"the compositor could not be asked yet: the virtual keyboard first"}, nil
		}
		if gnome(env) && probe.ibus(ctx, env) {
			// No dialog, no keymap, any character: before the portal,
			// which is not opened (its consent dialog would come at
			// start for nothing). On GNOME only, where the shell is
			// IBus's input method: elsewhere (KWin's "IBus Wayland")
			// IBus's own Wayland input method is between the engine and
			// the field, which neither passes a password field's
			// purpose on nor survives engines changing in quick
			// succession (see package ibus): a person names it there.
			return Choice{withYdotool(IBus),
				"GNOME, whose compositor has no virtual keyboard: IBus, the desktop's input method, runs: one commit per text, no dialog"}, nil
		}
		if rd, _ := probe.remoteDesktop(ctx, env); rd {
			return Choice{withYdotool(Portal),
				"the compositor has no virtual keyboard (GNOME, KDE Plasma): the RemoteDesktop portal offers a keyboard"}, nil
		}
		if ydotool {
			return Choice{[]string{Ydotool},
				"the compositor has no virtual keyboard and no RemoteDesktop portal offers a keyboard: ydotoold runs"}, nil
		}
		hint := ""
		if probe.ibus(ctx, env) {
			hint = "; IBus runs here: --backend ibus (dictation.inject = \"ibus\") types through it, but outside GNOME it cannot tell a password field"
		}
		return Choice{}, fmt.Errorf("nothing can type on this desktop: the compositor offers no virtual keyboard, "+
			"no RemoteDesktop portal offers a keyboard (install xdg-desktop-portal with the desktop's backend, "+
			"xdg-desktop-portal-gnome or xdg-desktop-portal-kde, and allow its dialog), and ydotoold does not run "+
			"(ydotool, with access to /dev/uinput)%s: %w", hint, ErrUnavailable)
	case backend.Getenv(env, "DISPLAY") != "":
		return Choice{[]string{X11, Clipboard}, "an X11 session (DISPLAY): typed in-process over XTEST"}, nil
	}
	return Choice{}, fmt.Errorf("no WAYLAND_DISPLAY or DISPLAY: %w", ErrUnavailable)
}

// gnome says whether the session's desktop is GNOME (XDG_CURRENT_DESKTOP,
// a colon-separated list: "GNOME", "ubuntu:GNOME").
func gnome(env []string) bool {
	for d := range strings.SplitSeq(backend.Getenv(env, "XDG_CURRENT_DESKTOP"), ":") {
		if strings.EqualFold(d, "GNOME") {
			return true
		}
	}
	return false
}

// Typer types with one backend, or with "auto"'s list of them.
type Typer struct {
	list []Injector
	log  *slog.Logger
	// paste is the clipboard, for texts longer than pasteOver characters
	// (nil: never).
	paste     Injector
	pasteOver int
	// why the first backend.
	why string
	// rs is what the backends hold (nil: nothing, a Typer made in a
	// test from backends of their own).
	rs *routes
}

// Status is what a Typer says of itself, for `yazsesd status`.
type Status struct {
	Route string // the first backend
	Why   string // why it was chosen
	// Consent, for the portal route: whether the desktop keeps the
	// person's consent, in words; Session its session's state.
	Consent string
	Session string
	Cause   string
}

// Status says the route, why, and for the portal its consent.
func (t *Typer) Status() Status {
	var st Status
	if len(t.list) > 0 {
		st.Route = t.list[0].Name()
	}
	st.Why = t.why
	if slices.Contains(t.Backends(), Portal) {
		ps := t.rs.pt.State()
		st.Consent, st.Session, st.Cause = ps.Consent, ps.Session, ps.Cause
	}
	return st
}

// Open returns a Typer for name: "auto" or one of Backends. "auto" in a
// session where nothing can type is ErrUnavailable (see [Choose]). A
// Typer with the portal starts its session now (portal.Route.Prepare):
// the desktop's consent dialog comes at the daemon's start. What the
// Typer's backends hold stays until [Typer.Close].
func Open(name string, opts Options) (*Typer, error) {
	opts = opts.WithDefaults()
	rs := newRoutes(opts)
	names := []string{name}
	why := "named in dictation.inject"
	if name == Auto {
		c, err := rs.choose(context.Background(), opts)
		if err != nil {
			rs.close(false)
			return nil, fmt.Errorf("open auto: %w", err)
		}
		names, why = c.Names, c.Why
	}
	t := &Typer{log: opts.Log, why: why, rs: rs}
	if opts.PasteOverChars > 0 && name != Clipboard && name != Stdout && name != Portal && names[0] != Portal {
		t.paste, t.pasteOver = newClipboard(opts, rs), opts.PasteOverChars
	}
	for _, n := range names {
		inj, err := rs.backend(n, opts)
		if err != nil {
			rs.close(false)
			return nil, fmt.Errorf("open: %w", err)
		}
		t.list = append(t.list, inj)
	}
	if slices.Contains(names, Portal) {
		rs.pt.Prepare()
	}
	return t, nil
}

// Settle waits, where the Typer types through the portal, until the
// portal's session has started or cannot (the consent dialog answered,
// either way), or until ctx ends: for a program that types one text and
// ends. Other routes need no wait.
func (t *Typer) Settle(ctx context.Context) {
	if t.rs != nil && slices.Contains(t.Backends(), Portal) {
		st := t.rs.pt.Settle(ctx)
		t.log.Debug("portal session settled", "state", st.Session, "cause", st.Cause)
	}
}

// Backends returns the names the Typer tries, in order.
func (t *Typer) Backends() []string {
	var names []string
	for _, inj := range t.list {
		names = append(names, inj.Name())
	}
	return names
}

// Type types text with the first backend that works and returns its name
// (the last one tried when all fail). A text longer than
// Options.PasteOverChars is pasted first (see there). ErrNoTarget,
// ErrInterrupted, ErrPasted (the portal pasted it: whether it arrived
// cannot be seen) and a cancelled context end the attempt at once: another
// backend would find no target either, or type again what may already be
// in the window. Any other failure moves on to the next backend. A tool that
// fails half-way through typing (a rare crash of xdotool, wtype or
// ydotool) can leave part of the text typed before the next one types it
// all; the in-process X11 backend reports ErrInterrupted instead.
func (t *Typer) Type(ctx context.Context, text string) (used string, err error) {
	// Cleaned here, once, for every backend: they take only a TypedText.
	typed := untrusted.Typed(text)
	var errs []error
	list := t.list
	// A text bound to a window (typewire.Target) goes only by the route
	// that checks the window (x11): never pasted, never by a tool that
	// types into whatever has the focus.
	tg := typewire.TargetOf(ctx)
	bound := tg != nil && tg.Want != ""
	if bound {
		list = slices.DeleteFunc(slices.Clone(list), func(i Injector) bool { return i.Name() != X11 })
		if len(list) == 0 {
			return "", fmt.Errorf("a text bound to a window, and no route that checks it: %w", ErrUnavailable)
		}
	}
	if t.paste != nil && !bound && t.pasteFirst(ctx, typed) {
		// Pasted first, and not again: "auto"'s clipboard is the same.
		list = append([]Injector{t.paste}, slices.DeleteFunc(slices.Clone(list), func(i Injector) bool {
			return i.Name() == Clipboard
		})...)
	}
	for _, inj := range list {
		used = inj.Name()
		start := time.Now()
		err := inj.Type(ctx, typed)
		if err == nil {
			t.log.Debug("typed", "backend", used, "runes", utf8.RuneCountInString(typed.Text()), "took", time.Since(start))
			return used, nil
		}
		if errors.Is(err, ErrNoTarget) || errors.Is(err, ErrInterrupted) || errors.Is(err, ErrPasted) ||
			errors.Is(err, backend.ErrUnconfirmed) || errors.Is(err, backend.ErrRefused) || ctx.Err() != nil {
			return used, err
		}
		t.log.Debug("typing backend failed, trying the next", "backend", used, "err", err)
		errs = append(errs, err)
	}
	return used, errors.Join(errs...)
}

// Preedits reports whether the Typer's first backend shows tentative
// text (backend.Preediter: the IBus route).
func (t *Typer) Preedits() bool {
	if len(t.list) == 0 {
		return false
	}
	p, ok := t.list[0].(backend.Preediter)
	return ok && p.Preedits()
}

// Preedit shows text, cleaned as a text to type is, as the focused
// field's tentative text, replacing the one shown ("" takes it away),
// with the first backend, and returns its name; the next Type replaces
// the preedit with its text. A Typer whose first backend shows none
// returns ErrNoPreedit.
func (t *Typer) Preedit(ctx context.Context, text string) (used string, err error) {
	if len(t.list) == 0 {
		return "", ErrNoPreedit
	}
	used = t.list[0].Name()
	p, ok := t.list[0].(backend.Preediter)
	if !ok || !p.Preedits() {
		return used, ErrNoPreedit
	}
	return used, p.Preedit(ctx, untrusted.Typed(text))
}

// pasteFirst reports whether text is pasted before it is typed: it is
// longer than Options.PasteOverChars, or the first backend cannot type
// it.
func (t *Typer) pasteFirst(ctx context.Context, text untrusted.TypedText) bool {
	if utf8.RuneCountInString(text.Text()) > t.pasteOver {
		return true
	}
	p, ok := t.list[0].(backend.Pauser)
	return ok && p.Pauses(ctx, text)
}

// stdoutInjector writes the text and a newline.
type stdoutInjector struct{ w io.Writer }

func (s *stdoutInjector) Name() string                         { return Stdout }
func (s *stdoutInjector) Focus(context.Context) (Focus, error) { return FocusWindow, nil }
func (s *stdoutInjector) Type(ctx context.Context, typed untrusted.TypedText) error {
	text := typed.Text()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("stdout: %w", err)
	}
	if _, err := io.WriteString(s.w, text+"\n"); err != nil {
		return fmt.Errorf("stdout: write: %w", err)
	}
	return nil
}

// Close puts back what the Typer's in-process backends hold between
// texts: the spare keycodes the x11 backend bound (waiting at most a few
// seconds for the display; see package x11), the wayland backend's
// connection, whose virtual keyboard goes with it, and the portal's
// session (closed, so the desktop stops showing it). A program that typed
// calls Close (or CloseKeepingKeys) before it exits. A Typer can type
// again after; it holds them anew. A nil Typer holds nothing.
func (t *Typer) Close() {
	if t != nil && t.rs != nil {
		t.rs.close(false)
	}
}

// CloseKeepingKeys is Close without giving the X11 spare keycodes back:
// for a program that ends right after its text (yaz-type in a pipeline).
// A window looks a key up when it reads it, which can be after the typer
// has ended; freed keycodes would then type nothing. The bindings are
// recorded on the display, and the next text (of any process) reuses them.
func (t *Typer) CloseKeepingKeys() {
	if t != nil && t.rs != nil {
		t.rs.close(true)
	}
}
