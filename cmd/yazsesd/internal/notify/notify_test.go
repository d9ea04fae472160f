package notify

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"go.uber.org/goleak"

	"github.com/yazses/yazses/internal/testbus"
	"github.com/yazses/yazses/internal/testnotify"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/internal/testx"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// shortDir is a folder for a bus socket (t.TempDir carries the test's
// name, and a socket path is at most 108 bytes).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ynt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// session starts a private bus with a notification server of the test's
// own (hang: one that never answers) and returns the server and the
// environment that names the bus, nothing else: no test reads the
// caller's own session.
func session(t *testing.T, hang bool) (*testnotify.Server, []string) {
	t.Helper()
	bus := testbus.Start(t, shortDir(t))
	return testnotify.Start(t, bus.Addr, hang), []string{"DBUS_SESSION_BUS_ADDRESS=" + bus.Addr}
}

// debugLog is a debug-level text log into buf, which the worker may write
// while the test reads it.
func debugLog(buf *testwait.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestRateLimit(t *testing.T) {
	srv, env := session(t, false)
	clock := &fakeClock{t: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	n := New(Options{Enabled: true, PerMinute: 3, Environ: env, Now: clock.now})
	defer n.Wait()
	ctx := context.Background()
	steps := []struct {
		at   time.Duration // since the start
		want Outcome
	}{
		{0, Shown},
		{time.Second, Shown},
		{2 * time.Second, Shown},
		{3 * time.Second, RateLimited},
		{59*time.Second + 999*time.Millisecond, RateLimited},
		{60 * time.Second, Shown}, // the first has left the minute
		{60*time.Second + 500*time.Millisecond, RateLimited},
		{62 * time.Second, Shown}, // the second and third have left
		{62 * time.Second, Shown},
		{62 * time.Second, RateLimited},
	}
	start := clock.t
	shown := 0
	for _, s := range steps {
		clock.t = start.Add(s.at)
		if got := n.Notify(ctx, Listening); got != s.want {
			t.Errorf("at +%v: %s, want %s", s.at, got, s.want)
		}
		if s.want == Shown {
			shown++
		}
	}
	if got := len(srv.Notes()); got != shown {
		t.Errorf("the server got %d notifications, want %d", got, shown)
	}
}

func TestOffAndSet(t *testing.T) {
	srv, env := session(t, false)
	clock := &fakeClock{t: time.Unix(0, 0)}
	n := New(Options{Enabled: false, Environ: env, Now: clock.now})
	defer n.Wait()
	ctx := context.Background()
	for range 3 {
		if got := n.Notify(ctx, NoTextTarget); got != Off {
			t.Fatalf("disabled: %s", got)
		}
		if got := n.Post(ctx, NoTextTarget); got != Off {
			t.Fatalf("disabled, Post: %s", got)
		}
	}
	n.Set(true, 1)
	if got := n.Notify(ctx, NoTextTarget); got != Shown {
		t.Errorf("after Set: %s", got)
	}
	if got := n.Notify(ctx, NoTextTarget); got != RateLimited {
		t.Errorf("second in the minute: %s", got)
	}
	n.Set(true, 0) // 0: the default, 6
	for i := 2; i <= DefaultPerMinute; i++ {
		if got := n.Notify(ctx, NoTextTarget); got != Shown {
			t.Errorf("notification %d with the default rate: %s", i, got)
		}
	}
	if got := n.Notify(ctx, NoTextTarget); got != RateLimited {
		t.Errorf("notification %d: %s", DefaultPerMinute+1, got)
	}
	// Nothing was sent while off: the server has the shown ones only.
	if got := len(srv.Notes()); got != DefaultPerMinute {
		t.Errorf("the server got %d notifications, want %d", got, DefaultPerMinute)
	}
}

// The call's arguments as the server gets them: the app name, the icon,
// the hints, the expiry, and the texts sanitised.
func TestArgumentsAndSanitising(t *testing.T) {
	srv, env := session(t, false)
	n := New(Options{Enabled: true, PerMinute: 60, Environ: env})
	defer n.Wait()
	m := Message{summary: "Yaz\x1b[31mSes\n", body: "line one\nline\ttwo\u202e\x07 " + strings.Repeat("x", 400), urgency: 1}
	if got := n.Notify(context.Background(), m); got != Shown {
		t.Fatalf("Notify: %s", got)
	}
	if got := n.Notify(context.Background(), QuestionWaiting.Urgent()); got != Shown {
		t.Fatalf("Notify: %s", got)
	}
	notes := srv.Notes()
	want := []testnotify.Note{
		{App: AppName, Icon: Icon, Summary: "Yaz[31mSes", Body: "line one line two " + strings.Repeat("x", maxBody-len("line one line two ")),
			Urgency: 1, Transient: true, Expire: ExpireMs},
		{App: AppName, Icon: Icon, Summary: AppName, Body: "A question is waiting.", Urgency: 2, Transient: true, Expire: ExpireMs},
	}
	if len(notes) != len(want) {
		t.Fatalf("the server got %+v, want %+v", notes, want)
	}
	for i := range want {
		if notes[i] != want[i] {
			t.Errorf("notification %d:\n%+v\nwant\n%+v", i, notes[i], want[i])
		}
	}
}

// A notification server that never answers. Post returns at once while
// the server holds a call (the Notifier's Timeout is an hour here: a Post
// that waited for the server would not return), MaxQueue more are queued
// and the one after is dropped; ending their context ends them. Notify
// and Wait return once each call is cut at Options.Timeout while the
// server still holds every call (it lets go only when the test ends), so
// it was the bound that ended them, not an answer.
func TestServerThatNeverAnswers(t *testing.T) {
	srv, env := session(t, true)
	var log testwait.Buffer
	n := New(Options{Enabled: true, PerMinute: 60, Environ: env, Timeout: time.Hour, Log: debugLog(&log)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	post := func(ms ...Message) []Outcome {
		got := make(chan []Outcome, 1)
		go func() {
			var outs []Outcome
			for _, m := range ms {
				outs = append(outs, n.Post(ctx, m))
			}
			got <- outs
		}()
		return testwait.Recv(t, got, "Post to return with the server holding a call")
	}
	if got := post(Listening); got[0] != Queued {
		t.Fatalf("first Post: %s", got[0])
	}
	srv.WaitCount(t, 1) // the server holds the first call now
	more := make([]Message, MaxQueue+1)
	for i := range more {
		more[i] = QuestionWaiting
	}
	outs := post(more...)
	for i, got := range outs[:MaxQueue] {
		if got != Queued {
			t.Errorf("Post %d with the first call held: %s, want queued", i+2, got)
		}
	}
	if got := outs[MaxQueue]; got != Dropped {
		t.Errorf("Post with %d waiting: %s, want dropped", MaxQueue, got)
	}
	cancel() // ends the held call; the queued ones are not sent
	waitBounded(t, n, "Wait once the notifications' context ended")
	if got := len(srv.Notes()); got != 1 {
		t.Errorf("the server got %d calls, want the first alone", got)
	}
	if !strings.Contains(log.String(), "dropped") {
		t.Errorf("log %q: want a line for the dropped notification", log.String())
	}

	// The bound: Notify returns Unavailable once its call, held by the
	// server, reaches Options.Timeout. (On a loaded machine the dial alone
	// may take longer than the bound; the next Notify dials again.)
	var blog testwait.Buffer
	b := New(Options{Enabled: true, PerMinute: 60, Environ: env, Timeout: 300 * time.Millisecond, Log: debugLog(&blog)})
	guard := testwait.Context(t)
	for before := len(srv.Notes()); len(srv.Notes()) == before; {
		if guard.Err() != nil {
			t.Fatalf("no Notify reached the server: %s", blog.String())
		}
		notified := make(chan Outcome, 1)
		go func() { notified <- b.Notify(context.Background(), Lost) }()
		if got := testwait.Recv(t, notified, "Notify to return at its bound"); got != Unavailable {
			t.Fatalf("Notify to a server that never answers: %s, want unavailable", got)
		}
	}
	// Wait cuts what is left one Timeout after it is called. Each held
	// call lasts one Timeout at least, so from the call in flight when
	// Wait is called to the cut, two more can start at most: of five
	// Posts three reach the server at most, where without the cut all
	// five would, one after the other.
	before := len(srv.Notes())
	b.Post(context.Background(), Listening)
	srv.WaitCount(t, before+1)
	for _, m := range []Message{NoTextTarget, QuestionWaiting, TypingFailed, Lost} {
		if got := b.Post(context.Background(), m); got != Queued {
			t.Fatalf("Post: %s", got)
		}
	}
	waitBounded(t, b, "Wait to return at its bound")
	if got := len(srv.Notes()) - before; got > 3 {
		t.Errorf("%d of 5 Posts reached the server after Wait was called, want 3 at most: %+v", got, srv.Notes()[before:])
	}
	out := blog.String()
	if !strings.Contains(out, "level=DEBUG") || !strings.Contains(out, "unavailable") || !strings.Contains(out, "deadline exceeded") {
		t.Errorf("log %q: want the debug line saying the call ran out of time", out)
	}
	if strings.Count(out, "going on without them") != 1 {
		t.Errorf("log %q: want the unavailable line once", out)
	}
}

// waitBounded is n.Wait, failing the test after testwait.Hang.
func waitBounded(t *testing.T, n *Notifier, what string) {
	t.Helper()
	waited := make(chan struct{})
	go func() { n.Wait(); close(waited) }()
	testwait.Closed(t, waited, what)
}

// The session bus goes away: the next notification is unavailable and a
// log line says the connection ended, nothing panics; when the bus is back
// (at the same address, as a restarted session bus is) the next
// notification dials again and is shown.
func TestBusGoneRedials(t *testing.T) {
	dir := shortDir(t)
	addr := "unix:path=" + filepath.Join(dir, "bus") // as a session sets it, without the bus's guid
	bus := testbus.Start(t, dir)
	first := testnotify.Start(t, bus.Addr, false)
	var log testwait.Buffer
	n := New(Options{Enabled: true, PerMinute: 60, Environ: []string{"DBUS_SESSION_BUS_ADDRESS=" + addr}, Log: debugLog(&log)})
	defer n.Wait()
	ctx := context.Background()
	if got := n.Notify(ctx, Listening); got != Shown {
		t.Fatalf("before the bus went away: %s", got)
	}
	bus.Stop()
	if got := n.Notify(ctx, Lost); got != Unavailable {
		t.Errorf("with the bus gone: %s, want unavailable", got)
	}
	if c := strings.Count(log.String(), "connection ended"); c != 1 {
		t.Errorf("log %q: %d lines saying the connection ended, want 1", log.String(), c)
	}
	again := testbus.Start(t, dir)
	second := testnotify.Start(t, again.Addr, false)
	if got := n.Post(ctx, QuestionWaiting); got != Queued {
		t.Errorf("with the bus back: Post %s", got)
	}
	second.WaitCount(t, 1)
	if len(first.Notes()) != 1 || len(second.Notes()) != 1 || second.Notes()[0].Body != QuestionWaiting.Body() {
		t.Errorf("the first server got %+v, the second %+v; want one each", first.Notes(), second.Notes())
	}
	if c := strings.Count(log.String(), "connection ended"); c != 1 {
		t.Errorf("log %q: %d lines saying the connection ended, want 1", log.String(), c)
	}
}

// The bus is found as libdbus finds it: DBUS_SESSION_BUS_ADDRESS, else
// the socket "bus" in XDG_RUNTIME_DIR.
func TestBusFromRuntimeDir(t *testing.T) {
	dir := shortDir(t)
	srv := testnotify.Start(t, testbus.Start(t, dir).Addr, false)
	n := New(Options{Enabled: true, Environ: []string{"XDG_RUNTIME_DIR=" + dir}})
	defer n.Wait()
	if got := n.Notify(context.Background(), Listening); got != Shown {
		t.Fatalf("Notify: %s", got)
	}
	if got := len(srv.Notes()); got != 1 {
		t.Errorf("the server got %d notifications, want 1", got)
	}
}

// Post returns while earlier notifications are on their way; Wait waits
// for them and ends the worker (goleak checks that nothing is left), and
// a Post after Wait starts it again.
func TestPostAndWait(t *testing.T) {
	srv, env := session(t, false)
	n := New(Options{Enabled: true, PerMinute: 60, Environ: env})
	ctx := context.Background()
	for _, m := range []Message{Listening, QuestionWaiting, Lost} {
		if got := n.Post(ctx, m); got != Queued {
			t.Fatalf("Post: %s", got)
		}
	}
	n.Wait()
	if got := len(srv.Notes()); got != 3 {
		t.Errorf("after Wait the server has %d notifications, want 3", got)
	}
	n.Post(ctx, TypingFailed)
	n.Wait()
	notes := srv.Notes()
	if len(notes) != 4 || notes[3].Body != TypingFailed.Body() {
		t.Errorf("after a second Wait the server has %+v", notes)
	}
	// A posted notification whose context has ended is not sent.
	done, cancel := context.WithCancel(ctx)
	cancel()
	n.Post(done, Listening)
	n.Wait()
	if got := len(srv.Notes()); got != 4 {
		t.Errorf("a notification with an ended context was sent (%d)", got)
	}
}

func TestByKind(t *testing.T) {
	for kind, want := range map[string]string{"listening": "Listening…", "no_target": "yazsesd ctl last", "question_waiting": "question", "lost": "failed",
		"model_missing": "yazsesd status", "model_invalid": "not a whisper model", "language_unsupported": "language", "child_down": "yazsesd status",
		"vad_model_missing": "voice-detector", "vad_model_invalid": "Silero"} {
		m, ok := ByKind(kind)
		if !ok || !strings.Contains(m.Body(), want) || m.Summary() != AppName {
			t.Errorf("ByKind(%q) = %q/%q, %v", kind, m.Summary(), m.Body(), ok)
		}
	}
	if _, ok := ByKind("transcript"); ok {
		t.Error("unknown kind found")
	}
}

// No bus, a bus without a notification server: not an error for the
// caller, logged once.
func TestUnavailableLoggedOnce(t *testing.T) {
	var log testwait.Buffer
	noServer := testbus.Start(t, shortDir(t))
	for _, env := range [][]string{
		{},                                 // no bus named
		{"XDG_RUNTIME_DIR=" + t.TempDir()}, // no bus socket there
		{"DBUS_SESSION_BUS_ADDRESS=unix:path=" + filepath.Join(t.TempDir(), "nobus")}, // nothing listens
		{"DBUS_SESSION_BUS_ADDRESS=" + noServer.Addr},                                 // a bus, no server
	} {
		before := log.String()
		n := New(Options{Enabled: true, PerMinute: 60, Environ: env, Log: debugLog(&log)})
		for range 3 {
			if got := n.Notify(context.Background(), Listening); got != Unavailable {
				t.Errorf("%v: %s, want unavailable", env, got)
			}
		}
		n.Wait()
		added := strings.TrimPrefix(log.String(), before)
		if lines := strings.Count(added, "\n"); lines != 1 || !strings.Contains(added, "level=DEBUG") {
			t.Errorf("%v: log %q, want one debug line", env, added)
		}
	}
}

// Text takes string constants only: a transcript in a variable does not
// compile.
func TestTextTakesConstantsOnly(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	for _, tt := range []struct {
		src string
		ok  bool
	}{
		{`func f() notify.Message { return notify.Text("YazSes", "Decoder restarted.") }`, true},
		{`func f(transcript string) notify.Message { return notify.Text("YazSes", transcript) }`, false},
		{`func f(b []byte) notify.Message { return notify.Text("YazSes", string(b)) }`, false},
	} {
		tmp := t.TempDir()
		src := filepath.Join(tmp, "x.go")
		os.WriteFile(src, []byte("package constcheck\n\nimport \"github.com/yazses/yazses/cmd/yazsesd/internal/notify\"\n\n"+tt.src+"\n"), 0o644)
		overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(dir, "internal", "constcheck", "x.go"): src}})
		ov := filepath.Join(tmp, "overlay.json")
		os.WriteFile(ov, overlay, 0o644)
		cmd := exec.Command("go", "build", "-overlay", ov, "./internal/constcheck")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if (err == nil) != tt.ok {
			t.Errorf("%s: build error %v (%s), want ok=%v", tt.src, err, out, tt.ok)
		}
		if !tt.ok && !strings.Contains(string(out), "stringConstant") {
			t.Errorf("%s: failed for another reason: %s", tt.src, out)
		}
	}
}

// A real session bus and a real notification server, dunst on a private
// Xvfb: what a posted notification says arrives there exactly (the
// application's name, the summary, the body), as dunst's own history
// shows it.
func TestRealNotificationServer(t *testing.T) {
	if _, err := exec.LookPath("dunst"); err != nil {
		t.Fatalf("dunst is needed for this test (scripts/install-deps.sh installs it): %v", err)
	}
	x := testx.Start(t)
	dir := shortDir(t)
	bus := testbus.Start(t, dir)
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "XDG_RUNTIME_DIR=" + dir, "DISPLAY=" + x.Display, "DBUS_SESSION_BUS_ADDRESS=" + bus.Addr}
	dunst := exec.Command("dunst", "-conf", "/dev/null")
	dunst.Env = env
	dunst.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := dunst.Start(); err != nil {
		t.Fatalf("start dunst: %v", err)
	}
	ended := make(chan struct{})
	go func() { _ = dunst.Wait(); close(ended) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-dunst.Process.Pid, syscall.SIGKILL)
		testwait.Closed(t, ended, "dunst to exit")
	})
	bus.WaitOwner("org.freedesktop.Notifications")

	n := New(Options{Enabled: true, PerMinute: 60, Environ: env})
	if got := n.Post(context.Background(), NoTextTarget); got != Queued {
		t.Fatalf("Post: %s", got)
	}
	if got := n.Notify(context.Background(), QuestionWaiting.Urgent()); got != Shown {
		t.Fatalf("Notify: %s", got)
	}
	n.Wait()

	got := dunstHistory(t, bus.Addr)
	want := []dunstNote{
		{AppName, AppName, NoTextTarget.Body()},
		{AppName, AppName, QuestionWaiting.Body()},
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Errorf("dunst did not get %q; it has %q", w, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("dunst has %d notifications, want %d: %q", len(got), len(want), got)
	}
}

// dunstNote is what dunst's history keeps of a notification.
type dunstNote struct{ App, Summary, Body string }

// dunstHistory closes every notification dunst shows or holds (they go to
// its history; dunst took each before it answered its Notify call, so all
// are there) and returns its history, through dunst's own interface.
func dunstHistory(t *testing.T, addr string) []dunstNote {
	t.Helper()
	c, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := testwait.Context(t)
	obj := c.Object("org.freedesktop.Notifications", "/org/freedesktop/Notifications")
	if err := obj.CallWithContext(ctx, "org.dunstproject.cmd0.NotificationCloseAll", 0).Err; err != nil {
		t.Fatalf("dunst NotificationCloseAll: %v", err)
	}
	var hist []map[string]dbus.Variant
	if err := obj.CallWithContext(ctx, "org.dunstproject.cmd0.NotificationListHistory", 0).Store(&hist); err != nil {
		t.Fatalf("dunst NotificationListHistory: %v", err)
	}
	var out []dunstNote
	for _, h := range hist {
		s := func(k string) string { v, _ := h[k].Value().(string); return v }
		out = append(out, dunstNote{s("appname"), s("summary"), s("body")})
	}
	return out
}
