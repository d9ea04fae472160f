package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/yazses/yazses/internal/testsway"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/daemonapi"
)

// TestTypingChildKilledIsRestarted: the typing child (yaz-type --serve),
// killed with SIGKILL between two dictations, is started again by the
// daemon, listed in status, and the next dictation arrives whole.
func TestTypingChildKilledIsRestarted(t *testing.T) {
	t.Parallel()
	const text = "typed by the restarted child"
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	speech := answerWAV()
	d := startDaemon(t, dictationConfig(speech, true), append(x.DaemonEnv(), "YAZ_FAKE_TEXT="+text)...)
	d.WaitFor(20*time.Second, "the typing child to run", func() bool { return d.Child("type").State == "running" })
	pid := d.PidOf("type")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d.WaitFor(30*time.Second, "the typing child restarted", func() bool {
		ch := d.Child("type")
		return ch.State == "running" && ch.PID != pid && ch.Restarts >= 1
	})
	c := d.Client()
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	r := d.stopHold(c)
	want := daemonapi.HoldResult{Hold: daemonapi.HoldIdle, Outcome: "typed", Chars: utf8.RuneCountInString(text), Backend: "x11"}
	if r != want {
		t.Errorf("hold.stop after the restart = %+v, want %+v\n%s", r, want, d.LogTail(20))
	}
	rec.WaitFor(t, text)
	if n := d.Count("child.restarted", ""); n < 1 {
		t.Errorf("audit has %d child.restarted, want the typing child's", n)
	}
}

// TestTypingXServerDiesMidText: the X server killed while a long text is
// typed (300,000 characters, typed rather than pasted) ends the text with
// an outcome that is not typed, the text kept for ctl last, and the
// daemon goes on: the next dictation is answered, and SIGTERM stops it.
// The text is long enough that the kill, made once the terminal shows
// 10,000 characters, comes while the route still types: on a busy
// machine the terminal lags the X server, and with 100,000 the server had
// taken every key (typed, truthfully) before the kill.
// Before the typing child, hold.stop never answered and SIGTERM was
// ignored (the typing goroutine blocked in xgb under xtest.FakeInput).
func TestTypingXServerDiesMidText(t *testing.T) {
	t.Parallel()
	text := strings.TrimSpace(strings.Repeat("abc dé✓ ", 300_000/8)) // as the daemon keeps it
	textFile := filepath.Join(t.TempDir(), "text")
	if err := os.WriteFile(textFile, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	// Once the server is dead its display number is held for this test
	// (an X server's lock file naming a live process, this one), until
	// the daemon has stopped: another test's Xvfb must not take the
	// number and get this daemon's keys or its keymap restore.
	lock := fmt.Sprintf("/tmp/.X%s-lock", strings.TrimPrefix(x.Display, ":"))
	t.Cleanup(func() { os.Remove(lock) })
	speech := answerWAV()
	d := startDaemon(t, dictationConfig(speech, true).With("dictation.paste_over_chars", "1000000"),
		append(x.DaemonEnv(), "YAZ_FAKE_TEXT_FILE="+textFile)...)
	c := d.Client()
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	stopped := make(chan daemonapi.HoldResult, 1)
	go func() { stopped <- d.stopHold(c) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if testwait.Until(ctx, func() bool { return len(rec.Contents(t)) >= 10_000 }, rec) != nil {
		t.Fatalf("the text did not begin to arrive\n%s", d.LogTail(20))
	}
	if err := syscall.Kill(x.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	exited, err := testwait.Exited(x.Pid)
	if err == nil {
		testwait.Closed(t, exited, "the killed X server's end")
	}
	if err := os.WriteFile(lock, fmt.Appendf(nil, "%10d\n", os.Getpid()), 0o444); err != nil {
		t.Fatal(err)
	}
	var r daemonapi.HoldResult
	select {
	case r = <-stopped:
	case <-time.After(time.Minute):
		t.Fatalf("hold.stop did not answer a minute after the X server died\n%s", d.LogTail(30))
	}
	if r.Outcome == "typed" || r.Chars != utf8.RuneCountInString(text) {
		t.Errorf("hold.stop = %+v, want not typed, %d characters", r, utf8.RuneCountInString(text))
	}
	if l := d.lastByCtl(); l.Text != text {
		t.Errorf("ctl last holds %d characters, want the whole text (%d)", utf8.RuneCountInString(l.Text), utf8.RuneCountInString(text))
	}
	// The daemon goes on: it answers, and its typing child runs.
	if st := d.Child("type").State; st != "running" {
		t.Errorf("the typing child is %s after the X server died, want running", st)
	}
}

// TestTypingCompositorStopped: a compositor that stops answering (SIGSTOP
// of sway) while a dictation is typed ends that dictation with an outcome
// (the text kept for ctl last), within the typing bound, instead of
// holding hold.stop and every dictation after it; once the compositor
// answers again, the next dictation arrives.
func TestTypingCompositorStopped(t *testing.T) {
	t.Parallel()
	const text = "typed once the compositor answers again"
	sway := testsway.Start(t)
	file := testsway.StartFoot(t, sway)
	sock := getenv(sway, "SWAYSOCK") // sway-ipc.UID.PID.sock
	fields := strings.Split(filepath.Base(sock), ".")
	pid, err := strconv.Atoi(fields[len(fields)-2])
	if err != nil {
		t.Fatalf("sway's pid from %s: %v", sock, err)
	}
	speech := answerWAV()
	d := startDaemon(t, dictationConfig(speech, true), "DISPLAY=", "SWAYSOCK="+sock,
		"WAYLAND_DISPLAY="+filepath.Join(getenv(sway, "XDG_RUNTIME_DIR"), getenv(sway, "WAYLAND_DISPLAY")),
		"YAZ_FAKE_TEXT="+text)
	d.WaitFor(20*time.Second, "the typing child to run", func() bool { return d.Child("type").State == "running" })
	c := d.Client()
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cont := sync.OnceFunc(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	t.Cleanup(cont)
	stopped := make(chan daemonapi.HoldResult, 1)
	go func() { stopped <- d.stopHold(c) }()
	var r daemonapi.HoldResult
	select {
	case r = <-stopped:
	case <-time.After(time.Minute):
		t.Fatalf("hold.stop did not answer a minute after the compositor stopped\n%s", d.LogTail(30))
	}
	if r.Outcome == "typed" {
		t.Errorf("hold.stop with the compositor stopped = %+v, want not typed", r)
	}
	if l := d.lastByCtl(); l.Text != text {
		t.Errorf("ctl last = %+v, want the text kept", l)
	}
	cont()
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	if r := d.stopHold(c); r.Outcome != "typed" || r.Backend != "wayland" {
		t.Errorf("hold.stop once the compositor answers = %+v, want typed with wayland\n%s", r, d.LogTail(20))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := testwait.WatchFile(file)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var got string
	if testwait.Until(ctx, func() bool { b, _ := os.ReadFile(file); got = string(b); return len(got) >= len(text) }, w) != nil || got != text {
		t.Errorf("foot received %q, want %q", got, text)
	}
}
