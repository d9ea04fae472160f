package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testportal"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/internal/testwl"
	"github.com/yazses/yazses/internal/testx"
)

// text58 is the 58 characters of the typing latency goals (docs/performance.md).
const text58 = "And so, my fellow Americans, ask not what your country can"

// BenchmarkReleaseToLastChar: the key's release (hold.stop) to the last
// character of a 58-character dictation in the window, through the real
// daemon with a decoder that answers at once (the fake one), route by
// route on this machine: x11 (XTEST in the daemon, into xterm under
// Xvfb), wayland (the virtual keyboard in the daemon, into foot under
// headless sway), wtype (the same with wtype), and portal (Debian's
// xdg-desktop-portal 1.16 to the test backend, the GNOME-like desktop of
// TestPortalDesktop: to the last key the backend took). The goal
// for wayland: at most 120 ms. Each iteration records the speech once
// (a few seconds) before the release; the first, a warm-up that also
// gives the headless seat its keyboard, is not counted. Run with
// -benchtime=5x.
func BenchmarkReleaseToLastChar(b *testing.B) {
	for _, route := range []string{"x11", "wayland", "wtype", "portal"} {
		b.Run("route="+route, func(b *testing.B) {
			desk := benchDesktop(b, route)
			content, src := desk.content, desk.src
			size := func() int { return len(content()) }
			cfg := dictationConfig(answerWAV(), true).With("dictation.inject", q(desk.inject))
			d := newDaemon(b, cfg, append(desk.env, "YAZ_FAKE_TEXT="+text58)...)
			d.Level = "info"
			d.Start()
			d.WaitRunning("gate", "speak", "decode")
			c := d.Client()
			speech := wavDuration(b, answerWAV())
			var lat []time.Duration
			b.ResetTimer()
			b.StopTimer()
			for i := range b.N + 1 {
				d.holdWhileSpeaking(c, speech)
				before := size()
				t0 := time.Now()
				r := d.stopHold(c)
				if r.Outcome != "typed" || r.Backend != route {
					b.Fatalf("hold.stop = %+v, want typed with %s\n%s", r, route, d.LogTail(20))
				}
				if i == 0 {
					continue // the warm-up: the next speech gives its keys time to arrive
				}
				var last time.Time
				err := testwait.Until(testwait.Context(b), func() bool {
					if size() >= before+len(text58) {
						last = time.Now()
						return true
					}
					return false
				}, src)
				if err != nil {
					b.Fatalf("the text never arrived: %d of %d", size()-before, len(text58))
				}
				lat = append(lat, last.Sub(t0))
				if got := content()[before:]; got != text58 {
					b.Fatalf("the window got %q, want %q", got, text58)
				}
			}
			med := median(lat)
			b.ReportMetric(ms(med), "release-to-last-char-ms")
			fmt.Printf("BenchmarkReleaseToLastChar route=%s: release → last of 58 characters, median of %d: %s ms (all: %v)\n",
				route, len(lat), formatMs(med), lat)
		})
	}
}

// benchDesk is a desktop a route types into: the daemon's environment,
// its dictation.inject, the window's file ("" for the portal, whose test
// backend holds what it took), what has arrived so far and a source that
// changes when that grows.
type benchDesk struct {
	env     []string
	inject  string
	file    string
	content func() string
	src     testwait.Source
}

// benchDesktop starts the desktop route types into.
func benchDesktop(b *testing.B, route string) benchDesk {
	b.Helper()
	switch route {
	case "x11":
		x := startX(b)
		rec := startRecorder(b, x)
		rec.Focus(b)
		return benchDesk{x.DaemonEnv(), route, rec.File, func() string { return readFile(rec.File) }, rec}
	case "portal":
		p := testportal.Start(b, testportal.Options{Layout: "us"})
		p.Backend.Expect(text58)
		wl := testwl.Start(b, p.Keymap())
		return benchDesk{[]string{"DBUS_SESSION_BUS_ADDRESS=" + p.Addr, wl.Env[0], "DISPLAY="}, route, "",
			p.Backend.Typed, &p.Backend.Changed}
	}
	sway := startBenchSway(b)
	file := startBenchFoot(b, sway)
	rec := testx.NewRecorder(b, sway, "", file)
	env := []string{"DISPLAY=", "SWAYSOCK=" + getenv(sway, "SWAYSOCK"),
		"WAYLAND_DISPLAY=" + filepath.Join(getenv(sway, "XDG_RUNTIME_DIR"), getenv(sway, "WAYLAND_DISPLAY"))}
	inject := route
	if route == "wayland" {
		// auto: the daemon makes its virtual keyboard when it starts, as
		// on a desktop, so the terminal has bound its keyboard before the
		// first text (the headless seat has no keyboard of its own).
		inject = "auto"
	}
	return benchDesk{env, inject, file, func() string { return readFile(file) }, rec}
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func getenv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// startBenchSway starts a headless sway (as nobody when this runs as
// root: sway refuses root) and returns its clients' environment, once its
// IPC socket answers. The sockets' appearance is watched (inotify).
func startBenchSway(b *testing.B) []string {
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

// startBenchFoot opens foot with a shell that writes what it receives to
// a file, and waits (on sway's window events) until it has the focus and
// (inotify) the file exists.
func startBenchFoot(b *testing.B, env []string) string {
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
