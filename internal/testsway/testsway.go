// Package testsway is a headless sway for tests (as nobody when the test
// runs as root: sway refuses root) and a recording foot terminal in it.
// Each test gets a sway of its own, in an environment the package builds:
// nothing of the caller's Wayland or X session is read or reached.
package testsway

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/internal/testx"
)

// Start starts a headless sway (as nobody when this runs as
// root: sway refuses root) and returns its clients' environment, once its
// IPC socket answers. The sockets' appearance is watched (inotify).
func Start(b testing.TB) []string {
	b.Helper()
	for _, tool := range []string{"sway", "swaymsg", "foot", "wtype", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Fatalf("%s is needed (scripts/install-deps.sh installs it): %v", tool, err)
		}
	}
	dir, err := os.MkdirTemp("", "ysw-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	rt := filepath.Join(dir, "rt")
	conf := filepath.Join(dir, "config")
	if err := os.Mkdir(rt, 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte("xwayland disable\noutput HEADLESS-1 resolution 800x600\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	uid := os.Geteuid()
	args := []string{"sway", "-c", conf}
	if uid == 0 {
		uid = 65534
		if err := os.Chmod(dir, 0o711); err != nil {
			b.Fatal(err)
		}
		if err := os.Chown(rt, uid, uid); err != nil {
			b.Fatal(err)
		}
		args = append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "XDG_RUNTIME_DIR=" + rt,
		"WLR_BACKENDS=headless", "WLR_RENDERER=pixman", "WLR_LIBINPUT_NO_DEVICES=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	log := &testwait.Buffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		b.Fatalf("start sway: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	b.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		testwait.Closed(b, done, "sway to exit")
	})
	// setpriv execs sway: the pid is sway's, and so is its IPC socket's name.
	ipc := filepath.Join(rt, "sway-ipc."+strconv.Itoa(uid)+"."+strconv.Itoa(cmd.Process.Pid)+".sock")
	w, err := testwait.WatchFile(ipc)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	var env []string
	ready := func() bool {
		select {
		case <-done:
			return true
		default:
		}
		if _, err := os.Stat(ipc); err != nil {
			return false
		}
		entries, _ := os.ReadDir(rt)
		for _, e := range entries {
			if n := e.Name(); strings.HasPrefix(n, "wayland-") && !strings.HasSuffix(n, ".lock") {
				env = append(testx.WithoutEnv(os.Environ(), "DISPLAY", "WAYLAND_DISPLAY", "SWAYSOCK", "XDG_RUNTIME_DIR"),
					"XDG_RUNTIME_DIR="+rt, "WAYLAND_DISPLAY="+n, "SWAYSOCK="+ipc)
				return true
			}
		}
		return false
	}
	if err := testwait.Until(testwait.Context(b), ready, w, log); err != nil || env == nil {
		b.Fatalf("sway did not start: %v\n%s", err, log)
	}
	return env
}

// StartFoot opens foot with a shell that writes what it receives to
// a file, and waits (on sway's window events) until it has the focus and
// (inotify) the file exists.
func StartFoot(b testing.TB, env []string) string {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Hang)
	defer cancel()
	// A subscription to ticks gets one at once (first: true): then the
	// window events that follow are seen.
	events := exec.CommandContext(ctx, "swaymsg", "-m", "-t", "subscribe", `["window", "tick"]`)
	events.Env = env
	out, err := events.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := events.Start(); err != nil {
		b.Fatalf("swaymsg subscribe: %v", err)
	}
	defer func() { cancel(); _ = events.Wait() }()
	// The first tick, then the windows' events.
	subscribed, focused := make(chan struct{}), make(chan struct{})
	go func() {
		dec := json.NewDecoder(out)
		first := true
		for {
			var ev struct {
				First     bool   `json:"first"`
				Change    string `json:"change"`
				Container struct {
					AppID   string `json:"app_id"`
					Focused bool   `json:"focused"`
				} `json:"container"`
			}
			if dec.Decode(&ev) != nil {
				return
			}
			if first && ev.First {
				close(subscribed)
				first = false
				continue
			}
			if ev.Container.AppID == "foot" && ev.Container.Focused && slices.Contains([]string{"new", "focus"}, ev.Change) {
				close(focused)
				return
			}
		}
	}()
	testwait.Closed(b, subscribed, "swaymsg to subscribe to window events")
	file := filepath.Join(b.TempDir(), "typed.txt")
	w, err := testwait.WatchFile(file)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	cmd := exec.Command("foot", "-c", "/dev/null", "-a", "foot", "sh", "-c", `stty -icanon; exec cat > "$0"`, file)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start foot: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	b.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		testwait.Closed(b, done, "foot to exit")
	})
	testwait.Closed(b, focused, "foot to have the focus")
	if err := testwait.Until(ctx, func() bool { _, err := os.Stat(file); return err == nil }, w); err != nil {
		b.Fatal("foot's shell never opened its file")
	}
	return file
}
