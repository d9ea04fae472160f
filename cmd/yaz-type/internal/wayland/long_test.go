package wayland_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yaz-type/internal/wayland"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/untrusted"
)

// A long text typed (not pasted) into a real terminal arrives whole, and
// the terminal stays up: before the keys were paced to what the focused
// client takes, foot was disconnected after 2,695 of 20,000 characters
// ("failed to flush wayland socket: Broken pipe"), and the rest went to the
// next window sway focused. Swept over lengths and scripts.
func TestWaylandLongTextArrivesWhole(t *testing.T) {
	for _, c := range []struct {
		name string
		text string
	}{
		{"ascii/20000", strings.Repeat("the quick brown fox ", 1000)},
		{"mixed/20000", strings.Repeat(wayland.MixedOf(2000), 10)},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := startSway(t)
			rec := startFoot(t, env)
			inj, err := New(Wayland, Options{Environ: cLocale(t, env)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(inj.Close)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if err := inj.Type(ctx, untrusted.Typed(c.text)); err != nil {
				t.Fatalf("Type = %v", err)
			}
			// Everything the compositor took reaches foot: the file grows
			// to the whole text (or stops growing short of it).
			wctx, wcancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer wcancel()
			var got []byte
			_ = testwait.Until(wctx, func() bool {
				got, _ = os.ReadFile(rec.File)
				return len(got) >= len(c.text)
			}, rec)
			if string(got) != c.text {
				t.Fatalf("foot received %d of %d bytes (foot still running: %v)", len(got), len(c.text), footRunning())
			}
		})
	}
}

// footRunning reports whether a foot process runs.
func footRunning() bool {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if c, err := os.ReadFile("/proc/" + d.Name() + "/comm"); err == nil && strings.TrimSpace(string(c)) == "foot" {
			return true
		}
	}
	return false
}
