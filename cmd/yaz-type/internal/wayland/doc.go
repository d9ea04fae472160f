// Package wayland is the typing backends of a Wayland session: "wayland"
// (a Wayland client of its own in pure Go with one virtual keyboard,
// zwp_virtual_keyboard_v1: [Route.Wayland]), "wtype" ([NewWtype]) and
// the Wayland "clipboard" (in-process through wlr data control where the
// compositor offers it, else wl-copy and wtype's chord:
// [Route.Clipboard]). The in-process ones share one [Route], which holds
// the connection kept between texts: [Route.Offers] tells "auto" whether
// the compositor has the virtual keyboard, [Route.Close] closes it. Package
// inject describes what each one does and picks among them.
package wayland
