// Package wayland is the typing backends of a Wayland session: "wayland"
// (a Wayland client of its own in pure Go with one virtual keyboard,
// zwp_virtual_keyboard_v1: [New]), "wtype" ([NewWtype]) and the Wayland
// "clipboard" (in-process through wlr data control where the compositor
// offers it, else wl-copy and wtype's chord: [NewClipboard]); [Offers],
// which tells "auto" whether the compositor has the virtual keyboard, and
// [Settle], which closes the connections kept between texts. Package
// inject describes what each one does and picks among them.
package wayland
