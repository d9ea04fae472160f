package testx

import (
	"context"
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
