package wayland

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/tool"
	"github.com/yazses/yazses/lib/untrusted"
)

// swayTarget is the focused sway node.
type swayTarget struct {
	focus backend.Focus
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
// set) from its tree, elsewhere backend.FocusUnknown.
func waylandFocus(ctx context.Context, c tool.Call) (swayTarget, error) {
	if backend.Getenv(c.Env, "WAYLAND_DISPLAY") == "" {
		return swayTarget{}, fmt.Errorf("no WAYLAND_DISPLAY: %w", backend.ErrUnavailable)
	}
	if backend.Getenv(c.Env, "SWAYSOCK") == "" {
		return swayTarget{focus: backend.FocusUnknown}, nil
	}
	out, err := c.Run(ctx, "swaymsg", "-r", "-t", "get_tree")
	if err != nil {
		// sway's socket is named but does not answer: do not guess.
		return swayTarget{focus: backend.FocusUnknown}, nil
	}
	return focusFromTree(out), nil
}

// focusFromTree reads the focused node from sway's tree (get_tree's JSON).
func focusFromTree(out []byte) swayTarget {
	var root swayNode
	if err := json.Unmarshal(out, &root); err != nil {
		return swayTarget{focus: backend.FocusUnknown}
	}
	n := findFocused(&root)
	if n == nil || (n.Type != "con" && n.Type != "floating_con") {
		// A workspace, an output or nothing is focused.
		return swayTarget{focus: backend.FocusNone}
	}
	t := swayTarget{focus: backend.FocusWindow}
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

// wtype is the Wayland virtual-keyboard backend that runs wtype.
type wtype struct{ o backend.Options }

// NewWtype returns the "wtype" backend.
func NewWtype(o backend.Options) backend.Injector { return &wtype{o: o.WithDefaults()} }

func (w *wtype) Name() string { return backend.Wtype }

func (w *wtype) Focus(ctx context.Context) (backend.Focus, error) {
	t, err := waylandFocus(ctx, tool.Call{Env: w.o.Environ})
	return t.focus, err
}

func (w *wtype) Type(ctx context.Context, typed untrusted.TypedText) error {
	text := typed.Text()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if err := backend.CheckFocus(ctx, w, w.o.RequireFocus, w.o.Log); err != nil {
		return err
	}
	c := tool.Call{Env: w.o.Environ, Secret: text, Stdin: []byte(text)}
	if _, err := c.Run(ctx, "wtype", wtypeArgs(w.o.WtypeDelay, "-")...); err != nil {
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
