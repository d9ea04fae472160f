package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
)

// TestPreRollKeepsAudioFromBeforeTheKey: with capture.mode = "always" a
// hold starts with the last pre_roll_ms of audio from the ring buffer, so
// the first syllable survives; with no pre-roll it starts at the key.
// (The audio here is silence played in by yaz-capture --file; the audit's
// duration of the hold's audio tells how much was kept.)
func TestPreRollKeepsAudioFromBeforeTheKey(t *testing.T) {
	t.Parallel()
	room := filepath.Join(t.TempDir(), "room.wav")
	writeSilenceWAV(t, room, 30*time.Second)
	const held, tail = 1000 * time.Millisecond, 200 * time.Millisecond
	audioOfHold := func(preRollMs string) time.Duration {
		d := startDaemon(t, baseConfig().
			With("capture.mode", q("always")).
			With("capture.pre_roll_ms", preRollMs).
			With("dictation.tail_ms", "200").
			With("children.capture", arr(bin("yaz-capture"), "--file", room)))
		d.WaitRunning("capture")
		// The scenario's own time, not a wait for an event: the room is
		// heard for 1.5 s (more than the pre-roll) before the key.
		time.Sleep(1500 * time.Millisecond)
		c := d.Client()
		ctx := context.Background()
		if _, err := c.Hold(ctx, daemonapi.MethodHoldStart); err != nil {
			t.Fatal(err)
		}
		time.Sleep(held)
		h, err := c.Hold(ctx, daemonapi.MethodHoldStop)
		if err != nil || h.Outcome != "empty" {
			t.Fatalf("hold.stop = %+v, %v; want outcome empty (silence)", h, err)
		}
		for _, e := range d.Events() {
			if e.Kind == "dictation.empty" {
				return e.Duration
			}
		}
		t.Fatal("no dictation.empty in the audit")
		return 0
	}
	// The room is silent, so no tail is recorded (the detector heard the
	// silence when the key came up): the pre-roll is the difference.
	with, without := audioOfHold("500"), audioOfHold("0")
	if with < held+450*time.Millisecond || with-without < 400*time.Millisecond {
		t.Errorf("hold with 500 ms pre-roll kept %v of audio (%v without), want at least %v and about 500 ms more", with, without, held+450*time.Millisecond)
	}
	if without > held+tail+150*time.Millisecond {
		t.Errorf("hold without pre-roll kept %v of audio, want about %v", without, held+tail)
	}
	t.Logf("audio of a %v hold with a %v tail: %v with 500 ms pre-roll, %v without", held, tail, with, without)
}
