package wayland_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/wayland"
	"github.com/yazses/yazses/internal/testportal"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/internal/testwl"
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

// TestGnomeLikeCompositor: internal/testwl, the compositor the portal
// tests stand GNOME in with, looks like GNOME to this package: no
// virtual keyboard, and the seat's keymap is the one it was given.
func TestGnomeLikeCompositor(t *testing.T) {
	km := testportal.Keymap(t, "de")
	c := testwl.Start(t, km)
	r := wayland.NewRoute(backend.Options{Environ: c.Env})
	t.Cleanup(r.Close)
	if offers, known := r.Offers(context.Background()); offers || !known {
		t.Errorf("Offers = %v, %v; want false, true", offers, known)
	}
	got, err := wayland.SeatKeymap(testwait.Context(t), c.Env)
	if err != nil {
		t.Fatal(err)
	}
	if got != km {
		t.Errorf("SeatKeymap returned %d bytes, not the %d given", len(got), len(km))
	}
}
