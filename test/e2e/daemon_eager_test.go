package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
)

// TestHoldDecodedInPiecesAtPauses: with dictation.eager_pause_ms a hold
// over speech with pauses (jfk.wav, Silero through the real child) is
// decoded in pieces while it goes on: the decoder child gets pieces before
// the key is released, and the final text is the pieces joined with one
// space, with dictation.replace applied to the whole (a phrase that spans
// two pieces is replaced), on the fake decoder's exact words.
func TestHoldDecodedInPiecesAtPauses(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, sileroConfig(t).
		with("dictation.eager_pause_ms", "300").
		with("dictation.replace", `[{from = "beta alpha", to = "BA"}]`).
		with("children.decode", arr(bin("fakedecode"))).
		with("children.capture", arr(bin("yaz-capture"), "--file", world.jfk)),
		"YAZ_FAKE_TEXT=alpha beta")
	d.waitRunning("vad")
	c := d.client()
	defer c.Close()
	d.holdWhileSpeaking(c, wavDuration(t, world.jfk))
	during := d.decodes()
	d.stopHold(c)
	last := d.lastByCtl()
	n := d.decodes()
	if during < 1 || n < 2 {
		t.Fatalf("%d pieces decoded during the hold, %d in all; want pieces during it and at least 2 in all\n%s", during, n, d.logTail(40))
	}
	whole := strings.TrimSpace(strings.Repeat("alpha beta ", n))
	if want := strings.ReplaceAll(whole, "beta alpha", "BA"); last.Text != want {
		t.Errorf("last text %q, want %q (%d pieces joined, replacements on the whole)", last.Text, want, n)
	}
	t.Logf("%d pieces, %d of them before release", n, during)
}

// TestHoldCancelDropsEagerPieces: hold.cancel after pieces were decoded
// during the hold keeps nothing: no text for `last`.
func TestHoldCancelDropsEagerPieces(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, sileroConfig(t).
		with("dictation.eager_pause_ms", "300").
		with("children.decode", arr(bin("fakedecode"))).
		with("children.capture", arr(bin("yaz-capture"), "--file", world.jfk)),
		"YAZ_FAKE_TEXT=never kept")
	c := d.client()
	defer c.Close()
	d.holdWhileSpeaking(c, wavDuration(t, world.jfk))
	if d.decodes() < 1 {
		t.Fatalf("no piece decoded during the hold\n%s", d.logTail(30))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r, err := c.Hold(ctx, daemonapi.MethodHoldCancel); err != nil || r.Outcome != "cancelled" {
		t.Fatalf("hold.cancel = %+v, %v", r, err)
	}
	if l := d.lastByCtl(); l.Text != "" {
		t.Errorf("last after hold.cancel = %+v, want no text", l)
	}
}
