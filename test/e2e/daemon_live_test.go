package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/daemonapi"
)

// Live text (dictation.live) through the real daemon: jfk.wav, which has
// pauses, replayed into the microphone, the real Silero child deciding
// the pieces, the fake decoder's exact words per piece ("piece of" and
// the piece's audio length), and the daemon's own typing child typing
// into a recording xterm under a private Xvfb.

// liveDaemon starts a daemon with live text, typing into x.
func liveDaemon(t *testing.T, x xserver) *daemon {
	t.Helper()
	d := startDaemon(t, sileroConfig(t).
		With("dictation.live", "true").
		With("dictation.separator", q(" ")).
		With("children.decode", arr(bin("fakedecode"))).
		With("children.capture", arr(bin("yaz-capture"), "--file", world.jfk)),
		append(x.DaemonEnv(), "YAZ_FAKE_TEXT=piece of {audio_ms}")...)
	d.WaitRunning("vad")
	return d
}

// liveHold starts an X server with a focused recording window and a
// daemon with live text typing into it, opens a hold and returns once the
// first piece has arrived in the window, the hold still open.
func liveHold(t *testing.T) (xserver, *recorder, *daemon, *daemonapi.Client, string) {
	t.Helper()
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	d := liveDaemon(t, x)
	c := d.Client()
	t.Cleanup(func() { c.Close() })
	holdOpen(t, c)
	return x, rec, d, c, waitPiece(t, rec)
}

// holdOpen starts a hold and leaves it open.
func holdOpen(t *testing.T, c *daemonapi.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := c.Hold(ctx, daemonapi.MethodHoldStart); err != nil || r.Hold != daemonapi.HoldHolding {
		t.Fatalf("hold.start = %+v, %v", r, err)
	}
}

// pieceRE is one piece as the fake decoder says it.
var pieceRE = regexp.MustCompile(`piece of [0-9]+`)

// waitPiece waits until the window holds a whole piece and its space.
func waitPiece(t *testing.T, rec *recorder) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Hang)
	defer cancel()
	var got string
	if testwait.Until(ctx, func() bool {
		got = rec.Contents(t)
		return regexp.MustCompile(`^piece of [0-9]+ `).MatchString(got)
	}, rec) != nil {
		t.Fatalf("no piece arrived while the key was held; the window holds %q", got)
	}
	return got
}

// noControl fails on a byte below 0x20 or DEL: nothing live text types
// takes anything back or moves the cursor.
func noControl(t *testing.T, s string) {
	t.Helper()
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b == 0x7f {
			t.Errorf("byte %#x arrived at %d of %q", b, i, s)
		}
	}
}

// TestLiveTextTypedWhileHeld: the first piece is in the window while the
// key is still held; at the release only the rest follows; what arrived
// is exactly `ctl last` and the separator, with no control byte, and the
// outcome is typed with every character counted.
func TestLiveTextTypedWhileHeld(t *testing.T) {
	t.Parallel()
	_, rec, d, c, first := liveHold(t) // the hold is open: no hold.stop was sent
	d.waitReplayed(wavDuration(t, world.jfk))
	r := d.stopHold(c)
	last := d.lastByCtl()
	got := rec.settled(t)
	if last.Text == "" || got != last.Text+" " {
		t.Errorf("the window received %q; want ctl last %q and the separator", got, last.Text)
	}
	if !strings.HasPrefix(got, first) {
		t.Errorf("the window received %q; it held %q while the key was down: something was taken back", got, first)
	}
	if n := len(pieceRE.FindAllString(got, -1)); n < 2 {
		t.Errorf("the window received %q: %d pieces, want the pieces and the rest", got, n)
	}
	noControl(t, got)
	want := daemonapi.HoldResult{Hold: daemonapi.HoldIdle, Outcome: "typed", Chars: utf8.RuneCountInString(last.Text), Backend: "x11"}
	if r != want {
		t.Errorf("hold.stop = %+v, want %+v", r, want)
	}
	t.Logf("while held: %q; in the end: %q", first, got)
}

// TestLiveTextCancelTypesNoMore: hold.cancel after the first piece
// arrived types nothing more; what was typed stays, and the outcome
// counts it.
func TestLiveTextCancelTypesNoMore(t *testing.T) {
	t.Parallel()
	_, rec, d, c, first := liveHold(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.Hold(ctx, daemonapi.MethodHoldCancel)
	if err != nil || r.Outcome != "cancelled" || r.Arrived < utf8.RuneCountInString(first) {
		t.Fatalf("hold.cancel = %+v, %v; want cancelled with at least the %d characters typed", r, err, utf8.RuneCountInString(first))
	}
	// The microphone goes on replaying: had the hold gone on, more pieces
	// would come. Settled sees every key sent before it.
	d.waitReplayed(wavDuration(t, world.jfk))
	got := rec.settled(t)
	if !strings.HasPrefix(got, first) || utf8.RuneCountInString(got) != r.Arrived {
		t.Errorf("the window received %q after the cancel; want what had arrived (%d characters), nothing more", got, r.Arrived)
	}
	noControl(t, got)
}

// TestLiveTextFocusMovedMidHold: the focus moves to another window after
// the first piece arrived: nothing more is typed, into either window
// (the x11 route binds every later piece to the window that took the
// first); the whole text is kept for `ctl last`, and the outcome is
// partial with the count of what arrived.
func TestLiveTextFocusMovedMidHold(t *testing.T) {
	t.Parallel()
	x, rec, d, c, first := liveHold(t)
	other := startRecorder(t, x)
	other.Focus(t)
	d.waitReplayed(wavDuration(t, world.jfk))
	r := d.stopHold(c)
	last := d.lastByCtl()
	got, moved := rec.settled(t), other.settled(t)
	if moved != "" {
		t.Errorf("the window that took the focus mid-hold received %q", moved)
	}
	if !strings.HasPrefix(got, first) || !strings.HasPrefix(last.Text+" ", got) || len(got) >= len(last.Text) {
		t.Errorf("the first window received %q (%q while held); want a beginning of ctl last %q, not all of it", got, first, last.Text)
	}
	if r.Outcome != "partial" || r.Cause != "focus_moved" || r.Arrived != utf8.RuneCountInString(got) || r.Chars != utf8.RuneCountInString(last.Text) {
		t.Errorf("hold.stop = %+v; want partial, focus_moved, arrived %d of %d", r, utf8.RuneCountInString(got), utf8.RuneCountInString(last.Text))
	}
	noControl(t, got)
}
