package x11_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/x11"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/internal/testx"
	"github.com/yazses/yazses/lib/untrusted"
)

// The sentence the typing tests share, with a check mark outside every legacy
// keysym set and letters whose upper case xdotool alone gets wrong.
const unicodeText = "Grüße, Ünïcödé ✓"

// The X server, the recording xterm and the X tools are internal/testx's,
// shared with test/e2e; these names keep the tests short.

// startX starts a private Xvfb and returns an environment that points at it.
// A missing Xvfb fails the test: CI installs it (scripts/install-deps.sh).
func startX(t testing.TB) []string {
	t.Helper()
	return startXWith(t)
}

// startXWith starts Xvfb with extra arguments.
func startXWith(t testing.TB, xvfbArgs ...string) []string {
	t.Helper()
	env, _ := startXvfb(t, xvfbArgs...)
	return env
}

// startXvfb starts Xvfb and returns the environment and its pid.
func startXvfb(t testing.TB, xvfbArgs ...string) ([]string, int) {
	t.Helper()
	x := testx.Start(t, xvfbArgs...)
	return x.Env, x.Pid
}

// recorder is an xterm (or another terminal) that records what it receives.
type recorder = testx.Recorder

func startRecorder(t testing.TB, env []string) *recorder {
	t.Helper()
	return testx.StartRecorder(t, env)
}

func startRecorderAs(t testing.TB, env []string, extra []string, paste string) *recorder {
	t.Helper()
	return testx.StartRecorderAs(t, env, extra, paste)
}

var (
	runTool  = testx.RunTool
	setClip  = testx.SetClip
	hideTool = testx.HideTool
)

