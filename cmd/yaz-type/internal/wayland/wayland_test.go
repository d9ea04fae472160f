package wayland_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yaz-type/internal/wayland"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/internal/testx"
	"github.com/yazses/yazses/lib/untrusted"
)

// The sentence the typing tests share, with a check mark outside every legacy
// keysym set and letters whose upper case xdotool alone gets wrong.
const unicodeText = "Grüße, Ünïcödé ✓"

// The recording terminal and the tools are internal/testx's, shared with
// test/e2e and x11's tests; these names keep the tests short.
type (
	lockedBuffer = testwait.Buffer
	recorder     = testx.Recorder
)

var (
	withoutEnv = testx.WithoutEnv
	runTool    = testx.RunTool
)

// startSway starts a headless sway (as nobody when the test runs as root:
// sway refuses root) and returns an environment for its clients.
// A missing sway fails the test: CI installs it (scripts/install-deps.sh).
func startSway(t testing.TB) []string {
	t.Helper()
	env, _ := startSwayKill(t)
	return env
}

// startSwayKill is startSway that also returns a function that kills sway
// and returns once it has exited.
func startSwayKill(t testing.TB) ([]string, func()) {
	t.Helper()
	for _, tool := range []string{"sway", "swaymsg", "wtype", "foot", "wl-copy", "wl-paste", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed for this test (scripts/install-deps.sh installs it): %v", tool, err)
		}
	}
	dir := t.TempDir()
	rt := filepath.Join(dir, "rt")
	if err := os.Mkdir(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "config")
	// Sway runs a config's exec once its sockets are up, with their names
	// in the environment: the ready file (moved into place whole) is the
	// event the test waits for.
	ready := filepath.Join(rt, "ready")
	config := "xwayland disable\noutput HEADLESS-1 resolution 800x600\n" +
		`exec sh -c 'echo "$WAYLAND_DISPLAY $SWAYSOCK" > "$XDG_RUNTIME_DIR/ready.tmp" && mv "$XDG_RUNTIME_DIR/ready.tmp" "$XDG_RUNTIME_DIR/ready"'` + "\n"
	if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	watch, err := testwait.WatchFile(ready)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	args := []string{"sway", "-c", conf}
	if os.Geteuid() == 0 {
		// nobody must reach the runtime dir and the config.
		for _, d := range []string{dir, filepath.Dir(dir)} {
			if err := os.Chmod(d, 0o711); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(conf, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(rt, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		args = append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "XDG_RUNTIME_DIR=" + rt,
		"WLR_BACKENDS=headless", "WLR_RENDERER=pixman", "WLR_LIBINPUT_NO_DEVICES=1",
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	log := &lockedBuffer{} // read on the timeout path while sway runs
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sway: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var killed sync.Once
	kill := func() {
		killed.Do(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		})
	}
	t.Cleanup(kill)
	// The wait ends early if sway exits.
	ctx, cancel := context.WithCancel(testwait.Context(t))
	defer cancel()
	go func() {
		select {
		case err := <-done:
			done <- err
			cancel()
		case <-ctx.Done():
		}
	}()
	var names []string
	isReady := func() bool {
		b, _ := os.ReadFile(ready)
		names = strings.Fields(string(b))
		return len(names) == 2
	}
	if err := testwait.Until(ctx, isReady, watch); err != nil {
		t.Fatalf("sway did not start (%v):\n%s", err, log.String())
	}
	env := append(withoutEnv(os.Environ(), "DISPLAY", "WAYLAND_DISPLAY", "SWAYSOCK", "XDG_RUNTIME_DIR"),
		"XDG_RUNTIME_DIR="+rt, "WAYLAND_DISPLAY="+names[0], "SWAYSOCK="+names[1])
	wayland.SeatKeyboard(t, env)
	return env, kill
}

// swaySpy is a testwait.Source that changes at each window event of sway
// (a window opened, focused, closed), from the call on.
func swaySpy(t testing.TB, env []string) *testwait.Buffer {
	t.Helper()
	out := &testwait.Buffer{}
	// Unbuffered, so that each event reaches the test as it comes.
	cmd := exec.Command("stdbuf", "-o0", "swaymsg", "-m", "-t", "subscribe", `["window", "tick"]`)
	cmd.Env = env
	cmd.Stdout = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		testwait.Closed(t, done, "swaymsg subscribe's end")
	})
	// Sway sends a subscriber of ticks a first tick at once: from then on
	// the subscription is live.
	if err := testwait.Until(testwait.Context(t), func() bool { return strings.Contains(out.String(), `"first": true`) }, out); err != nil {
		t.Fatalf("swaymsg subscribe: no first tick: %q", out.String())
	}
	return out
}

// startFoot opens a foot terminal whose shell writes what it receives to a
// file, and waits until it has the keyboard focus.
func startFoot(t testing.TB, env []string) *recorder {
	t.Helper()
	return startFootApp(t, env, "foot")
}

