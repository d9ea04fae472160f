// Package testportal runs Debian's real xdg-desktop-portal (the frontend,
// /usr/libexec/xdg-desktop-portal, package xdg-desktop-portal) on a private
// session bus, with a desktop backend of the test's own in place of
// xdg-desktop-portal-gnome or -kde: the frontend finds it through a
// .portal file in a test folder (XDG_DESKTOP_PORTAL_DIR) whose UseIn names
// the test's XDG_CURRENT_DESKTOP, and hands it every call of the
// RemoteDesktop and GlobalShortcuts portals, as it would hand GNOME's.
//
// The backend ([Backend]) implements org.freedesktop.impl.portal.
// RemoteDesktop and …GlobalShortcuts and the Session and Request objects
// they make, records what arrives, answers the consent dialog as the test
// says, and types like mutter: a keysym that arrives is looked up in a
// real XKB keymap (libxkbcommon's, through `xkbcli how-to-type`, package
// libxkbcommon-tools) in the first layout; one the layout lacks is dropped
// and counted, as mutter drops it; Shift+Insert pastes what the test's
// clipboard holds, as a window would. Caps_Lock locks and unlocks Caps
// Lock, shown on a keyboard LED in a folder laid out as /sys/class/leds
// ([Backend.LEDs]), and while it is locked a letter typed at the first or
// second level comes in its other case, as mutter types it. The text that
// arrives is what a window of that desktop would show.
//
// Waits are on events: the backend's [Backend.Changed] signal on every
// call, and the bus's NameOwnerChanged for the frontend coming and going;
// each is bounded by testwait.Hang.
package testportal

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/yazses/yazses/internal/testbus"
	"github.com/yazses/yazses/internal/testwait"
)

// Names of the test desktop.
const (
	Desktop     = "yazsestest"
	BackendName = "org.freedesktop.impl.portal.desktop." + Desktop
	Frontend    = "/usr/libexec/xdg-desktop-portal"
	portalName  = "org.freedesktop.portal.Desktop"
)

// AppID is YazSes's application id (lib/xdp's AppID, whose tests use
// this package: written out here).
const AppID = "io.github.yazses.YazSes"

// Options configure the test desktop.
type Options struct {
	// Layout is the XKB layout (or layouts, "us,gr") of the desktop's
	// keyboard; "" is "us".
	Layout string
	// Options are XKB options of the keyboard ("ctrl:nocaps").
	Options string
	// Refuse makes the consent dialog of RemoteDesktop.Start answer
	// "cancelled" (response 1).
	Refuse bool
	// Interfaces lists the backend interfaces the .portal file offers
	// ("RemoteDesktop", "GlobalShortcuts"); nil is both.
	Interfaces []string
	// Late leaves the frontend stopped: the test starts it with
	// StartFrontend (a portal that comes after its client, as at login).
	Late bool
	// RequireAppID refuses a GlobalShortcuts session to a caller the
	// frontend knows no application id of, as xdg-desktop-portal 1.21
	// and later do ("An app id is required"; the frontend answers the
	// caller with response 2). The frontend here (1.16) has no host
	// registry: it knows a program by its systemd unit's name.
	RequireAppID bool
	// BindResponse is the response code of a BindShortcuts that binds
	// (0 when unset): xdg-desktop-portal-gnome 48.0 answers a binding
	// that succeeded with an unset code, most often 2, and the shortcuts
	// it bound.
	BindResponse uint32
	// NoDesktopFile leaves out YazSes's .desktop file, which Start puts
	// where the frontend looks for applications (its XDG_DATA_HOME): a
	// frontend with the host registry (1.19 and later) takes the
	// application id only with it.
	NoDesktopFile bool
}

// Portal is a private session bus with the real frontend and the test's
// backend on it.
type Portal struct {
	T       testing.TB
	Dir     string
	Addr    string   // the bus address
	Env     []string // for the clients: this process's environment on the private bus
	Backend *Backend
	// FrontendLog is the frontend's stderr (--verbose).
	FrontendLog *testwait.Buffer

	opts  Options
	watch *dbus.Conn

	mu       sync.Mutex
	owner    string // the frontend's unique name; "" while none
	ownerSig testwait.Signal
	front    *exec.Cmd
	frontEnd chan struct{}
}

