package x11_test

import (
	"github.com/yazses/yazses/cmd/yaz-type/internal/inject"
)

// The tests here drive the x11, xdotool and clipboard backends through
// package inject, as the daemon does (New, and Open for "auto"); these
// names keep them as they were written.
type (
	Options  = inject.Options
	Focus    = inject.Focus
	Injector = inject.Injector
)

const (
	X11          = inject.X11
	Xdotool      = inject.Xdotool
	Clipboard    = inject.Clipboard
	Auto         = inject.Auto
	FocusUnknown = inject.FocusUnknown
	FocusWindow  = inject.FocusWindow
	FocusNone    = inject.FocusNone
)

var (
	New            = inject.New
	Open           = inject.Open
	ErrNoTarget    = inject.ErrNoTarget
	ErrUnavailable = inject.ErrUnavailable
	ErrInterrupted = inject.ErrInterrupted
)
