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
// (The audio here is silence played in by yaz-capture --file; the
// daemon's "hold started" record says how much pre-roll the hold was
// given, and the audit's duration of the hold's audio proves it is in the
// hold's audio. The two holds are not compared with each other: each
// one's length beyond the key's moves with the machine's load, by more
// than 100 ms on a busy one.)
func TestPreRollKeepsAudioFromBeforeTheKey(t *testing.T) {
	t.Parallel()
	room := filepath.Join(t.TempDir(), "room.wav")
	writeSilenceWAV(t, room, 30*time.Second)
	const held, tail = 1000 * time.Millisecond, 200 * time.Millisecond
	audioOfHold := func(preRollMs string) (audio, preRoll time.Duration) {
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
		preRoll = time.Duration(field(d.oneRecord("hold started"), "pre_roll_ms")) * time.Millisecond
		for _, e := range d.Events() {
			if e.Kind == "dictation.empty" {
				return e.Duration, preRoll
			}
		}
		t.Fatal("no dictation.empty in the audit")
		return 0, 0
	}
	// The room is silent, so the tail ends at its first quiet check (the
	// detector heard the silence when the key came up). The key was down
	// for at least held: the hold's audio is at least that and the
	// pre-roll (less 50 ms: the replayer may lag the clock at the release
	// by about that on a loaded machine; the tail's 100 ms or so usually
	// more than makes it up).
	with, pre := audioOfHold("500")
	if pre < 450*time.Millisecond || pre > 500*time.Millisecond {
		t.Errorf("hold with 500 ms pre-roll was given %v of the room from before the key, want 450–500 ms (the room was heard for 1.5 s)", pre)
	}
	if with < held+pre-50*time.Millisecond {
		t.Errorf("hold with %v of pre-roll kept %v of audio, want at least %v: the pre-roll is not in the hold's audio", pre, with, held+pre-50*time.Millisecond)
	}
	without, pre0 := audioOfHold("0")
	if pre0 != 0 {
		t.Errorf("hold with pre_roll_ms 0 was given %v from before the key, want none", pre0)
	}
	// Less than a pre-roll of 500 ms on top of the key and the tail: the
	// audio starts at the key (the rest is the load's delay at the ends).
	if without > held+tail+300*time.Millisecond {
		t.Errorf("hold without pre-roll kept %v of audio, want about %v", without, held+tail)
	}
	t.Logf("audio of a %v hold with a %v tail: %v with %v of pre-roll, %v without", held, tail, with, pre, without)
}
