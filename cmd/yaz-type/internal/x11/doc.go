// Package x11 is the typing backends of an X11 session, made by one
// [Route] that they share: "x11" (an X11 client of its own in pure Go
// with XTEST, on a connection of package xconn: [Route.X11]), "xdotool"
// (package xdotool: [Route.Xdotool]) and the X11 "clipboard" (the paste
// served in-process, the selections put back with xclip or xsel:
// [Route.Clipboard]); [Route.Close] gives the spare keycodes that "x11"
// keeps bound between texts their empty rows back. Package inject
// describes what each one does and picks among them; the x11 backend's
// spare keycodes are shared, so one text at a time is typed on a
// display, whichever backend types it.
package x11
