package wayland

import (
	"context"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yaz-type/internal/sway"
	"github.com/yazses/yazses/cmd/yaz-type/internal/tool"
)

// What the tests outside the package (package wayland_test, which drive
// the backends through package inject) look at inside it.

// Batch is how many characters go out between two round trips.
const Batch = wlBatch

// IOTimeout bounds every exchange with the compositor.
const IOTimeout = wlIOTimeout

// MixedOf is mixedOf (wlkeymap_test.go).
var MixedOf = mixedOf

// SetAfterBatch runs f after each batch of keys until the test ends.
func SetAfterBatch(t testing.TB, f func(sent int)) {
	wlAfterBatch = f
	t.Cleanup(func() { wlAfterBatch = nil })
}

// Target is the focused sway node: the focus and its app_id.
type Target = sway.Target

// SwayFocus is the focus as swaymsg tells it (wtype's, and ydotool's on
// Wayland).
func SwayFocus(ctx context.Context, env []string) (Target, error) {
	return sway.Focus(ctx, tool.Call{Env: env})
}

// SeatKeyboard gives the headless seat a keyboard of its own, as every
// desktop has: a client binds its wl_keyboard only once the seat has a
// keyboard, and keys sent before that are lost. Without it, the first
// keyboard of the seat would be the one under test (wtype's, or the
// wayland backend's), and each text's first keys would race the
// terminal's wl_seat.get_keyboard. It stays until the test ends.
func SeatKeyboard(t testing.TB, env []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := dialWl(ctx, env)
	if err != nil {
		t.Fatalf("the seat's keyboard: %v", err)
	}
	t.Cleanup(c.close)
	if err := c.bindKeyboard(ctx); err != nil {
		t.Fatalf("the seat's keyboard: %v", err)
	}
}

// SetSeatKeymap gives the seat a keyboard whose keymap is keymap (text
// format v1), as a desktop's layout settings do: a virtual keyboard that
// stays until the test ends.
func SetSeatKeymap(t testing.TB, env []string, keymap string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := dialWl(ctx, env)
	if err != nil {
		t.Fatalf("the seat's keyboard: %v", err)
	}
	t.Cleanup(c.close)
	if err := c.bindKeyboard(ctx); err != nil {
		t.Fatalf("the seat's keyboard: %v", err)
	}
	if err := c.setKeymap(ctx, keymap); err != nil {
		t.Fatalf("the seat's keymap: %v", err)
	}
}
