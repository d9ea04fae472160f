package wayland_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/yazses/yazses/cmd/yazsesd/internal/inject/backend"
	"github.com/yazses/yazses/cmd/yazsesd/internal/inject/wayland"
	"github.com/yazses/yazses/internal/testportal"
	"github.com/yazses/yazses/internal/testwait"
)

// TestSeatKeymap reads the keymap a compositor hands its clients: under
// headless sway, the layout its keyboard was given (German, compiled by
// libxkbcommon), which has ß on <AE11> and no Greek.
func TestSeatKeymap(t *testing.T) {
	env := startSway(t)
	wayland.SetSeatKeymap(t, env, testportal.Keymap(t, "de"))
	km, err := wayland.SeatKeymap(testwait.Context(t), env)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"xkb_keycodes", "xkb_symbols", "ssharp", "<AE11>"} {
		if !strings.Contains(km, want) {
			t.Errorf("the seat's keymap has no %q:\n%.400s", want, km)
		}
	}
	if strings.Contains(km, "Greek_alpha") {
		t.Error("the seat's keymap has Greek_alpha: not the German layout")
	}
}

func TestSeatKeymapNoCompositor(t *testing.T) {
	env := []string{"XDG_RUNTIME_DIR=" + t.TempDir(), "WAYLAND_DISPLAY=wayland-none"}
	if _, err := wayland.SeatKeymap(context.Background(), env); !errors.Is(err, backend.ErrUnavailable) {
		t.Errorf("SeatKeymap without a compositor: %v, want ErrUnavailable", err)
	}
}
