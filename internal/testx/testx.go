// Package testx runs a private X server for tests: Xvfb, and an xterm that
// records every byte typed into it, plus the X tools the tests drive
// (xdotool, xclip). cmd/yaz-type/internal/inject's tests and test/e2e's dictation tests use
// the same recorder.
//
// A missing tool fails the test, never skips it: scripts/install-deps.sh
// installs them. Waits are on events: the display number Xvfb writes to a
// pipe, the window xdotool --sync finds, and the recorder's file changes
// (inotify), never on a fixed sleep.
package testx

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
)

// Tools are the programs the helpers run.
var Tools = []string{"Xvfb", "xterm", "xdotool", "xprop", "xwininfo", "xmodmap", "xclip"}

// X is a private Xvfb.
type X struct {
	Env     []string // this process's environment pointed at it, without Wayland
	Display string   // ":N"
	Pid     int
}

// DaemonEnv is what a program started from this X session inherits: the
// display, and no Wayland session (so "auto" picks the X backends).
func (x *X) DaemonEnv() []string {
	return []string{"DISPLAY=" + x.Display, "WAYLAND_DISPLAY=", "SWAYSOCK="}
}

// Start starts Xvfb (640x480x24, no TCP) with extra arguments; it is killed
// when the test ends.
func Start(t testing.TB, xvfbArgs ...string) *X {
	t.Helper()
	for _, tool := range Tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed for this test (scripts/install-deps.sh installs it): %v", tool, err)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("Xvfb", append([]string{"-displayfd", "3", "-nolisten", "tcp", "-noreset", "-screen", "0", "640x480x24"}, xvfbArgs...)...)
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// exec copies Xvfb's stderr in a goroutine of its own while Xvfb runs,
	// and the failure paths read it: a locked buffer.
	stderr := &testwait.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start Xvfb: %v", err)
	}
	w.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		testwait.Closed(t, done, "the killed process's end")
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
		x := &X{Display: ":" + n, Pid: cmd.Process.Pid}
		x.Env = append(WithoutEnv(os.Environ(), "DISPLAY", "WAYLAND_DISPLAY", "SWAYSOCK"), "DISPLAY="+x.Display)
		return x
	case <-time.After(testwait.Hang):
		t.Fatalf("Xvfb did not start: %s", stderr.String())
	}
	return nil
}

// WithoutEnv drops the named variables.
func WithoutEnv(env []string, names ...string) []string {
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

// Recorder is an xterm whose shell writes every byte it receives to File
// (the terminal is in non-canonical mode: nothing waits for an Enter).
type Recorder struct {
	Env   []string
	Win   string // the window id
	File  string
	watch *testwait.File
}

// TerminalPaste is the xterm translation by which Ctrl+Shift+V pastes the
// CLIPBOARD, as some terminal users configure it.
const TerminalPaste = "Ctrl Shift <Key>V: insert-selection(CLIPBOARD)"

// StartRecorder opens a recorder with xterm's own key bindings (it pastes
// PRIMARY on Shift+Insert, and types a ^V for Ctrl+Shift+V).
func StartRecorder(t testing.TB, env []string) *Recorder {
	t.Helper()
	return StartRecorderAs(t, env, nil, "")
}

// StartRecorderAs opens the recorder with extra xterm arguments and a
// paste translation ("": none). It returns once the window exists and the
// shell has set the terminal to non-canonical mode.
func StartRecorderAs(t testing.TB, env []string, extra []string, paste string) *Recorder {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "typed.txt")
	watch, err := testwait.WatchFile(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { watch.Close() })
	title := fmt.Sprintf("yazrec-%d", time.Now().UnixNano())
	args := append([]string{"-title", title}, extra...)
	// The shell creates the file (the redirection) after stty has run: once
	// it exists, keys land in a non-canonical terminal, and cat reads them
	// whenever it starts.
	// allowSendEvents: Settled's marker is a synthetic key event.
	if paste != "" {
		args = append(args, "-xrm", "*VT100.translations: #override "+paste)
	}
	args = append(args, "-xrm", "*allowSendEvents: true", "-e", "sh", "-c", `stty -icanon; exec cat > "$0"`, file)
	return start(t, env, "xterm", args, file, watch)
}

// StartTerminal opens terminal (xterm, urxvt: one that takes -title and
// -e) as a user runs it, with no resources of ours, as a recorder. Its
// window takes no synthetic keys: Settled does not work on it.
func StartTerminal(t testing.TB, env []string, terminal string) *Recorder {
	t.Helper()
	if _, err := exec.LookPath(terminal); err != nil {
		t.Fatalf("%s is needed for this test (scripts/install-deps.sh installs it): %v", terminal, err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "typed.txt")
	watch, err := testwait.WatchFile(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { watch.Close() })
	title := fmt.Sprintf("yazterm-%d", time.Now().UnixNano())
	args := []string{"-title", title, "-e", "sh", "-c", `stty -icanon; exec cat > "$0"`, file}
	return start(t, env, terminal, args, file, watch)
}

// start runs a recorder's terminal (its title in args[1]).
func start(t testing.TB, env []string, terminal string, args []string, file string, watch *testwait.File) *Recorder {
	t.Helper()
	title := args[1]
	cmd := exec.Command(terminal, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", terminal, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		testwait.Closed(t, done, "the killed process's end")
	})
	ctx := testwait.Context(t)
	// Viewable (mapped), not only named: the focus can be given only to
	// a viewable window (SetInputFocus on one not mapped yet is BadMatch,
	// seen under load).
	out := RunTool(ctx, t, env, "xdotool", "search", "--sync", "--onlyvisible", "--name", title)
	win := strings.Fields(out)[0]
	exists := func() bool { _, err := os.Stat(file); return err == nil }
	if err := testwait.Until(ctx, exists, watch); err != nil {
		t.Fatalf("the recorder's shell did not start: %v", err)
	}
	return &Recorder{Env: env, Win: win, File: file, watch: watch}
}

