package testx

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Settled works on a window without the focus, sees every key typed before
// it, and leaves the recorder's later reads alone.
func TestSettled(t *testing.T) {
	x := Start(t)
	rec := StartRecorder(t, x.Env)
	if got := rec.Settled(t); got != "" {
		t.Fatalf("Settled on an unfocused, untouched window = %q, want nothing", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec.Focus(t)
	// The check can fail: the keys of a typist that ends right before
	// Settled are in its result without a wait.
	RunTool(ctx, t, x.Env, "xdotool", "type", "--delay", "0", "abc\r")
	if got := rec.Settled(t); got != "abc\n" {
		t.Fatalf("Settled = %q, want %q", got, "abc\n")
	}
	RunTool(ctx, t, x.Env, "xdotool", "type", "def")
	rec.WaitFor(t, "abc\ndef")
	if got := rec.Contents(t); got != "abc\ndef" {
		t.Fatalf("Contents = %q, want the markers left out", got)
	}
}

// Watches begun while others receive owner events, from tests running
// in parallel: under -race, the connections' readers and each watch's
// XFixes set-up must not touch xgb's event tables unsynchronized
// (xfixes.Init at each watch did, and failed four e2e tests in a -race
// run).
func TestWatchesBesideEachOther(t *testing.T) {
	for _, name := range []string{"a", "b", "c"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			x := Start(t) // a display each, as each e2e test has
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for i := range 4 {
				SetClip(ctx, t, x.Env, fmt.Sprintf("%s%d", name, i))
			}
		})
	}
}