// startFootApp is startFoot with another app_id: one that is not a
// terminal's gets the Ctrl+V chord, which foot does not paste with.
func startFootApp(t testing.TB, env []string, appID string) *recorder {
	t.Helper()
	file := filepath.Join(t.TempDir(), "typed.txt")
	watch, err := testwait.WatchFile(file)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	spy := swaySpy(t, env)
	cmd := exec.Command("foot", "-c", "/dev/null", "-a", appID, "sh", "-c", `stty -icanon; exec cat > "$0"`, file)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start foot: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	// Foot has the focus, and its shell has set the terminal to
	// non-canonical mode: the redirection that creates the file comes
	// after stty, so keys sent from then on wait in the terminal until cat
	// (which the shell becomes next) reads them. Both are re-checked at
	// each window event and each change of the file.
	ctx := testwait.Context(t)
	var tg wayland.Target
	ready := func() bool {
		tg, err = wayland.SwayFocus(ctx, env)
		_, statErr := os.Stat(file)
		return err == nil && tg.Focus == FocusWindow && tg.AppID == appID && statErr == nil
	}
	if testwait.Until(ctx, ready, spy, watch) != nil {
		t.Fatalf("foot never had the focus with its shell started: %+v %v", tg, err)
	}
	return testx.NewRecorder(t, env, "", file)
}

func swaymsg(t *testing.T, env []string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	runTool(ctx, t, env, "swaymsg", args...)
}

func TestWaylandWtypeTypesUnicodeIntact(t *testing.T) {
	env := startSway(t)
	rec := startFoot(t, env)
	typer, err := Open(Wtype, Options{Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(typer.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	used, err := typer.Type(ctx, unicodeText+"\nnext")
	if err != nil {
		t.Fatalf("Type: %v", err)
	}
	if used != Wtype {
		t.Errorf("used = %q, want wtype", used)
	}
	rec.WaitFor(t, unicodeText+" next")
}

// An empty workspace has the focus: nothing is typed, and "auto" does not
// fall back to another backend.
func TestWaylandNoTarget(t *testing.T) {
	env := startSway(t)
	rec := startFoot(t, env)
	swaymsg(t, env, "workspace", "2")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range []string{Wayland, Wtype, Clipboard, Ydotool} {
		inj, _ := New(name, Options{Environ: env})
		t.Cleanup(inj.Close)
		if f, err := inj.Focus(ctx); err != nil || f != FocusNone {
			t.Errorf("%s: Focus = %v, %v; want none", name, f, err)
		}
		if err := inj.Type(ctx, untrusted.Typed("secret")); !errors.Is(err, ErrNoTarget) {
			t.Errorf("%s: Type = %v, want ErrNoTarget", name, err)
		}
	}
	typer, _ := Open(Auto, Options{Environ: env})
	t.Cleanup(typer.Close)
	if used, err := typer.Type(ctx, "secret"); !errors.Is(err, ErrNoTarget) || used != Wayland {
		t.Errorf("auto: Type = %q, %v; want wayland, ErrNoTarget", used, err)
	}
	// Back on the terminal's workspace the same call types.
	swaymsg(t, env, "workspace", "1")
	if _, err := typer.Type(ctx, "after"); err != nil {
		t.Fatalf("Type: %v", err)
	}
	rec.WaitFor(t, "after")
}

// Outside sway a Wayland session cannot tell the focus: the default types,
// RequireFocus refuses.
func TestWaylandUnknownFocus(t *testing.T) {
	env := startSway(t)
	rec := startFoot(t, env)
	env = withoutEnv(env, "SWAYSOCK")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	strict, _ := New(Wtype, Options{Environ: env, RequireFocus: true})
	t.Cleanup(strict.Close)
	if f, err := strict.Focus(ctx); err != nil || f != FocusUnknown {
		t.Fatalf("Focus = %v, %v; want unknown", f, err)
	}
	if err := strict.Type(ctx, untrusted.Typed("no")); !errors.Is(err, ErrNoTarget) {
		t.Errorf("RequireFocus: Type = %v, want ErrNoTarget", err)
	}
	inj, _ := New(Wtype, Options{Environ: env})
	t.Cleanup(inj.Close)
	if err := inj.Type(ctx, untrusted.Typed("yes")); err != nil {
		t.Fatalf("Type: %v", err)
	}
	rec.WaitFor(t, "yes")
}

func TestWaylandClipboardPastesAndRestores(t *testing.T) {
	env := startSway(t)
	rec := startFoot(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const before = "copied before: Ärger ✓"
	c := exec.CommandContext(ctx, "wl-copy")
	c.Env = env
	c.Stdin = strings.NewReader(before)
	if err := c.Run(); err != nil {
		t.Fatalf("wl-copy: %v", err)
	}
	inj, _ := New(Clipboard, Options{Environ: env})
	t.Cleanup(inj.Close)
	if err := inj.Type(ctx, untrusted.Typed(unicodeText+"\r\nend")); err != nil {
		t.Fatalf("Type: %v", err)
	}
	// foot is a terminal: ctrl+shift+v.
	rec.WaitFor(t, unicodeText+" end")
	if got := runTool(ctx, t, env, "wl-paste", "--no-newline"); got != before {
		t.Errorf("clipboard after paste = %q, want %q", got, before)
	}
}
