package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/yazses/yazses/internal/testsway"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/daemonapi"
)

// Live text (dictation.live) through the real daemon: jfk.wav, which has
// pauses, replayed into the microphone, the real Silero child deciding
// the pieces, the fake decoder's exact words per piece ("piece of" and
// the piece's audio length), and the daemon's own typing child typing
// into a recording xterm under a private Xvfb.

// liveDaemon starts a daemon with live text, typing into x.
func liveDaemon(t *testing.T, x xserver) *daemon { return liveDaemonEnv(t, x.DaemonEnv()) }

// liveDaemonEnv starts a daemon with live text and the desktop env.
func liveDaemonEnv(t *testing.T, env []string) *daemon {
	t.Helper()
	d := startDaemon(t, sileroConfig(t).
		With("dictation.live", "true").
		With("dictation.separator", q(" ")).
		With("children.decode", arr(bin("fakedecode"))).
		With("children.capture", arr(bin("yaz-capture"), "--file", world.jfk)),
		append(env, "YAZ_FAKE_TEXT=piece of {audio_ms}")...)
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

// watchPieces watches the daemon's live state until the hold ends, and
// then sends the most pieces typed that an event showed while the hold
// was open (none: the watch ended first). An event after the hold carrying pieces fails the test.
func watchPieces(t *testing.T, d *daemon) <-chan daemonapi.WatchPieces {
	t.Helper()
	wc := d.Client()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan daemonapi.WatchPieces, 1)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done; wc.Close() })
	go func() {
		defer close(done)
		var most daemonapi.WatchPieces
		_ = wc.Watch(ctx, func(ev daemonapi.WatchEvent) error {
			if ev.Hold != daemonapi.StateIdle {
				if ev.Pieces.Typed >= most.Typed {
					most = ev.Pieces
				}
				return nil
			}
			if ev.LastHold == "" {
				return nil
			}
			if ev.Pieces != (daemonapi.WatchPieces{}) {
				t.Errorf("the idle event after the hold carries pieces %+v", ev.Pieces)
			}
			return context.Canceled
		})
		out <- most // also when the watch ended early: the test fails then
	}()
	return out
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
// outcome is typed with every character counted. The watch stream shows
// the pieces decided and typed; no log or audit line holds their text.
func TestLiveTextTypedWhileHeld(t *testing.T) {
	t.Parallel()
	_, rec, d, c, first := liveHold(t) // the hold is open: no hold.stop was sent
	pieces := watchPieces(t, d)
	d.waitReplayed(wavDuration(t, world.jfk))
	r := d.stopHold(c)
	if p := <-pieces; p.Typed < 1 || p.Decided < p.Typed {
		t.Errorf("the watch stream showed pieces %+v while the hold was open; want at least one decided and typed", p)
	}
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
	// No log or audit line holds the text of a piece.
	auditLog, _ := os.ReadFile(d.Audit)
	if strings.Contains(d.Log.String(), "piece of") || strings.Contains(string(auditLog), "piece of") {
		t.Error("the daemon's log or audit holds the text of a piece")
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

// TestLiveTextOnWayland: live text through the Wayland virtual keyboard
// into foot on a headless sway: the first piece is in the window while
// the key is held, and what arrives in the end is exactly `ctl last` and
// the separator, with no control byte. (The route cannot name windows:
// design.md says what it guarantees.)
func TestLiveTextOnWayland(t *testing.T) {
	t.Parallel()
	sway := testsway.Start(t)
	file := testsway.StartFoot(t, sway)
	d := liveDaemonEnv(t, []string{"DISPLAY=", "SWAYSOCK=" + getenv(sway, "SWAYSOCK"),
		"WAYLAND_DISPLAY=" + filepath.Join(getenv(sway, "XDG_RUNTIME_DIR"), getenv(sway, "WAYLAND_DISPLAY"))})
	d.WaitFor(20*time.Second, "the typing child to run", func() bool { return d.Child("type").State == "running" })
	c := d.Client()
	defer c.Close()
	w, err := testwait.WatchFile(file)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	read := func() string { b, _ := os.ReadFile(file); return string(b) }
	holdOpen(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Hang)
	defer cancel()
	var first string
	if testwait.Until(ctx, func() bool { first = read(); return regexp.MustCompile(`^piece of [0-9]+ `).MatchString(first) }, w) != nil {
		t.Fatalf("no piece arrived in foot while the key was held; it holds %q", first)
	}
	d.waitReplayed(wavDuration(t, world.jfk))
	r := d.stopHold(c)
	last := d.lastByCtl()
	want := last.Text + " "
	var got string
	if testwait.Until(ctx, func() bool { got = read(); return len(got) >= len(want) }, w) != nil || got != want || !strings.HasPrefix(got, first) {
		t.Errorf("foot received %q (%q while held); want ctl last %q and the separator", got, first, last.Text)
	}
	noControl(t, got)
	if r.Outcome != "typed" || r.Backend != "wayland" || r.Chars != utf8.RuneCountInString(last.Text) {
		t.Errorf("hold.stop = %+v, want typed with wayland, %d characters", r, utf8.RuneCountInString(last.Text))
	}
}

// TestLiveTextThroughTheSoundServer: live text with a microphone that is
// a real sound server's: jfk.wav played into a PulseAudio null sink in
// real time (paplay), the daemon's capture child recording the sink's
// monitor, as a person speaking into a microphone: the first piece is in
// the recording xterm while the speech still plays and the key is held,
// and what arrives in the end is exactly `ctl last` and the separator,
// with no control byte, typed.
func TestLiveTextThroughTheSoundServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	sink := privateSink(t)
	d := startDaemon(t, sileroConfig(t).
		With("dictation.live", "true").
		With("dictation.separator", q(" ")).
		With("capture.mode", q("always")).
		With("capture.backend", q("pulseaudio")).
		With("capture.device", q(sink+".monitor")).
		With("children.capture", arr(bin("yaz-capture"))).
		With("children.decode", arr(bin("fakedecode"))),
		append(x.DaemonEnv(), "YAZ_FAKE_TEXT=piece of {audio_ms}")...)
	d.WaitRunning("vad")
	d.WaitRunning("capture")
	c := d.Client()
	defer c.Close()
	holdOpen(t, c)
	play := exec.CommandContext(ctx, "paplay", "--device="+sink, world.jfk)
	out := &testwait.Buffer{}
	play.Stdout, play.Stderr = out, out
	if err := play.Start(); err != nil {
		t.Fatalf("paplay: %v", err)
	}
	played := make(chan error, 1)
	go func() { played <- play.Wait() }()
	first := waitPiece(t, rec)
	select {
	case err := <-played:
		t.Errorf("the speech had been played out (%v) before the first piece arrived: not typed while speaking", err)
	default:
	}
	if err := testwait.Recv(t, played, "the speech played into the sink"); err != nil {
		t.Fatalf("paplay: %v: %s", err, out.String())
	}
	r := d.stopHold(c)
	last := d.lastByCtl()
	got := rec.settled(t)
	if last.Text == "" || got != last.Text+" " || !strings.HasPrefix(got, first) {
		t.Errorf("the window received %q (%q while held); want ctl last %q and the separator", got, first, last.Text)
	}
	noControl(t, got)
	if r.Outcome != "typed" || r.Chars != utf8.RuneCountInString(last.Text) {
		t.Errorf("hold.stop = %+v, want typed, %d characters", r, utf8.RuneCountInString(last.Text))
	}
	t.Logf("while held: %q; in the end: %q", first, got)
}
