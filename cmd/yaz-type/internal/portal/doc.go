// Package portal is the "portal" typing backend: keys typed through the
// XDG desktop portal's RemoteDesktop interface
// (org.freedesktop.portal.RemoteDesktop on the session bus, served by
// xdg-desktop-portal with the desktop's own backend), the one way to type
// on GNOME and KDE Plasma without root or the input group: mutter and
// KWin offer no virtual-keyboard protocol.
//
// # The session
//
// One RemoteDesktop session per [Route] (the one Typer of the process),
// kept from the daemon's start ([Route.Prepare]) to its end
// ([Route.Close]): CreateSession, SelectDevices (a
// keyboard), then Start, which shows the desktop's consent dialog, right
// after a notification (kind [NotifyConsent]) says why; the dialog comes
// while the person is setting up, not at the first dictation. Where the
// portal can keep consent (RemoteDesktop version 2, xdg-desktop-portal
// 1.17 and later) the route asks for persist_mode 2 (until revoked) and
// keeps the restore token Start returns in the daemon's state folder
// ([TokenFile], 0600, replaced at each start, as each token restores
// once); the next start sends it and the desktop starts the session
// without a dialog. Version 1 (xdg-desktop-portal 1.16, Debian 12) cannot:
// it asks at each start, and [Route.State] says so.
//
// A session that is not started types nothing: the text is not typed
// ([backend.ErrUnavailable], with the cause) and the daemon keeps it for
// `yazsesd ctl last`. A program that types one text and ends (yaz-type in
// a pipeline) waits for the answer first ([Route.Settle]). A refused dialog is not shown again until the
// daemon restarts. A session the desktop ends (the person stopped it in
// the desktop's indicator) is asked for again at the next dictation; one
// lost because the portal left the bus (a crash, a restart) is asked for
// again as soon as the portal is back, or at the next dictation (a call
// starts the portal where the bus can activate it).
//
// # The keys
//
// Each character goes as its keysym (NotifyKeyboardKeysym, a press and a
// release), and the backend presses a key of the compositor's keymap that
// has it. mutter drops a keysym the layout in use lacks, silently, so the
// route reads the keymap first (the one the compositor hands every
// client's wl_keyboard: [wayland.SeatKeymap]) and sends keysyms only when
// every character of the text is on the first or second level of every
// layout (package xkb). Otherwise the whole text is pasted, through the
// portal's own clipboard where the portal has one (org.freedesktop.portal
// .Clipboard, xdg-desktop-portal 1.17 and later; GNOME's backend serves
// it from mutter's clipboard, portalclip.go): RequestClipboard before
// Start (the dialog shows a switch for it, on at first), then at each
// paste SetSelection with the text types, the text written into the pipe
// of each SelectionTransfer (SelectionWrite, SelectionWriteDone), and
// Ctrl+V pressed through the session's keyboard. GNOME 50 offers no
// Wayland data control, so wl-copy is never used where the portal has a
// clipboard: a session given none (the switch turned off) leaves such a
// text to the next route. Where the portal has no clipboard (1.16,
// Debian 12) the text goes on the clipboard and the primary selection
// (wl-copy), what they held is put back after the paste, and
// Shift+Insert is pressed (GTK, Qt, VTE and Konsole windows, browsers
// and LibreOffice paste with it; terminals from the primary selection).
// Whether the window took a paste cannot be seen (the portal says that a
// transfer was served, and mutter's clipboard manager fetches one
// itself): the result is [backend.ErrPasted], never "typed". A keymap
// that cannot be read pastes too.
//
// Caps Lock: mutter presses a keysym's key as it is, with the lock as it
// is, so a locked Caps Lock would change every letter's case. The route
// reads the keyboards' Caps Lock LEDs (capslock.go), the compositor's
// lock as any client may see it, and when one is lit presses Caps_Lock
// before the keys and again after them; a keymap without Caps_Lock on a
// key's first level gets the text pasted.
//
// The keys go one call after the other, each answered before the next is
// sent: xdg-desktop-portal handles each call on a thread of a pool, and
// calls in flight together reach the desktop in any order. When every
// call has been answered, the portal has passed every key on, in order.
// Every call is bounded (5 s); a failure before the first key is
// ErrUnavailable, after it ErrInterrupted. That costs a round trip to the
// frontend per key press and per release: 0.7 ms each measured here (the
// bus alone 0.16 ms), 170–290 ms for 58 characters (BenchmarkPortalType,
// Debian's frontend and the test backend, 2 busy cores). A text longer
// than Options.PasteOverChars is pasted instead (the paste costs about
// RestoreDelay, 300 ms, whatever its length).
//
// # What is not here
//
// ConnectToEIS (libei through the portal, RemoteDesktop version 2) would
// type faster, with keycodes of a keymap of the route's own; neither this
// machine's portal (1.16) nor Debian 12 (no libei) has it, so it is not
// built untested.
package portal
