package wayland_test

import (
	"github.com/yazses/yazses/cmd/yaz-type/internal/inject"
)

// The tests here drive the wayland, wtype and clipboard backends (and ydotool) through
// package inject, as the daemon does (New, and Open for "auto"); these
// names keep them as they were written.
type (
	Options  = inject.Options
	Focus    = inject.Focus
	Injector = inject.Injector
)

const (
	Wayland      = inject.Wayland
	Wtype        = inject.Wtype
	Ydotool      = inject.Ydotool
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
