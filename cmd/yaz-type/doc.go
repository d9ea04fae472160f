// Command yaz-type types text into the focused window, exactly, on X11,
// on wlroots Wayland compositors, on GNOME and KDE through the desktop's
// RemoteDesktop portal, and anywhere ydotoold runs.
//
// # Synopsis
//
//	yaz-type [flags] TEXT...
//	yaz-type [flags] < lines.txt
//	yaz-type --route [-b ROUTE]
//	yaz-type --serve [flags]
//
// # Description
//
// With TEXT arguments, yaz-type joins them with spaces and types them into
// the window that has the keyboard focus. Without arguments it reads stdin
// and types each line as it arrives, with a space between lines, until
// EOF; with no arguments and stdin a terminal it refuses to run (exit 2).
// It never types Enter or any other control key: line breaks and tabs
// become a space, and every other control character is dropped. Every
// other character, all of Unicode, arrives as it was.
//
// The route is chosen from the session (--backend auto, the default): on
// X11 an in-process client over XTEST (x11), then the clipboard; on a
// wlroots compositor (sway, Hyprland, river, labwc, Wayfire) an
// in-process virtual keyboard (wayland), then ydotool where ydotoold runs,
// then the clipboard; on GNOME and KDE Plasma IBus where it runs (ibus:
// one commit per text, no dialog, any character, a password field
// refused; GNOME starts IBus itself), else the RemoteDesktop portal
// (portal; the desktop asks the person once), then ydotool. --route
// prints the route and why. wtype and xdotool are not in auto's list (the
// in-process routes speak the same protocols, bounded and exact); name
// them with --backend where only they work.
//
// On X11 a character the keyboard map lacks is bound to a spare keycode
// (one with no keysyms) for the text; the bindings stay after yaz-type
// ends, because a window looks each key up when it reads it, which can
// be after yaz-type has exited. The next text, of yaz-type or yazsesd,
// reuses them.
//
// A text longer than --paste-over-chars is pasted through the clipboard,
// and the clipboard is put back after.
//
// The portal route starts with the desktop's consent dialog (none where
// the desktop restores the consent it kept): yaz-type waits up to two
// minutes for the person's answer before its first text; refused, it
// exits 7 and says so. Characters the keyboard layout lacks (another
// script, an emoji, an AltGr character) go through the portal's own
// clipboard and Ctrl+V (exit 3); the clipboard gets back the text it
// held where the desktop said what it held, else it keeps the pasted
// text.
//
// Typing stops, and nothing goes elsewhere, when the focus moves to
// another window (x11 proves the focus with the server held before each
// batch of keys), the window goes away or the display server dies; a
// display server that stops answering ends the text after a bound of 10 s
// and 2 ms a character.
//
// With --serve, yaz-type is the typing child of yazsesd: its readiness
// line names the route and why, it reads requests as JSON lines on stdin
// and answers each with one outcome on stdout (typed, pasted, partial with
// the count that arrived, no_target, refused, failed with a cause), never
// the text.
//
// # Exit status
//
// 0 when every text was delivered as typed text. 1 when typing failed
// (the cause on stderr), 2 for a usage error, 3 when the text was pasted
// through the clipboard and whether the window took it cannot be seen, 4
// when no window had the keyboard focus (nothing was typed), 5 when typing
// stopped part-way (stderr says how many characters arrived; nothing went
// to another window), 6 when the focused field refused the text (a
// password field), 7 when no route can type in this session (stderr says
// the cause, unavailable or no_route, and what to install or allow: the
// portal's dialog refused, for one), 8 when the text was committed through the
// input method (--backend ibus) and the field did not show whether it
// took it. Reading stdin stops at the first text that
// was not typed.
//
// # Files
//
// The portal route keeps the desktop's restore token (the person's
// consent, where the desktop keeps it) in --state-dir, by default
// $XDG_STATE_HOME/yazses (0600). The X11 route records the spare keycodes
// it bound in the root window's _YAZSES_HELD_KEYCODES property, on the
// display; IBus is found through $IBUS_ADDRESS or its address file,
// $XDG_CONFIG_HOME/ibus/bus/<machine id>-<host>-<display>.
//
// # Examples
//
//	yaz-type 'Grüße aus Köln'
//	yaz-capture | yaz-decode | yaz-type
//	yaz-type --route
//
// # Privacy
//
// The text is never put on a command line, in an error or in a log line:
// messages carry counts and the names of routes and causes.
package main
