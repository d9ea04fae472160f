package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/wav"
)

// The helpers below follow lib/inject/x11_test.go (a private Xvfb and an
// xterm that records every byte it receives); test files are not shared
// across packages, so they are repeated here.

// xserver is a private Xvfb.
type xserver struct {
	env     []string // the test's environment pointed at it
	display string   // ":N"
}

// daemonEnv is what a daemon started from this X session inherits: the
// display, and no Wayland session (so "auto" picks xdotool).
func (x xserver) daemonEnv() []string {
	return []string{"DISPLAY=" + x.display, "WAYLAND_DISPLAY=", "SWAYSOCK="}
}

// startX starts a private Xvfb. A missing Xvfb (or X tool) fails the
// test: scripts/install-deps.sh installs them.
func startX(t testing.TB) xserver {
	t.Helper()
	for _, tool := range []string{"Xvfb", "xterm", "xdotool", "xprop", "xwininfo", "xmodmap", "xclip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed for this test (scripts/install-deps.sh installs it): %v", tool, err)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("Xvfb", "-displayfd", "3", "-nolisten", "tcp", "-noreset", "-screen", "0", "640x480x24")
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start Xvfb: %v", err)
	}
	w.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		r.Close()
		line <- strings.TrimSpace(s)
	}()
	select {
	case n := <-line:
		if n == "" {
			t.Fatalf("Xvfb printed no display number: %s", stderr.String())
		}
		x := xserver{display: ":" + n}
		x.env = append(withoutEnv(os.Environ(), "DISPLAY", "WAYLAND_DISPLAY", "SWAYSOCK"), "DISPLAY="+x.display)
		return x
	case <-time.After(15 * time.Second):
		t.Fatalf("Xvfb did not start: %s", stderr.String())
	}
	return xserver{}
}

