// Package sway is where keys go under sway, as sway tells it: the
// focused node of its tree (get_tree), read with swaymsg (the view of
// wtype, the Wayland clipboard and ydotool: [Focus]) or over sway's IPC
// socket in-process (the "wayland" backend's: [Tree] and [FromTree]).
package sway

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/tool"
)

// ioTimeout bounds the exchange with sway's socket.
const ioTimeout = 5 * time.Second

// Target is the focused sway node.
type Target struct {
	Focus backend.Focus
	AppID string // Wayland app_id, or the X11 class of an Xwayland window
}

// node is the part of `swaymsg -t get_tree` that matters here.
type node struct {
	Type             string  `json:"type"`
	Focused          bool    `json:"focused"`
	AppID            *string `json:"app_id"`
	Nodes            []node  `json:"nodes"`
	FloatingNodes    []node  `json:"floating_nodes"`
	WindowProperties *struct {
		Class string `json:"class"`
	} `json:"window_properties"`
}

// Focus tells where keys go in a Wayland session, as swaymsg tells it:
// under sway (SWAYSOCK set) from its tree, elsewhere
// backend.FocusUnknown.
func Focus(ctx context.Context, c tool.Call) (Target, error) {
	if backend.Getenv(c.Env, "WAYLAND_DISPLAY") == "" {
		return Target{}, fmt.Errorf("no WAYLAND_DISPLAY: %w", backend.ErrUnavailable)
	}
	if backend.Getenv(c.Env, "SWAYSOCK") == "" {
		return Target{Focus: backend.FocusUnknown}, nil
	}
	out, err := c.Run(ctx, "swaymsg", "-r", "-t", "get_tree")
	if err != nil {
		// sway's socket is named but does not answer: do not guess.
		return Target{Focus: backend.FocusUnknown}, nil
	}
	return FromTree(out), nil
}

// FromTree reads the focused node from sway's tree (get_tree's JSON).
func FromTree(out []byte) Target {
	var root node
	if err := json.Unmarshal(out, &root); err != nil {
		return Target{Focus: backend.FocusUnknown}
	}
	n := findFocused(&root)
	if n == nil || (n.Type != "con" && n.Type != "floating_con") {
		// A workspace, an output or nothing is focused.
		return Target{Focus: backend.FocusNone}
	}
	t := Target{Focus: backend.FocusWindow}
	switch {
	case n.AppID != nil && *n.AppID != "":
		t.AppID = *n.AppID
	case n.WindowProperties != nil:
		t.AppID = n.WindowProperties.Class
	}
	return t
}

func findFocused(n *node) *node {
	if n.Focused {
		return n
	}
	for _, list := range [][]node{n.Nodes, n.FloatingNodes} {
		for i := range list {
			if f := findFocused(&list[i]); f != nil {
				return f
			}
		}
	}
	return nil
}

// Tree asks sway for its tree over its IPC socket (what `swaymsg -t
// get_tree` prints), in-process: "i3-ipc", the payload's length and the
// message type (4, GET_TREE) in native byte order, then the payload.
func Tree(ctx context.Context, sock string) ([]byte, error) {
	const getTree = 4
	dctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	nc, err := (&net.Dialer{}).DialContext(dctx, "unix", sock)
	if err != nil {
		return nil, fmt.Errorf("sway ipc: %w", err)
	}
	defer nc.Close()
	deadline := time.Now().Add(ioTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = nc.SetDeadline(deadline)
	req := append([]byte("i3-ipc"), make([]byte, 8)...)
	binary.NativeEndian.PutUint32(req[10:], getTree)
	if _, err := nc.Write(req); err != nil {
		return nil, fmt.Errorf("sway ipc: %w", err)
	}
	hdr := make([]byte, 14)
	if _, err := io.ReadFull(nc, hdr); err != nil {
		return nil, fmt.Errorf("sway ipc: %w", err)
	}
	if string(hdr[:6]) != "i3-ipc" || binary.NativeEndian.Uint32(hdr[10:]) != getTree {
		return nil, errors.New("sway ipc: unexpected reply")
	}
	n := binary.NativeEndian.Uint32(hdr[6:])
	if n > 64<<20 {
		return nil, errors.New("sway ipc: reply too long")
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(nc, body); err != nil {
		return nil, fmt.Errorf("sway ipc: %w", err)
	}
	return body, nil
}