// NewRecorder is a Recorder of a terminal the caller started (a Wayland
// terminal, say), whose shell writes what it receives to file; win may be
// empty.
func NewRecorder(t testing.TB, env []string, win, file string) *Recorder {
	t.Helper()
	watch, err := testwait.WatchFile(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { watch.Close() })
	return &Recorder{Env: env, Win: win, File: file, watch: watch}
}

// Focus gives the recorder the X input focus.
func (r *Recorder) Focus(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	RunTool(ctx, t, r.Env, "xdotool", "windowfocus", "--sync", r.Win)
}

// Changed is a testwait.Source: the file changed.
func (r *Recorder) Changed() <-chan struct{} { return r.watch.Changed() }

// WaitFor waits (up to testwait.Hang) until the window received exactly want, and
// fails with what it received when it got something else: more bytes than
// want, or not all of them in time.
func (r *Recorder) WaitFor(t testing.TB, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Hang)
	defer cancel()
	var got []byte
	testwait.Until(ctx, func() bool {
		got, _ = r.read()
		return string(got) == want || len(got) > len(want)
	}, r.watch)
	if string(got) != want {
		t.Fatalf("window received %q, want %q", got, want)
	}
}

// settledMarker is what Settled sends: ASCII, so xdotool types it without
// remapping a key. Every read of the recorder leaves it out.
const settledMarker = "@settled@"

// Settled returns everything the window received from keys sent before
// the call, once all of them have arrived: it sends the window a marker
// (a synthetic key event to the window itself, which the recorder's xterm
// accepts: the focus stays where it was) and waits until the marker has
// arrived. The X server delivers events in the order it made them, so a
// late key (an Enter typed after the text) is in the result, without
// guessing how long to wait for it. (A paste is not a key: its text comes
// through the selection owner and is not ordered with the keys; wait for
// it first.)
func (r *Recorder) Settled(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Hang)
	defer cancel()
	before, _ := os.ReadFile(r.File)
	want := strings.Count(string(before), settledMarker) + 1
	RunTool(ctx, t, r.Env, "xdotool", "type", "--window", r.Win, "--", settledMarker)
	var got string
	if testwait.Until(ctx, func() bool {
		b, _ := os.ReadFile(r.File)
		got = string(b)
		return strings.Count(got, settledMarker) >= want
	}, r.watch) != nil {
		t.Fatalf("the window never received the marker %q; it holds %q", settledMarker, got)
	}
	return strings.ReplaceAll(got, settledMarker, "")
}

// read is the file without the markers Settled sent.
func (r *Recorder) read() ([]byte, error) {
	b, err := os.ReadFile(r.File)
	return bytes.ReplaceAll(b, []byte(settledMarker), nil), err
}

// Contents is everything the window received so far.
func (r *Recorder) Contents(t testing.TB) string {
	t.Helper()
	b, err := r.read()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// RunTool runs an X tool and returns its stdout; failure fails the test.
func RunTool(ctx context.Context, t testing.TB, env []string, name string, args ...string) string {
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

// SetClip puts s on the CLIPBOARD (xclip stays as its owner until the X
// server ends) and returns once the clipboard holds it: xclip returns
// before its helper has taken the clipboard, so SetClip waits for the
// new owner (XFixes) and then reads the clipboard back.
func SetClip(ctx context.Context, t testing.TB, env []string, s string) {
	t.Helper()
	SetClipAs(ctx, t, env, "", s)
}

// SetClipAs is SetClip with a target type ("image/png"; "": text).
func SetClipAs(ctx context.Context, t testing.TB, env []string, target, s string) {
	t.Helper()
	w := WatchSelection(t, env, "CLIPBOARD")
	defer w.Close()
	args := []string{"-selection", "clipboard", "-i"}
	if target != "" {
		args = append(args, "-t", target)
	}
	cmd := exec.CommandContext(ctx, "xclip", args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(s)
	if err := cmd.Run(); err != nil {
		t.Fatalf("xclip -i: %v", err)
	}
	w.Owned(t)
	if got := ClipAs(ctx, env, target); got != s {
		t.Fatalf("the clipboard holds %q once xclip -i owns it, want %q", got, s)
	}
}

// Clip reads the CLIPBOARD; "" when it holds no text.
func Clip(ctx context.Context, env []string) string {
	return ClipAs(ctx, env, "")
}

// ClipAs reads the CLIPBOARD as target ("": text); "" when it holds none.
func ClipAs(ctx context.Context, env []string, target string) string {
	args := []string{"-selection", "clipboard", "-o"}
	if target != "" {
		args = append(args, "-t", target)
	}
	cmd := exec.CommandContext(ctx, "xclip", args...)
	cmd.Env = env
	out, _ := cmd.Output()
	return string(out)
}

// HideTool returns env with a PATH that has every program of env's PATH
// but name (symbolic links in a folder of the test).
func HideTool(t testing.TB, env []string, name string) []string {
	t.Helper()
	dir := t.TempDir()
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range strings.Split(path, ":") {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if e.Name() == name {
				continue
			}
			_ = os.Symlink(filepath.Join(d, e.Name()), filepath.Join(dir, e.Name()))
		}
	}
	return append(WithoutEnv(env, "PATH"), "PATH="+dir)
}
