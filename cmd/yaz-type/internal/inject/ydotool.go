package inject

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/tool"
	"github.com/yazses/yazses/cmd/yaz-type/internal/wayland"
	"github.com/yazses/yazses/cmd/yaz-type/internal/x11"
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
		f, err := x11.NewRoute(o).Xdotool().Focus(ctx) // a route that holds nothing
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

func (y *ydotool) Type(ctx context.Context, typed untrusted.TypedText) error {
	text := typed.Text()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if err := backend.CheckFocus(ctx, y, y.o.RequireFocus, y.o.Log); err != nil {
		return err
	}
	c := tool.Call{Env: y.o.Environ, Secret: text, Stdin: []byte(text)}
	if _, err := c.Run(ctx, "ydotool", ydotoolArgs...); err != nil {
		return fmt.Errorf("ydotool: %w", err)
	}
	return nil
}

// ydotooldRunning reports whether ydotoold runs: its socket
// ($YDOTOOL_SOCKET, else $XDG_RUNTIME_DIR/.ydotool_socket as ydotool 1.0
// makes it, else /tmp/.ydotool_socket as older ones did) takes a
// datagram. A socket file whose daemon is gone refuses the connection.
func ydotooldRunning(env []string) bool {
	var paths []string
	if p := backend.Getenv(env, "YDOTOOL_SOCKET"); p != "" {
		paths = append(paths, p)
	} else {
		if rt := backend.Getenv(env, "XDG_RUNTIME_DIR"); rt != "" {
			paths = append(paths, filepath.Join(rt, ".ydotool_socket"))
		}
		paths = append(paths, "/tmp/.ydotool_socket")
	}
	for _, p := range paths {
		c, err := net.Dial("unixgram", p)
		if err == nil {
			c.Close()
			return true
		}
	}
	return false
}
