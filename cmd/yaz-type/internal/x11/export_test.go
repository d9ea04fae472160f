package x11

import (
	"context"

	"github.com/jezek/xgb/xproto"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/tool"
	"github.com/yazses/yazses/cmd/yaz-type/internal/xconn"
	"github.com/yazses/yazses/cmd/yaz-type/internal/xdotool"
)

// What the tests outside the package (package x11_test, which drive the
// backends through package inject) look at inside it.

// ErrWindowChanged is the cause inside the x11 backend's ErrInterrupted
// when the window closed or lost the focus.
var ErrWindowChanged = errWindowChanged

// XIOTimeout bounds every exchange with the X server.
const XIOTimeout = xconn.IOTimeout

// Target is a focused window: the focus and its WM_CLASS.
type Target struct {
	Focus backend.Focus
	Class []string
}

// XpropFocus is the focus as xprop tells it (xdotool's and ydotool's).
func XpropFocus(ctx context.Context, env []string) (Target, error) {
	t, err := xdotool.Focus(ctx, tool.Call{Env: env})
	return Target{t.Focus, t.Class}, err
}

// ProtocolFocus is the focus as the x11 backend reads it itself.
func ProtocolFocus(ctx context.Context, env []string) (Target, error) {
	x, err := dialX(ctx, env)
	if err != nil {
		return Target{}, err
	}
	defer x.Close()
	t, err := x.Focus(false)
	return Target{t.Focus, t.Class}, err
}

// IsDown reports whether keycode kc is down in a QueryKeymap reply.
func IsDown(keys []byte, kc byte) bool { return isDown(keys, xproto.Keycode(kc)) }

// KeysymFor is the keysym the x11 backend binds for r.
func KeysymFor(r rune) uint32 { return uint32(keysymFor(r)) }
