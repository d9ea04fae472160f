package inject

import (
	"context"
	"fmt"
	"strings"

	"github.com/yazses/yazses/cmd/yazsesd/internal/inject/backend"
	"github.com/yazses/yazses/cmd/yazsesd/internal/inject/tool"
	"github.com/yazses/yazses/cmd/yazsesd/internal/inject/wayland"
	"github.com/yazses/yazses/cmd/yazsesd/internal/inject/x11"
	"github.com/yazses/yazses/lib/untrusted"
)

// sessionFocus is the focus probe of a backend that works in any session
// (ydotool): Wayland first (sway's tree, as wtype asks), then X11 (xprop,
// as xdotool asks).
func sessionFocus(ctx context.Context, o Options) (Focus, error) {
	switch {
	case backend.Getenv(o.Environ, "WAYLAND_DISPLAY") != "":
		return wayland.NewWtype(o).Focus(ctx)
	case backend.Getenv(o.Environ, "DISPLAY") != "":
		f, err := x11.NewXdotool(o).Focus(ctx)
		if err != nil {
			return FocusUnknown, nil // ydotool does not need X to type
		}
		return f, nil
	}
	return FocusUnknown, nil
}

// ydotool is the uinput backend (needs ydotoold and access to /dev/uinput).
type ydotool struct{ o backend.Options }

func (y *ydotool) Name() string { return backend.Ydotool }

func (y *ydotool) Focus(ctx context.Context) (backend.Focus, error) {
	return sessionFocus(ctx, y.o)
}

// ydotoolArgs: the text comes on stdin, read as a file.
var ydotoolArgs = []string{"type", "--file", "/dev/stdin"}

func (y *ydotool) Type(ctx context.Context, text string) error {
	text = untrusted.Typed(text)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if err := backend.Gate(ctx, y, y.o.RequireFocus, y.o.Log); err != nil {
		return err
	}
	c := tool.Call{Env: y.o.Environ, Secret: text, Stdin: []byte(text)}
	if _, err := c.Run(ctx, "ydotool", ydotoolArgs...); err != nil {
		return fmt.Errorf("ydotool: %w", err)
	}
	return nil
}