// With no window focused nothing is typed, even though the pointer is over
// a window that would receive the keys (the X focus is PointerRoot).
func TestXdotoolNoTarget(t *testing.T) {
	env := startX(t)
	rec := startRecorder(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runTool(ctx, t, env, "xdotool", "mousemove", "--sync", "--window", rec.Win, "20", "20")
	for _, name := range []string{X11, Xdotool, Clipboard} {
		inj, err := New(name, Options{Environ: env})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(inj.Close)
		f, err := inj.Focus(ctx)
		if err != nil || f != FocusNone {
			t.Errorf("%s: Focus = %v, %v; want none", name, f, err)
		}
		if err := inj.Type(ctx, untrusted.Typed("secret words")); !errors.Is(err, ErrNoTarget) {
			t.Errorf("%s: Type = %v, want ErrNoTarget", name, err)
		} else if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "words") {
			t.Errorf("%s: error %q shows the text", name, err)
		}
	}
	auto, err := Open(Auto, Options{Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(auto.Close)
	if used, err := auto.Type(ctx, "secret words"); !errors.Is(err, ErrNoTarget) || used != X11 {
		t.Errorf("auto: Type = %q, %v; want x11, ErrNoTarget (no fallback)", used, err)
	}
	// Settled's marker comes after any key the backends sent.
	if got := rec.Settled(t); got != "" {
		t.Fatalf("window received %q with no focus", got)
	}
	// The check above can fail: keys sent anyway do reach the window.
	cmd := exec.CommandContext(ctx, "xdotool", "type", "--file", "-")
	cmd.Env = env
	cmd.Stdin = strings.NewReader("probe")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("xdotool type: %v: %s", err, out)
	}
	rec.WaitFor(t, "probe")
}

func TestClipboardPastesAndRestores(t *testing.T) {
	for _, tool := range []string{"xclip", "xsel"} {
		t.Run(tool, func(t *testing.T) {
			if _, err := exec.LookPath(tool); err != nil {
				t.Fatalf("%s is needed for this test (scripts/install-deps.sh installs it): %v", tool, err)
			}
			env := startX(t)
			if tool == "xsel" {
				env = hideTool(t, env, "xclip")
			}
			rec := startRecorder(t, env)
			rec.Focus(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// Something the person had copied before.
			const before = "copied before: Ärger ✓"
			setClip(ctx, t, env, before)
			inj, err := New(Clipboard, Options{Environ: env})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(inj.Close)
			if err := inj.Type(ctx, untrusted.Typed(unicodeText+"\nsecond line")); err != nil {
				t.Fatalf("Type: %v", err)
			}
			// xterm is a terminal: Shift+Insert pasted, no newline (so no Enter).
			rec.WaitFor(t, unicodeText+" second line")
			if got := getClip(ctx, t, env); got != before {
				t.Errorf("clipboard after paste = %q, want %q restored", got, before)
			}
		})
	}
}

// An empty clipboard is left empty, not holding the transcript.
func TestClipboardClearsWhenEmptyBefore(t *testing.T) {
	env := startX(t)
	rec := startRecorder(t, env)
	rec.Focus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inj, err := New(Clipboard, Options{Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inj.Close)
	if err := inj.Type(ctx, untrusted.Typed("private words")); err != nil {
		t.Fatalf("Type: %v", err)
	}
	rec.WaitFor(t, "private words")
	cmd := exec.CommandContext(ctx, "xclip", "-selection", "clipboard", "-o")
	cmd.Env = env
	out, _ := cmd.Output()
	if strings.Contains(string(out), "private") {
		t.Errorf("clipboard still holds the text: %q", out)
	}
}

func TestX11FocusReadsTerminalClass(t *testing.T) {
	env := startX(t)
	rec := startRecorder(t, env)
	rec.Focus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tg, err := x11.XpropFocus(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if tg.Focus != FocusWindow || len(tg.Class) != 2 || tg.Class[1] != "XTerm" {
		t.Fatalf("xdotool.Focus = %+v, want a window of class XTerm", tg)
	}
	xt, err := x11.ProtocolFocus(ctx, env)
	if err != nil || xt.Focus != FocusWindow || !slices.Equal(xt.Class, tg.Class) {
		t.Fatalf("focus through the protocol = %+v, %v; want %v", xt, err, tg.Class)
	}
}

func getClip(ctx context.Context, t *testing.T, env []string) string {
	t.Helper()
	return runTool(ctx, t, env, "xclip", "-selection", "clipboard", "-o")
}

// Under an EWMH window manager (openbox) the focus comes from
// _NET_ACTIVE_WINDOW: none before any window, the xterm once it is active,
// none again when it is minimised or closed.
func TestX11WindowManager(t *testing.T) {
	if _, err := exec.LookPath("openbox"); err != nil {
		t.Fatalf("openbox is needed for this test (scripts/install-deps.sh installs it): %v", err)
	}
	env := startX(t)
	conf := filepath.Join(t.TempDir(), "rc.xml")
	if err := os.WriteFile(conf, []byte(`<openbox_config xmlns="http://openbox.org/3.4/rc"/>`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spy := rootSpy(t, env)
	wm := exec.Command("openbox", "--sm-disable", "--config-file", conf)
	wm.Env = env
	wm.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := wm.Start(); err != nil {
		t.Fatal(err)
	}
	wmDone := make(chan error, 1)
	go func() { wmDone <- wm.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-wm.Process.Pid, syscall.SIGKILL)
		<-wmDone
	})
	ctx := testwait.Context(t)
	// The window manager is up once it has put its check window on root.
	wmUp := func() bool {
		return strings.Contains(runTool(ctx, t, env, "xprop", "-root", "_NET_SUPPORTING_WM_CHECK"), "window id")
	}
	if err := testwait.Until(ctx, wmUp, spy); err != nil {
		t.Fatal("openbox did not start")
	}
	// Both ways of telling the focus agree: the protocol (x11) and xprop
	// (xdotool).
	inj, err := New(X11, Options{Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inj.Close)
	xd, _ := New(Xdotool, Options{Environ: env})
	t.Cleanup(xd.Close)
	focus := func(want Focus) {
		t.Helper()
		for _, i := range []Injector{inj, xd} {
			var f Focus
			// The window manager acts asynchronously, and on a busy
			// machine late: ask again at each change of the root's
			// properties (_NET_ACTIVE_WINDOW, _NET_CLIENT_LIST when a
			// window closes), up to testwait.Hang.
			_ = testwait.Until(ctx, func() bool {
				f, err = i.Focus(ctx)
				return err == nil && f == want
			}, spy)
			if f != want || err != nil {
				t.Fatalf("%s: Focus = %v, %v; want %v", i.Name(), f, err, want)
			}
		}
	}
	focus(FocusNone)
	rec := startRecorder(t, env)
	runTool(ctx, t, env, "xdotool", "windowactivate", "--sync", rec.Win)
	focus(FocusWindow)
	if err := inj.Type(ctx, untrusted.Typed(unicodeText)); err != nil {
		t.Fatalf("Type: %v", err)
	}
	rec.WaitFor(t, unicodeText)
	runTool(ctx, t, env, "xdotool", "windowminimize", "--sync", rec.Win)
	focus(FocusNone)
	if err := inj.Type(ctx, untrusted.Typed("hidden")); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("Type while minimised = %v, want ErrNoTarget", err)
	}
	if got := rec.Settled(t); got != unicodeText {
		t.Fatalf("window received %q", got)
	}
	// Active again, then closed: openbox may leave the closed window in
	// _NET_ACTIVE_WINDOW; it is no target.
	runTool(ctx, t, env, "xdotool", "windowactivate", "--sync", rec.Win)
	focus(FocusWindow)
	runTool(ctx, t, env, "xdotool", "windowkill", rec.Win)
	focus(FocusNone)
}

// rootSpy is a testwait.Source that changes at each change of a property
// of the root window (xprop -spy), from the call on.
func rootSpy(t *testing.T, env []string) *testwait.Buffer {
	t.Helper()
	out := &testwait.Buffer{}
	// Unbuffered: xprop writes through stdio, and ends a value's line only
	// when the next one comes.
	cmd := exec.Command("stdbuf", "-o0", "xprop", "-root", "-spy")
	cmd.Env = env
	cmd.Stdout = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		testwait.Closed(t, done, "xprop -spy's end")
	})
	// It watches once it reports a property set after it started. It
	// selects the root's property changes only after it has printed what
	// is there, so a change made before then is never reported: on a busy
	// machine the first set can come too early, and one that has not
	// shown within a second is made again (with a new value: a set to
	// the same value is still a change, but say so plainly).
	ctx := testwait.Context(t)
	seen := func() bool { return strings.Contains(out.String(), "_YAZ_SPY") }
	for attempt := 1; !seen(); attempt++ {
		runTool(ctx, t, env, "xprop", "-root", "-f", "_YAZ_SPY", "8s", "-set", "_YAZ_SPY", fmt.Sprintf("watching %d", attempt))
		try, cancel := context.WithTimeout(ctx, time.Second)
		_ = testwait.Until(try, seen, out)
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("xprop -spy never reported a change (%d sets): %q", attempt, out.String())
		}
	}
	return out
}

// A window that is not a terminal gets ctrl+v. The window here is an xterm
// under another class name ("Editor") that pastes on ctrl+v alone (and
// would ignore ctrl+shift+v).
func TestClipboardCtrlVOutsideTerminals(t *testing.T) {
	env := startX(t)
	rec := startRecorderAs(t, env, []string{"-name", "editor", "-class", "Editor"}, "!Ctrl <Key>v: insert-selection(CLIPBOARD)")
	rec.Focus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tg, err := x11.XpropFocus(ctx, env)
	if err != nil || tg.Focus != FocusWindow || slices.ContainsFunc(tg.Class, backend.IsTerminal) {
		t.Fatalf("xdotool.Focus = %+v, %v; want a window that is no terminal", tg, err)
	}
	// The check can fail: ctrl+shift+v does not paste here (the terminal
	// gets a ^V).
	// The key is either a paste or a ^V: the ^V arriving (and nothing
	// else) shows it did not paste.
	setClip(ctx, t, env, "wrong chord")
	runTool(ctx, t, env, "xdotool", "key", "--clearmodifiers", "ctrl+shift+v")
	const before = "\x16"
	rec.WaitFor(t, before)
	inj, _ := New(Clipboard, Options{Environ: env})
	t.Cleanup(inj.Close)
	if err := inj.Type(ctx, untrusted.Typed(unicodeText)); err != nil {
		t.Fatalf("Type: %v", err)
	}
	rec.WaitFor(t, before+unicodeText)
	if got := getClip(ctx, t, env); got != "wrong chord" {
		t.Errorf("clipboard after paste = %q, want it restored", got)
	}
}
