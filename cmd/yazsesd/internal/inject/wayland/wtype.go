package inject

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/yazses/yazses/lib/untrusted"
)

// swayTarget is the focused sway node.
type swayTarget struct {
	focus Focus
	appID string // Wayland app_id, or the X11 class of an Xwayland window
}

// swayNode is the part of `swaymsg -t get_tree` that matters here.
type swayNode struct {
	Type             string     `json:"type"`
	Focused          bool       `json:"focused"`
	AppID            *string    `json:"app_id"`
	Nodes            []swayNode `json:"nodes"`
	FloatingNodes    []swayNode `json:"floating_nodes"`
	WindowProperties *struct {
		Class string `json:"class"`
	} `json:"window_properties"`
}

// waylandFocus tells where keys go in a Wayland session: under sway (SWAYSOCK
// set) from its tree, elsewhere FocusUnknown.
func waylandFocus(ctx context.Context, c call) (swayTarget, error) {
	o := Options{Environ: c.env}
	if o.getenv("WAYLAND_DISPLAY") == "" {
		return swayTarget{}, fmt.Errorf("no WAYLAND_DISPLAY: %w", ErrUnavailable)
	}
	if o.getenv("SWAYSOCK") == "" {
		return swayTarget{focus: FocusUnknown}, nil
	}
	out, err := c.run(ctx, "swaymsg", "-r", "-t", "get_tree")
	if err != nil {
		// sway's socket is named but does not answer: do not guess.
		return swayTarget{focus: FocusUnknown}, nil
	}
	return focusFromTree(out), nil
}

// focusFromTree reads the focused node from sway's tree (get_tree's JSON).
func focusFromTree(out []byte) swayTarget {
	var root swayNode
	if err := json.Unmarshal(out, &root); err != nil {
		return swayTarget{focus: FocusUnknown}
	}
	n := findFocused(&root)
	if n == nil || (n.Type != "con" && n.Type != "floating_con") {
		// A workspace, an output or nothing is focused.
		return swayTarget{focus: FocusNone}
	}
	t := swayTarget{focus: FocusWindow}
	switch {
	case n.AppID != nil && *n.AppID != "":
		t.appID = *n.AppID
	case n.WindowProperties != nil:
		t.appID = n.WindowProperties.Class
	}
	return t
}

func findFocused(n *swayNode) *swayNode {
	if n.Focused {
		return n
	}
	for _, list := range [][]swayNode{n.Nodes, n.FloatingNodes} {
		for i := range list {
			if f := findFocused(&list[i]); f != nil {
				return f
			}
		}
	}
	return nil
}

// sessionFocus is the focus probe of a backend that works in any session
// (ydotool): Wayland first, then X11.
func sessionFocus(ctx context.Context, c call) (Focus, error) {
	o := Options{Environ: c.env}
	switch {
	case o.getenv("WAYLAND_DISPLAY") != "":
		t, err := waylandFocus(ctx, c)
		return t.focus, err
	case o.getenv("DISPLAY") != "":
		t, err := x11Focus(ctx, c)
		if err != nil {
			return FocusUnknown, nil // ydotool does not need X to type
		}
		return t.focus, nil
	}
	return FocusUnknown, nil
}

// wtype is the Wayland virtual-keyboard backend.
type wtype struct{ o Options }

func (w *wtype) Name() string { return Wtype }

func (w *wtype) Focus(ctx context.Context) (Focus, error) {
	t, err := waylandFocus(ctx, call{env: w.o.Environ})
	return t.focus, err
}

func (w *wtype) Type(ctx context.Context, text string) error {
	text = untrusted.Typed(text)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if err := gate(ctx, w, w.o.RequireFocus, w.o.Log); err != nil {
		return err
	}
	c := call{env: w.o.Environ, secret: text, stdin: []byte(text)}
	if _, err := c.run(ctx, "wtype", wtypeArgs(w.o.WtypeDelay, "-")...); err != nil {
		return fmt.Errorf("wtype: %w", err)
	}
	return nil
}

// wtypeArgs puts the start delay (-s) before the other arguments.
func wtypeArgs(delay time.Duration, args ...string) []string {
	if delay <= 0 {
		return args
	}
	return append([]string{"-s", strconv.FormatInt(delay.Milliseconds(), 10)}, args...)
}

// ydotool is the uinput backend (needs ydotoold and access to /dev/uinput).
type ydotool struct{ o Options }

func (y *ydotool) Name() string { return Ydotool }

func (y *ydotool) Focus(ctx context.Context) (Focus, error) {
	return sessionFocus(ctx, call{env: y.o.Environ})
}

// ydotoolArgs: the text comes on stdin, read as a file.
var ydotoolArgs = []string{"type", "--file", "/dev/stdin"}

func (y *ydotool) Type(ctx context.Context, text string) error {
	text = untrusted.Typed(text)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if err := gate(ctx, y, y.o.RequireFocus, y.o.Log); err != nil {
		return err
	}
	c := call{env: y.o.Environ, secret: text, stdin: []byte(text)}
	if _, err := c.run(ctx, "ydotool", ydotoolArgs...); err != nil {
		return fmt.Errorf("ydotool: %w", err)
	}
	return nil
}