// withoutEnv drops the named variables.
func withoutEnv(env []string, names ...string) []string {
	var out []string
next:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// recorder is an xterm whose shell writes every byte it receives to a
// file (the terminal is in non-canonical mode: nothing waits for an Enter).
type recorder struct {
	env  []string
	win  string
	file string
}

// startRecorder opens the xterm. Ctrl+Shift+V pastes the CLIPBOARD (an
// xterm translation, as terminal users configure it).
func startRecorder(t testing.TB, x xserver) *recorder {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "typed.txt")
	title := fmt.Sprintf("yazrec-%d", time.Now().UnixNano())
	cmd := exec.Command("xterm", "-title", title,
		"-xrm", "*VT100.translations: #override Ctrl Shift <Key>V: insert-selection(CLIPBOARD)",
		"-e", "sh", "-c", `stty -icanon; exec cat > "$0"`, file)
	cmd.Env = x.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start xterm: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := runTool(ctx, t, x.env, "xdotool", "search", "--sync", "--name", title)
	win := strings.Fields(out)[0]
	for ctx.Err() == nil { // the shell has run stty once cat made the file
		if _, err := os.Stat(file); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	return &recorder{env: x.env, win: win, file: file}
}

// focus gives the recorder the X input focus.
func (r *recorder) focus(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	runTool(ctx, t, r.env, "xdotool", "windowfocus", "--sync", r.win)
}

// waitFor waits until the file holds exactly want (or more than it), and
// fails with what it holds.
func (r *recorder) waitFor(t testing.TB, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var got []byte
	for time.Now().Before(deadline) {
		got, _ = os.ReadFile(r.file)
		if string(got) == want || len(got) > len(want) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if string(got) != want {
		t.Fatalf("window received %q, want %q", got, want)
	}
}

// settled waits a moment and returns everything the window received: a
// late key (an Enter typed after the text) shows up here.
func (r *recorder) settled(t testing.TB) string {
	t.Helper()
	time.Sleep(700 * time.Millisecond)
	b, err := os.ReadFile(r.file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func runTool(ctx context.Context, t testing.TB, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// setClip puts s on the CLIPBOARD (xclip stays as its owner until the X
// server ends).
func setClip(ctx context.Context, t testing.TB, env []string, s string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "xclip", "-selection", "clipboard", "-i")
	cmd.Env = env
	cmd.Stdin = strings.NewReader(s)
	if err := cmd.Run(); err != nil {
		t.Fatalf("xclip -i: %v", err)
	}
}

// getClip reads the CLIPBOARD; "" when it holds no text.
func getClip(ctx context.Context, env []string) string {
	cmd := exec.CommandContext(ctx, "xclip", "-selection", "clipboard", "-o")
	cmd.Env = env
	out, _ := cmd.Output()
	return string(out)
}

var speechWAVs struct {
	mu    sync.Mutex
	dir   string
	paths map[time.Duration]string
}

// speechWAV is jfk.wav cut (or looped) to d, as a 16 kHz mono WAV file,
// made once per duration for the suite.
func speechWAV(t testing.TB, d time.Duration) string {
	t.Helper()
	speechWAVs.mu.Lock()
	defer speechWAVs.mu.Unlock()
	if p, ok := speechWAVs.paths[d]; ok {
		return p
	}
	if speechWAVs.dir == "" {
		dir, err := os.MkdirTemp("", "yazses-speech-")
		if err != nil {
			t.Fatal(err)
		}
		speechWAVs.dir, speechWAVs.paths = dir, map[time.Duration]string{}
	}
	src, _, err := wav.ReadFile16k(world.jfk, 16000*3600)
	if err != nil {
		t.Fatalf("read jfk.wav: %v", err)
	}
	n := pcm.Samples(d)
	out := make([]float32, 0, n)
	for len(out) < n {
		out = append(out, src[:min(len(src), n-len(out))]...)
	}
	data := pcm.Encode(nil, pcm.FromFloat32(nil, out))
	p := filepath.Join(speechWAVs.dir, fmt.Sprintf("jfk-%dms.wav", d.Milliseconds()))
	if err := os.WriteFile(p, append(pcm.WAVHeader(int64(len(data))), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	speechWAVs.paths[d] = p
	return p
}

// wavDuration is the length of a 16 kHz mono 16-bit WAV file.
func wavDuration(t testing.TB, path string) time.Duration {
	t.Helper()
	s, _, err := wav.ReadFile16k(path, 16000*3600)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return pcm.Duration(len(s))
}

// holdWhileSpeaking opens a hold and keeps it while the capture child replays its
// file (it ends with the file), then returns. The hold stays open.
func (d *daemon) holdWhileSpeaking(c *daemonapi.Client, speech time.Duration) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.Hold(ctx, daemonapi.MethodHoldStart)
	if err != nil || r.Hold != daemonapi.HoldHolding {
		d.t.Fatalf("hold.start = %+v, %v", r, err)
	}
	d.waitReplayed(speech)
}

// waitReplayed waits until the capture child has replayed its file:
// it ran and is no longer running (a file of length speech).
func (d *daemon) waitReplayed(speech time.Duration) {
	d.t.Helper()
	start := time.Now()
	seen := false
	d.waitFor(speech+30*time.Second, "the capture child to replay its file", func() bool {
		st := d.child("capture").State
		if st == "running" {
			seen = true
			return false
		}
		return (seen || time.Since(start) > speech+2*time.Second) && time.Since(start) > speech
	})
}

// stopHold ends the hold and returns its result.
func (d *daemon) stopHold(c *daemonapi.Client) daemonapi.HoldResult {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := c.Hold(ctx, daemonapi.MethodHoldStop)
	if err != nil {
		d.t.Fatalf("hold.stop: %v\n%s", err, d.logTail(30))
	}
	return r
}

// lastByCtl is `yazsesd ctl last`, run as a separate process, parsed.
func (d *daemon) lastByCtl() daemonapi.Last {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, stderr, code := d.ctl(ctx, "last")
	if code != 0 {
		d.t.Fatalf("yazsesd ctl last: exit %d: %s", code, stderr)
	}
	var l daemonapi.Last
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		d.t.Fatalf("yazsesd ctl last printed %q: %v", out, err)
	}
	return l
}

// notes is a fake notify-send first in the daemon's PATH: it writes the
// arguments of every notification, one notification a line, to a file.
type notes struct {
	env  string // the PATH entry for the daemon
	file string
}

func fakeNotifySend(t testing.TB) notes {
	t.Helper()
	dir := t.TempDir()
	n := notes{env: "PATH=" + dir + ":" + os.Getenv("PATH"), file: filepath.Join(dir, "notes.txt")}
	script := "#!/bin/sh\nfor a; do printf '%s|' \"$a\"; done >> '" + n.file + "'\necho >> '" + n.file + "'\n"
	if err := os.WriteFile(filepath.Join(dir, "notify-send"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n notes) lines() []string {
	b, _ := os.ReadFile(n.file)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// waitFor waits until a notification contains s.
func (n notes) waitFor(t testing.TB, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, l := range n.lines() {
			if strings.Contains(l, s) {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no notification with %q; got %q", s, n.lines())
}