// Start starts the bus, the backend and the frontend, and waits until the
// frontend owns org.freedesktop.portal.Desktop. Everything stops when the
// test ends. A missing dbus-daemon, frontend or xkbcli fails the test:
// scripts/install-deps.sh installs them.
func Start(t testing.TB, opts Options) *Portal {
	t.Helper()
	for _, tool := range []string{"dbus-daemon", Frontend, "xkbcli"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed for this test (scripts/install-deps.sh installs it): %v", tool, err)
		}
	}
	if opts.Layout == "" {
		opts.Layout = "us"
	}
	if opts.Interfaces == nil {
		opts.Interfaces = []string{"RemoteDesktop", "GlobalShortcuts"}
	}
	// Not t.TempDir: a long test name makes the socket path too long.
	dir, err := os.MkdirTemp("", "ytp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &Portal{T: t, Dir: dir, opts: opts, FrontendLog: &testwait.Buffer{}}
	p.Addr = startBus(t, dir)
	p.Env = append(withoutEnv(os.Environ(), "DBUS_SESSION_BUS_ADDRESS", "XDG_CURRENT_DESKTOP", "XDG_DESKTOP_PORTAL_DIR"),
		"DBUS_SESSION_BUS_ADDRESS="+p.Addr)
	p.watchOwner()
	p.Backend = newBackend(t, p.Addr, opts)
	portals := filepath.Join(dir, "portals")
	if err := os.Mkdir(portals, 0o755); err != nil {
		t.Fatal(err)
	}
	var ifaces strings.Builder
	for _, i := range opts.Interfaces {
		ifaces.WriteString("org.freedesktop.impl.portal." + i + ";")
	}
	conf := fmt.Sprintf("[portal]\nDBusName=%s\nInterfaces=%s\nUseIn=%s\n", BackendName, ifaces.String(), Desktop)
	if err := os.WriteFile(filepath.Join(portals, Desktop+".portal"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if !opts.NoDesktopFile {
		apps := filepath.Join(dir, "data", "applications")
		if err := os.MkdirAll(apps, 0o755); err != nil {
			t.Fatal(err)
		}
		entry := "[Desktop Entry]\nType=Application\nName=YazSes\nExec=/bin/true\nNoDisplay=true\n"
		if err := os.WriteFile(filepath.Join(apps, AppID+".desktop"), []byte(entry), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !opts.Late {
		p.StartFrontend()
	}
	return p
}

// Bus starts a private session bus alone (for a test's own portal) and
// returns the environment of its clients; it stops when the test ends.
func Bus(t testing.TB) []string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ytp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	addr := startBus(t, dir)
	return append(withoutEnv(os.Environ(), "DBUS_SESSION_BUS_ADDRESS"), "DBUS_SESSION_BUS_ADDRESS="+addr)
}

// startBus runs a private dbus-daemon with its socket in dir and returns
// its address once it listens. It has no service folders: nothing is
// activated behind the test's back; the test starts the frontend itself.
func startBus(t testing.TB, dir string) string {
	t.Helper()
	return testbus.Start(t, dir).Addr
}

// watchOwner follows who owns org.freedesktop.portal.Desktop.
func (p *Portal) watchOwner() {
	t := p.T
	c, err := dbus.Connect(p.Addr, dbus.WithSignalHandler(dbus.NewSequentialSignalHandler()))
	if err != nil {
		t.Fatalf("connect the watcher: %v", err)
	}
	p.watch = c
	ch := make(chan *dbus.Signal, 16)
	c.Signal(ch)
	if err := c.AddMatchSignal(dbus.WithMatchSender("org.freedesktop.DBus"), dbus.WithMatchMember("NameOwnerChanged"), dbus.WithMatchArg(0, portalName)); err != nil {
		t.Fatalf("watch the portal's name: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for s := range ch {
			if s.Name != "org.freedesktop.DBus.NameOwnerChanged" || len(s.Body) != 3 {
				continue
			}
			owner, _ := s.Body[2].(string)
			p.mu.Lock()
			p.owner = owner
			p.mu.Unlock()
			p.ownerSig.Notify()
		}
	}()
	t.Cleanup(func() {
		c.Close()
		testwait.Closed(t, done, "the name watcher to end")
	})
}

// Owner is the frontend's unique name on the bus ("" while none).
func (p *Portal) Owner() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.owner
}

// StartFrontend starts xdg-desktop-portal and waits until it owns its
// name.
func (p *Portal) StartFrontend() {
	t := p.T
	t.Helper()
	cmd := exec.Command(Frontend, "--verbose")
	cmd.Env = append(withoutEnv(os.Environ(), "DBUS_SESSION_BUS_ADDRESS", "XDG_CURRENT_DESKTOP", "XDG_DESKTOP_PORTAL_DIR", "XDG_RUNTIME_DIR", "XDG_DATA_HOME", "DISPLAY", "WAYLAND_DISPLAY"),
		"DBUS_SESSION_BUS_ADDRESS="+p.Addr,
		"XDG_CURRENT_DESKTOP="+Desktop,
		"XDG_DESKTOP_PORTAL_DIR="+filepath.Join(p.Dir, "portals"),
		"XDG_RUNTIME_DIR="+p.Dir,
		"XDG_DATA_HOME="+filepath.Join(p.Dir, "data"),
		"HOME="+p.Dir,
		"GIO_USE_VFS=local",
	)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = p.FrontendLog, p.FrontendLog
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", Frontend, err)
	}
	end := make(chan struct{})
	go func() { _ = cmd.Wait(); close(end) }()
	p.mu.Lock()
	p.front, p.frontEnd = cmd, end
	p.mu.Unlock()
	t.Cleanup(func() { p.kill(cmd, end) })
	ctx := testwait.Context(t)
	err := testwait.Until(ctx, func() bool {
		select {
		case <-end:
			return true
		default:
		}
		return p.Owner() != ""
	}, &p.ownerSig, p.FrontendLog)
	select {
	case <-end:
		t.Fatalf("%s exited before it owned %s:\n%s", Frontend, portalName, p.FrontendLog)
	default:
	}
	if err != nil {
		t.Fatalf("waiting for %s to own %s: %v\n%s", Frontend, portalName, err, p.FrontendLog)
	}
}

// StopFrontend kills the frontend (the portal going away mid-session, as
// in a crash) and waits until its name is gone from the bus.
func (p *Portal) StopFrontend() {
	t := p.T
	t.Helper()
	p.mu.Lock()
	cmd, end := p.front, p.frontEnd
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	p.kill(cmd, end)
	if err := testwait.Until(testwait.Context(t), func() bool { return p.Owner() == "" }, &p.ownerSig); err != nil {
		t.Fatalf("waiting for %s to leave the bus: %v", portalName, err)
	}
}

func (p *Portal) kill(cmd *exec.Cmd, end chan struct{}) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	testwait.Closed(p.T, end, "xdg-desktop-portal to exit")
}

// Keymap is the desktop's keymap as a compositor hands it to its clients
// (`xkbcli compile-keymap`, libxkbcommon's xkb_keymap_get_as_string).
func (p *Portal) Keymap() string {
	return KeymapWith(p.T, p.opts.Layout, p.opts.Options)
}

// Keymap compiles the keymap of an XKB layout with libxkbcommon.
func Keymap(t testing.TB, layout string) string {
	t.Helper()
	return KeymapWith(t, layout, "")
}

// KeymapWith compiles the keymap of an XKB layout and options.
func KeymapWith(t testing.TB, layout, options string) string {
	t.Helper()
	args := []string{"compile-keymap", "--layout", layout}
	if options != "" {
		args = append(args, "--options", options)
	}
	out, err := exec.Command("xkbcli", args...).Output()
	if err != nil {
		t.Fatalf("xkbcli %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// withoutEnv returns env without the named variables.
func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			drop = drop || k == n
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}
