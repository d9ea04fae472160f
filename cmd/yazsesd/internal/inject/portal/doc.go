// Package portal is the "portal" typing backend: keys typed through the
// XDG desktop portal's RemoteDesktop interface, the one way to type on
// GNOME and KDE Plasma without root or the input group (mutter and KWin
// offer no virtual-keyboard protocol). keymap.go reads the compositor's
// keymap to know which characters a keysym types there.
package portal
