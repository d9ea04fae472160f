package notify

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/yazses/yazses/internal/testwait"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeTool puts an executable called name into a new PATH directory; it
// appends its arguments, one per line, and a "--end--" line to a log.
func fakeTool(t *testing.T, name string) (env []string, log string) {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> \"$0.calls\"\necho --end-- >> \"$0.calls\"\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{"PATH=" + dir}, filepath.Join(dir, name+".calls")
}

func calls(t *testing.T, log string) [][]string {
	t.Helper()
	data, _ := os.ReadFile(log)
	var out [][]string
	var cur []string
	for _, line := range strings.Split(string(data), "\n") {
		if line == "--end--" {
			out = append(out, cur)
			cur = nil
		} else if line != "" {
			cur = append(cur, line)
		}
	}
	return out
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestRateLimit(t *testing.T) {
	env, log := fakeTool(t, "notify-send")
	clock := &fakeClock{t: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	n := New(Options{Enabled: true, PerMinute: 3, Environ: env, Now: clock.now})
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
	if got := len(calls(t, log)); got != shown {
		t.Errorf("notify-send ran %d times, want %d", got, shown)
	}
}

func TestOffAndSet(t *testing.T) {
	env, log := fakeTool(t, "notify-send")
	clock := &fakeClock{t: time.Unix(0, 0)}
	n := New(Options{Enabled: false, Environ: env, Now: clock.now})
	ctx := context.Background()
	for range 3 {
		if got := n.Notify(ctx, NoTextTarget); got != Off {
			t.Fatalf("disabled: %s", got)
		}
	}
	if c := calls(t, log); len(c) != 0 {
		t.Fatalf("notify-send ran while off: %v", c)
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
}

func TestArgvAndSanitising(t *testing.T) {
	env, log := fakeTool(t, "notify-send")
	n := New(Options{Enabled: true, Environ: env})
	m := Message{summary: "Yaz\x1b[31mSes\n", body: "line one\nline\ttwo\u202e\x07 " + strings.Repeat("x", 400), urgency: "normal"}
	if got := n.Notify(context.Background(), m); got != Shown {
		t.Fatalf("Notify: %s", got)
	}
	c := calls(t, log)
	if len(c) != 1 {
		t.Fatalf("calls %v", c)
	}
	want := []string{"--app-name=YazSes", "--urgency=normal", "--expire-time=5000", "--icon=audio-input-microphone", "--transient", "--", "Yaz[31mSes", "line one line two " + strings.Repeat("x", maxBody-len("line one line two "))}
	if !slices.Equal(c[0], want) {
		t.Errorf("argv\n%q\nwant\n%q", c[0], want)
	}
	if got := NotifySendArgs(QuestionWaiting.Urgent()); got[1] != "--urgency=critical" {
		t.Errorf("Urgent: %q", got)
	}
}

// Post does not wait for a slow server; Wait does. The fake notify-send
// blocks until the test lets it go (it reads a FIFO the test holds open):
// both Posts must return while both are still blocked, and Wait only after
// they are let go.
func TestPost(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	// Held open for writing, a reader's open never blocks and its read
	// ends (EOF) only when this is closed.
	hold, err := os.OpenFile(gate, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	calls := filepath.Join(dir, "notify-send.calls")
	w, err := testwait.WatchFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	script := "#!/bin/sh\nexec 3<\"$0/../gate\"\necho started >> \"$0.calls\"\ncat <&3 >/dev/null\necho done >> \"$0.calls\"\n"
	script = strings.Replace(script, "$0/../gate", gate, 1)
	if err := os.WriteFile(filepath.Join(dir, "notify-send"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	n := New(Options{Enabled: true, Environ: []string{"PATH=" + dir + ":/usr/bin:/bin"}})
	posted := make(chan struct{})
	go func() {
		n.Post(context.Background(), Listening)
		n.Post(context.Background(), QuestionWaiting)
		close(posted)
	}()
	testwait.Closed(t, posted, "both Posts to return while notify-send is blocked")
	count := func(word string) int {
		data, _ := os.ReadFile(calls)
		return strings.Count(string(data), word)
	}
	if err := testwait.Until(testwait.Context(t), func() bool { return count("started") == 2 }, w); err != nil {
		t.Fatalf("waiting for both notify-send calls to start: %v (%d started)", err, count("started"))
	}
	waited := make(chan struct{})
	go func() { n.Wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("Wait returned while both notify-send calls were still running")
	default:
	}
	if got := count("done"); got != 0 {
		t.Fatalf("%d notifications done before they were let go", got)
	}
	hold.Close() // lets both go
	testwait.Closed(t, waited, "Wait to return once notify-send ended")
	if got := count("done"); got != 2 {
		t.Errorf("%d notifications done after Wait, want 2", got)
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

// Without notify-send, gdbus is used.
func TestGdbusArgs(t *testing.T) {
	env, log := fakeTool(t, "gdbus")
	n := New(Options{Enabled: true, Environ: env})
	if got := n.Notify(context.Background(), Message{summary: `it's "q" \ x`, body: "b", urgency: "normal"}); got != Shown {
		t.Fatalf("Notify: %s", got)
	}
	c := calls(t, log)
	if len(c) != 1 {
		t.Fatalf("calls %v", c)
	}
	want := []string{"call", "--session", "--dest", "org.freedesktop.Notifications", "--object-path", "/org/freedesktop/Notifications",
		"--method", "org.freedesktop.Notifications.Notify", "--", "'YazSes'", "uint32 0", "'audio-input-microphone'",
		`'it\'s "q" \\ x'`, "'b'", "@as []", "{'urgency': <byte 1>, 'transient': <true>}", "int32 5000"}
	if !slices.Equal(c[0], want) {
		t.Errorf("argv\n%q\nwant\n%q", c[0], want)
	}
}

// No tool, no bus: not an error for the caller, logged once.
func TestUnavailableLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, env := range [][]string{
		{"PATH=" + t.TempDir()}, // no tool at all
		{"PATH=/usr/bin:/bin", "DBUS_SESSION_BUS_ADDRESS=unix:path=" + filepath.Join(t.TempDir(), "nobus")}, // no bus
	} {
		buf.Reset()
		n := New(Options{Enabled: true, PerMinute: 60, Environ: env, Log: log})
		for range 3 {
			if got := n.Notify(context.Background(), Listening); got != Unavailable {
				t.Errorf("%v: %s, want unavailable", env, got)
			}
		}
		if lines := strings.Count(buf.String(), "\n"); lines != 1 || !strings.Contains(buf.String(), "level=DEBUG") {
			t.Errorf("%v: log %q, want one debug line", env, buf.String())
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

// A real session bus, a real notification server (dunst on a private
// Xvfb) and the real notify-send and gdbus.
func TestRealNotificationServer(t *testing.T) {
	for _, tool := range []string{"Xvfb", "dbus-daemon", "dunst", "dunstctl", "notify-send", "gdbus"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed for this test (scripts/install-deps.sh installs it): %v", tool, err)
		}
	}
	env := startX(t)
	bus := "unix:path=" + filepath.Join(t.TempDir(), "bus")
	start(t, env, nil, "dbus-daemon", "--session", "--nofork", "--nopidfile", "--address="+bus)
	env = append(env, "DBUS_SESSION_BUS_ADDRESS="+bus)
	waitFor(t, func() bool { return exec.Command("sh", "-c", `[ -S "${0#unix:path=}" ]`, bus).Run() == nil })
	start(t, env, nil, "dunst", "-conf", "/dev/null")
	waitFor(t, func() bool {
		c := exec.Command("dunstctl", "is-paused")
		c.Env = env
		return c.Run() == nil
	})
	ctx := context.Background()
	n := New(Options{Enabled: true, PerMinute: 60, Environ: env})
	if got := n.Notify(ctx, NoTextTarget); got != Shown {
		t.Fatalf("notify-send: %s", got)
	}
	// gdbus alone, with a text that needs quoting.
	gdbusOnly := append(slices.Clone(env), "PATH="+onlyTool(t, "gdbus"))
	g := New(Options{Enabled: true, Environ: gdbusOnly})
	tricky := Message{summary: `it's "quoted" \ ✓`, body: "Grüße", urgency: "normal"}
	if got := g.Notify(ctx, tricky); got != Shown {
		t.Fatalf("gdbus: %s", got)
	}
	got := received(t, env)
	want := [][2]string{{AppName, NoTextTarget.Body()}, {tricky.Summary(), "Grüße"}}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("server did not receive %q; it has %q", w, got)
		}
	}
}

// received closes every notification on the server and returns the
// (summary, body) pairs of its history.
func received(t *testing.T, env []string) [][2]string {
	t.Helper()
	c := exec.Command("dunstctl", "close-all")
	c.Env = env
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("dunstctl close-all: %v %s", err, out)
	}
	var got [][2]string
	waitFor(t, func() bool {
		c := exec.Command("dunstctl", "history")
		c.Env = env
		out, err := c.Output()
		if err != nil {
			return false
		}
		var h struct {
			Data [][]map[string]struct {
				Data any `json:"data"`
			} `json:"data"`
		}
		if json.Unmarshal(out, &h) != nil || len(h.Data) == 0 {
			return false
		}
		got = nil
		for _, n := range h.Data[0] {
			s, _ := n["summary"].Data.(string)
			b, _ := n["body"].Data.(string)
			got = append(got, [2]string{s, b})
		}
		return len(got) >= 2
	})
	return got
}

// onlyTool returns a PATH directory that holds just the named tool.
func onlyTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(p, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	return dir
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// start runs a background process in its own group, killed at cleanup.
func start(t *testing.T, env []string, extra []*os.File, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = env
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
}

// startX starts a private Xvfb (dunst needs a display).
func startX(t *testing.T) []string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	start(t, os.Environ(), []*os.File{w}, "Xvfb", "-displayfd", "3", "-nolisten", "tcp", "-noreset")
	w.Close()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		r.Close()
		line <- strings.TrimSpace(s)
	}()
	select {
	case d := <-line:
		if d == "" {
			t.Fatal("Xvfb printed no display number")
		}
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "DISPLAY=") && !strings.HasPrefix(kv, "WAYLAND_DISPLAY=") && !strings.HasPrefix(kv, "DBUS_SESSION_BUS_ADDRESS=") {
				env = append(env, kv)
			}
		}
		return append(env, "DISPLAY=:"+d)
	case <-time.After(15 * time.Second):
		t.Fatal("Xvfb did not start")
	}
	return nil
}
