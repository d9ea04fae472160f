// Package testdesk brings up a real, headless GNOME Shell (or KWin, with
// StartKDE) for a test: the Debian 13 root that scripts/desk-root.sh builds
// once into the cache (GNOME Shell 48 or KWin 6.3, the desktop portals,
// IBus, python3-gi GTK 3 and 4), entered with a private mount and PID
// namespace, and torn down when the test ends.
//
// KWin runs with a virtual output and IBus as its input method (kwinrc's
// InputMethod: "IBus Wayland", ibus-ui-gtk3 --enable-wayland-im, which KWin
// starts), the setting Plasma's Virtual Keyboard page writes. Eval is
// GNOME's only.
//
// What runs where. Everything of the desk runs inside the root, in a PID
// namespace of its own whose first process is a shell (the desk's init):
// a system bus, a session bus, gnome-shell --headless --wayland
// --unsafe-mode with a virtual monitor (it starts ibus-daemon itself), the
// recording fields ([Desk.Field]) and relays ([Desk.Relay]). Start hides
// the overview the shell starts in and gives the seat a virtual keyboard
// (through Eval): a headless seat has none, and without a keyboard's focus
// no window is active to its toolkit, which then enables no input method.
// The test and the code under test run on the host and reach the desk
// through a host folder that the root sees at the same path, its
// XDG_RUNTIME_DIR: the session bus socket, the Wayland socket,
// XDG_CONFIG_HOME (where ibus-daemon writes its address file) and
// XDG_CACHE_HOME (where it puts its socket).
// The root is an overlay on the cached root, so nothing a desk writes
// changes the cache, and two desks run side by side.
//
// Teardown. The desk's init dies with the test process (the parent-death
// signal, and the end of its stdin pipe), and t.Cleanup kills it; the
// kernel then kills every process in its PID namespace, and the mount
// namespace (the overlay, /proc, /dev, /sys, the binds) goes with the last
// of them: nothing is mounted on the host, even when the test is killed.
//
// Nothing here reads the caller's DISPLAY, WAYLAND_DISPLAY,
// DBUS_SESSION_BUS_ADDRESS or XDG_* variables (XDG_CACHE_HOME aside, which
// says where scripts/desk-root.sh caches the root): the desk's processes
// get an environment built here, and [Desk.Env] is the one a host client
// is meant to use.
//
// Needs root (mount and PID namespaces, chroot) and the root built (the
// first use builds it: several minutes, with the network to a Debian
// mirror). Where either is missing the test fails with the reason when
// YAZ_TEST_DESK=1 is set (CI sets it), and is skipped with the reason
// otherwise.
package testdesk

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/yazses/yazses/internal/testwait"
)

//go:embed field.py
var fieldPy []byte

//go:embed relay.py
var relayPy []byte

// BuildLimit bounds the first build of the root (the download and
// install of about 1.3 GB of packages on a busy 2-core machine).
const BuildLimit = 30 * time.Minute

// Desk is a running headless GNOME Shell.
type Desk struct {
	// Runtime is the desk's XDG_RUNTIME_DIR, a host folder that the root
	// sees at the same path: a socket or a file named there (the session
	// bus, the Wayland socket, IBus's socket and address file) means the
	// same on both sides.
	Runtime string
	// ConfigHome is the desk's XDG_CONFIG_HOME (Runtime/config), where
	// ibus-daemon writes its address file; XDG_CACHE_HOME, where it puts
	// its socket, is Runtime/cache.
	ConfigHome string
	// SessionBus is the session bus address, as the host reaches it.
	SessionBus string
	// WaylandSocket is the host path of the compositor's socket.
	WaylandSocket string
	// Env is the environment for a host client of this desk: PATH and
	// HOME of this process, the session bus, XDG_RUNTIME_DIR (Runtime),
	// WAYLAND_DISPLAY, XDG_CONFIG_HOME (ConfigHome), XDG_CACHE_HOME,
	// XDG_CURRENT_DESKTOP and XDG_SESSION_TYPE. Nothing else of this
	// process's environment.
	Env []string

	// Desktop is the desktop the desk runs.
	Desktop Desktop

	t      testing.TB
	pid    int // the desk's init, in the host's PID namespace
	log    *testwait.Buffer
	bus    *dbus.Conn
	mu     sync.Mutex
	nfield int
}

// BusAddress is the D-Bus address of a unix socket path, escaped as D-Bus
// addresses are (every byte but [-0-9A-Za-z_/.\\*] as %XX): a test's
// folder holds its name, and a benchmark's name holds "=" ("route=ibus"),
// which an address takes for the start of a value (dbus-daemon then
// listened nowhere, and the desk waited for its bus forever).
func BusAddress(path string) string {
	var b strings.Builder
	b.WriteString("unix:path=")
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.IndexByte("-_/.\\*", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02x", c)
	}
	return b.String()
}

// Want says whether a missing desk fails the test (YAZ_TEST_DESK=1) or
// skips it.
func Want() bool { return os.Getenv("YAZ_TEST_DESK") == "1" }

// unavailable fails (YAZ_TEST_DESK=1) or skips t with the reason.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Want() {
		t.Fatalf("the real desk is needed (YAZ_TEST_DESK=1): %s", msg)
	}
	t.Skipf("no real desk (set YAZ_TEST_DESK=1 to make this a failure): %s", msg)
}

// repoRoot is the folder with go.mod above the test's folder.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the test's folder")
		}
		dir = up
	}
}

// Desktop names the desktop a desk runs, as scripts/desk-root.sh names
// its root.
type Desktop string

const (
	// GNOME is GNOME Shell with xdg-desktop-portal-gnome; gnome-shell
	// starts ibus-daemon itself.
	GNOME Desktop = "gnome"
	// KDE is KWin (kwin_wayland) with xdg-desktop-portal-kde; KWin starts
	// IBus as its input method (kwinrc's InputMethod), as Plasma's
	// Virtual Keyboard setting does.
	KDE Desktop = "kde"
)

// compositor is the desktop's program in the root.
func (k Desktop) compositor() string {
	if k == KDE {
		return "/usr/bin/kwin_wayland"
	}
	return "/usr/bin/gnome-shell"
}

// Root returns the cached Debian root of the GNOME desk, building it
// first when it is missing.
func Root(t testing.TB) string {
	t.Helper()
	return RootOf(t, GNOME)
}

// RootOf returns the cached Debian root of a desktop, building it first
// when it is missing (scripts/desk-root.sh, which waits for another
// caller's build).
func RootOf(t testing.TB, desktop Desktop) string {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, "needs root (mount and PID namespaces, chroot); running as uid %d", os.Geteuid())
	}
	repo, err := repoRoot()
	if err != nil {
		unavailable(t, "finding scripts/desk-root.sh: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), BuildLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(repo, "scripts", "desk-root.sh"), string(desktop))
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + os.Getenv("HOME")}
	if c := os.Getenv("XDG_CACHE_HOME"); c != "" {
		// The cache is the one thing of the caller's XDG_* it shares: the
		// root is built once per user, like whisper.cpp.
		cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+c)
	}
	stderr := &testwait.Buffer{}
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		unavailable(t, "scripts/desk-root.sh %s: %v: %s", desktop, err, lastLines(stderr.String(), 15))
	}
	root := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(root, desktop.compositor())); err != nil {
		unavailable(t, "the %s desk root %s has no %s: %v", desktop, root, desktop.compositor(), err)
	}
	return root
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// innerEnv is the environment of every process of the desk, whose
// runtime folder is run.
func innerEnv(run string, desktop Desktop) []string {
	current, session := "GNOME", "gnome"
	if desktop == KDE {
		current, session = "KDE", "KDE"
	}
	return []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root",
		"USER=root",
		"LOGNAME=root",
		"LANG=C.UTF-8",
		"XDG_RUNTIME_DIR=" + run,
		"XDG_CONFIG_HOME=" + run + "/config",
		"XDG_CACHE_HOME=" + run + "/cache",
		"XDG_CURRENT_DESKTOP=" + current,
		"XDG_SESSION_TYPE=wayland",
		"XDG_SESSION_DESKTOP=" + session,
		"DBUS_SESSION_BUS_ADDRESS=" + BusAddress(run+"/bus"),
		"WAYLAND_DISPLAY=wayland-0",
		"NO_AT_BRIDGE=1",
		"GTK_A11Y=none",
		"GSK_RENDERER=cairo",
		"GDK_BACKEND=wayland",
	}
}

// outerScript sets up the mount namespace (it runs as the first process
// of the new PID namespace, on the host's file system), then becomes the
// desk's init inside the root. $1 the cached root, $2 the scratch folder
// (upper, work, merged), $3 the host runtime folder (bound into the root
// at the same path, after the root's /tmp and /run are fresh tmpfs).
const outerScript = `set -eu
mount --make-rprivate /
lower=$1 scratch=$2 run=$3
mkdir -p "$scratch/upper" "$scratch/work" "$scratch/merged"
mount -t overlay overlay -o "lowerdir=$lower,upperdir=$scratch/upper,workdir=$scratch/work" "$scratch/merged"
R=$scratch/merged
mount -t proc proc "$R/proc"
mount --rbind /dev "$R/dev"
mount --rbind /sys "$R/sys"
mount -t tmpfs tmpfs "$R/tmp"
mount -t tmpfs tmpfs "$R/run"
mkdir -p "$R$run" "$R/run/dbus"
mount --bind "$run" "$R$run"
# The host's machine id, so that IBus's address file has the name a host
# client computes.
for f in /var/lib/dbus/machine-id /etc/machine-id; do
  if [ -s "$f" ]; then
    rm -f "$R/etc/machine-id" "$R/var/lib/dbus/machine-id"
    mkdir -p "$R/var/lib/dbus"
    cat "$f" > "$R/etc/machine-id"
    cat "$f" > "$R/var/lib/dbus/machine-id"
    break
  fi
done
exec chroot "$R" /bin/sh -c "$INNER"
`

// innerScript is the desk's init, PID 1 of its namespace, inside the root.
// It ends (and with it every process of the desk) when its stdin ends:
// the test process closed it, or died.
const innerScript = `set -u
trap 'exit 0' TERM
# (dash gives a background list /dev/null as stdin, before its own
# redirections: the pipe goes to it as fd 3.)
exec 3<&0
( cat <&3 >/dev/null; kill -TERM 1 ) &
mkdir -p "$XDG_CONFIG_HOME"
chmod 0700 "$XDG_RUNTIME_DIR"
dbus-daemon --system --fork || { echo "desk: the system bus did not start"; exit 1; }
dbus-daemon --session --address="$DBUS_SESSION_BUS_ADDRESS" --nofork --nopidfile </dev/null &
# The session bus is up when its socket is there.
while [ ! -S "$XDG_RUNTIME_DIR/bus" ]; do sleep 0.05; done
echo "desk: session bus up"
/bin/sh -c "$COMPOSITOR" </dev/null &
wait
`

// gnomeShell runs GNOME Shell: headless, Wayland only, with Eval (unsafe
// mode) and one virtual monitor.
const gnomeShell = `exec gnome-shell --headless --wayland --no-x11 --unsafe-mode --virtual-monitor 1280x800`

// kwin runs KWin with a virtual output and IBus as its input method (what
// Plasma's Settings writes for the Virtual Keyboard "IBus Wayland"): KWin
// starts it and speaks input-method-v1 to it, and the clients' text-input
// reaches IBus's engines through it.
const kwin = `printf '[Wayland]\nInputMethod=/usr/share/applications/org.freedesktop.IBus.Panel.Wayland.Gtk3.desktop\n' > "$XDG_CONFIG_HOME/kwinrc"
echo "desk: starting kwin"
QT_QPA_PLATFORM=offscreen exec kwin_wayland --virtual --width 1280 --height 800 --no-lockscreen --socket wayland-0`

// Start brings up a GNOME desk for t; it is torn down when t ends.
func Start(t testing.TB) *Desk {
	t.Helper()
	return StartDesktop(t, GNOME)
}

// StartKDE brings up a KWin desk for t; it is torn down when t ends. Eval
// is GNOME's and fails there.
func StartKDE(t testing.TB) *Desk {
	t.Helper()
	return StartDesktop(t, KDE)
}

// StartDesktop brings up a desk of that desktop for t; it is torn down
// when t ends.
func StartDesktop(t testing.TB, desktop Desktop) *Desk {
	t.Helper()
	root := RootOf(t, desktop)
	run := t.TempDir()
	scratch := t.TempDir()
	if err := os.Chmod(run, 0o700); err != nil {
		t.Fatal(err)
	}
	d := &Desk{
		Runtime:       run,
		ConfigHome:    filepath.Join(run, "config"),
		SessionBus:    BusAddress(filepath.Join(run, "bus")),
		WaylandSocket: filepath.Join(run, "wayland-0"),
		Desktop:       desktop,
		t:             t,
		log:           &testwait.Buffer{},
	}
	current := "GNOME"
	compositor := gnomeShell
	if desktop == KDE {
		current, compositor = "KDE", kwin
	}
	d.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"DBUS_SESSION_BUS_ADDRESS=" + d.SessionBus,
		"XDG_RUNTIME_DIR=" + run,
		"WAYLAND_DISPLAY=wayland-0",
		"XDG_CONFIG_HOME=" + d.ConfigHome,
		"XDG_CACHE_HOME=" + filepath.Join(run, "cache"),
		"XDG_CURRENT_DESKTOP=" + current,
		"XDG_SESSION_TYPE=wayland",
	}

	stdin, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", outerScript, "desk", root, scratch, run)
	cmd.Env = append(innerEnv(run, desktop), "INNER="+innerScript, "COMPOSITOR="+compositor)
	cmd.Stdin = stdin
	cmd.Stdout = d.log
	cmd.Stderr = d.log
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID,
		Pdeathsig:  syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		stdin.Close()
		stdinW.Close()
		unavailable(t, "starting the desk's namespaces: %v", err)
	}
	stdin.Close()
	d.pid = cmd.Process.Pid
	done := make(chan struct{})
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(d.log, "desk: init ended: %v\n", err)
		close(done)
	}()
	t.Cleanup(func() {
		if d.bus != nil {
			d.bus.Close()
		}
		stdinW.Close()
		// SIGKILL to the namespace's init: the kernel kills the rest.
		_ = cmd.Process.Kill()
		testwait.Closed(t, done, "the desk's init to end")
		if t.Failed() {
			t.Logf("desk log:\n%s", lastLines(d.log.String(), 60))
		}
	})

	ctx := testwait.Context(t)
	exited := &closedSource{ch: done}
	if desktop == KDE {
		d.kwinUp(ctx, exited)
		return d
	}
	up := func() bool {
		return strings.Contains(d.log.String(), "GNOME Shell started")
	}
	if err := testwait.Until(ctx, func() bool { return up() || exited.closed() }, d.log, exited); err != nil || !up() {
		t.Fatalf("GNOME Shell did not start (%v); desk log:\n%s", err, lastLines(d.log.String(), 40))
	}
	bus, err := dbus.Connect(d.SessionBus)
	if err != nil {
		t.Fatalf("connect to the desk's session bus: %v", err)
	}
	d.bus = bus
	// The shell starts in the overview, where no window has the focus.
	if _, err := d.Eval(ctx, "Main.overview.hide(); 'hidden'"); err != nil {
		t.Fatalf("hide the overview: %v", err)
	}
	// A headless shell's seat has no keyboard, and a window without a
	// keyboard's focus is never active to the toolkit (GTK enables its
	// input method only in an active window): a virtual keyboard, kept
	// in a global, gives the seat one.
	if _, err := d.Eval(ctx, "const Clutter = imports.gi.Clutter; global._yazsesKeyboard = Clutter.get_default_backend().get_default_seat().create_virtual_device(Clutter.InputDeviceType.KEYBOARD_DEVICE); 'keyboard'"); err != nil {
		t.Fatalf("make a virtual keyboard: %v", err)
	}
	return d
}

// closedSource is a testwait.Source for a channel that is closed once.
type closedSource struct{ ch chan struct{} }

func (c *closedSource) Changed() <-chan struct{} { return c.ch }
func (c *closedSource) closed() bool {
	select {
	case <-c.ch:
		return true
	default:
		return false
	}
}

// Pid is the desk's init, as the host sees it: when it ends, every
// process of the desk has ended.
func (d *Desk) Pid() int { return d.pid }

// Log is what the desk's processes printed so far.
func (d *Desk) Log() string { return d.log.String() }

// Eval runs JavaScript in the shell (org.gnome.Shell.Eval: --unsafe-mode)
// and returns its result as JSON text.
func (d *Desk) Eval(ctx context.Context, js string) (string, error) {
	var ok bool
	var res string
	err := d.bus.Object("org.gnome.Shell", "/org/gnome/Shell").CallWithContext(ctx, "org.gnome.Shell.Eval", 0, js).Store(&ok, &res)
	if err != nil {
		return "", fmt.Errorf("org.gnome.Shell.Eval: %w", err)
	}
	if !ok {
		return "", fmt.Errorf("org.gnome.Shell.Eval: the script failed: %s", res)
	}
	return res, nil
}

// FieldOptions choose a recording field.
type FieldOptions struct {
	// GTK is the toolkit's major version, 3 or 4 (0 is 4).
	GTK int
	// Password makes the entry a password entry (input-purpose password,
	// its text hidden).
	Password bool
}

// Event is one line of a field's report.
type Event struct {
	Ev   string `json:"ev"`
	Text string `json:"text"`
	On   bool   `json:"on"`
}

// Field is a GTK window with one entry, in the desk, that has the focus
// and reports its text.
type Field struct {
	stdin   io.WriteCloser
	events  chan Event
	mu      sync.Mutex
	text    string
	changed testwait.Signal // at each change of text
}

// Field opens a recording field and returns once its window is active
// (it has the keyboard focus).
func (d *Desk) Field(t testing.TB, opt FieldOptions) *Field {
	t.Helper()
	f := d.field(t, opt)
	// Both: the window active (the compositor's keyboard focus) and the
	// entry focused in it; GTK enables its input method only then.
	active, focused := false, false
	f.Wait(t, "the field's window to be active with its entry focused", func(ev Event) bool {
		switch ev.Ev {
		case "active":
			active = ev.On
		case "focus":
			focused = ev.On
		}
		return active && focused
	})
	return f
}

// field starts a field.
func (d *Desk) field(t testing.TB, opt FieldOptions) *Field {
	t.Helper()
	major := opt.GTK
	if major == 0 {
		major = 4
	}
	purpose := "text"
	if opt.Password {
		purpose = "password"
	}
	d.mu.Lock()
	d.nfield++
	n := d.nfield
	d.mu.Unlock()
	script := filepath.Join(d.Runtime, fmt.Sprintf("field%d.py", n))
	if err := os.WriteFile(script, fieldPy, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := d.Command(t, "python3", "-u", script, fmt.Sprint(major), purpose)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &testwait.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the field: %v", err)
	}
	f := &Field{stdin: stdin, events: make(chan Event, 1024)}
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(f.events)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var ev Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				continue
			}
			if ev.Ev == "text" {
				f.mu.Lock()
				f.text = ev.Text
				f.mu.Unlock()
				f.changed.Notify()
			}
			f.events <- ev
		}
	}()
	done := make(chan struct{})
	go func() {
		<-read
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		// The field ends with its stdin (nsenter's own end would leave
		// it running in the desk).
		stdin.Close()
		testwait.Closed(t, done, "the field's end")
		if t.Failed() && stderr.String() != "" {
			t.Logf("field %d stderr:\n%s", n, lastLines(stderr.String(), 20))
		}
	})
	return f
}

// Wait reads the field's events until match accepts one; after
// testwait.Hang, or when the field ends, it fails t.
func (f *Field) Wait(t testing.TB, what string, match func(Event) bool) Event {
	t.Helper()
	timer := time.NewTimer(testwait.Hang)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-f.events:
			if !ok {
				t.Fatalf("waiting for %s: the field ended", what)
			}
			if match(ev) {
				return ev
			}
		case <-timer.C:
			t.Fatalf("waiting for %s: nothing within %v (the field's text is %q)", what, testwait.Hang, f.Text()[:min(len(f.Text()), 80)])
		}
	}
}

// WaitFor reads the field's events until match accepts one (true) or
// until d has passed with none (false). For a test that makes an attempt
// again when nothing comes; a wait for what must come is Wait.
func (f *Field) WaitFor(d time.Duration, match func(Event) bool) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-f.events:
			if !ok {
				return false
			}
			if match(ev) {
				return true
			}
		case <-timer.C:
			return false
		}
	}
}

// WaitText waits until the entry's text is want.
func (f *Field) WaitText(t testing.TB, want string) {
	t.Helper()
	if f.Text() == want {
		return
	}
	f.Wait(t, fmt.Sprintf("the field's text to be %d characters", len([]rune(want))), func(ev Event) bool {
		return ev.Ev == "text" && ev.Text == want
	})
}

// SetPassword makes the entry a password entry (input-purpose password)
// or a plain one, and waits for the field to say it did.
func (f *Field) SetPassword(t testing.TB, password bool) {
	t.Helper()
	p := "text"
	if password {
		p = "password"
	}
	if _, err := io.WriteString(f.stdin, "purpose "+p+"\n"); err != nil {
		t.Fatalf("tell the field: %v", err)
	}
	f.Wait(t, "the field's purpose "+p, func(ev Event) bool { return ev.Ev == "purpose" && ev.Text == p })
}

// Changed is closed at the next change of the field's text (a
// testwait.Source), for a wait that reads Text rather than the events.
func (f *Field) Changed() <-chan struct{} { return f.changed.Changed() }

// Events is the channel of the field's events (closed when it ends).
func (f *Field) Events() <-chan Event { return f.events }

// Text is the entry's text as last reported.
func (f *Field) Text() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.text
}

// Relay returns a unix socket in Runtime that forwards each connection to
// target, a unix socket of the desk, from inside the desk. A host process
// needs it to reach ibus-daemon: its D-Bus server checks the peer's
// credentials (EXTERNAL), and those of a process in the host's PID
// namespace do not pass inside the desk's ("Exhausted all available
// authentication mechanisms"). What goes through is the bytes of the
// D-Bus connection, unchanged.
func (d *Desk) Relay(t testing.TB, target string) string {
	t.Helper()
	d.mu.Lock()
	d.nfield++
	n := d.nfield
	d.mu.Unlock()
	script := filepath.Join(d.Runtime, "relay.py")
	if err := os.WriteFile(script, relayPy, 0o600); err != nil {
		t.Fatal(err)
	}
	listen := filepath.Join(d.Runtime, fmt.Sprintf("relay%d", n))
	cmd := d.Command(t, "python3", "-u", script, listen, target)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &testwait.Buffer{}
	cmd.Stdout = out
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the relay: %v", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		stdin.Close()
		testwait.Closed(t, done, "the relay's end")
	})
	ended := &closedSource{ch: done}
	listening := func() bool { return strings.Contains(out.String(), "listening") }
	if err := testwait.Until(testwait.Context(t), func() bool { return listening() || ended.closed() }, out, ended); err != nil || !listening() {
		t.Fatalf("the relay did not start (%v): %s", err, out.String())
	}
	return listen
}

// Command is a process inside the desk (its namespaces and root, the
// desk's environment, Runtime as its folder), killed when t ends if it
// is still running.
func (d *Desk) Command(t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	// nsenter's -w takes the folder as the host sees it: env -C, inside.
	nsargs := []string{"-t", fmt.Sprint(d.pid), "-m", "-p", "-r", "--", "/usr/bin/env", "-C", d.Runtime, name}
	cmd := exec.Command("nsenter", append(nsargs, args...)...)
	cmd.Env = innerEnv(d.Runtime, d.Desktop)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// IBus returns the address at which a host process reaches the desk's
// ibus-daemon (through Relay), once the daemon has written its address
// file where a client of the session looks for it: XDG_CONFIG_HOME's
// ibus/bus/<machine id>-unix-wayland-0.
func (d *Desk) IBus(t testing.TB) string {
	t.Helper()
	var id string
	for _, f := range []string{"/var/lib/dbus/machine-id", "/etc/machine-id"} {
		if b, err := os.ReadFile(f); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			id = strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
			break
		}
	}
	if id == "" {
		t.Fatal("no machine id on this host")
	}
	dir := filepath.Join(d.ConfigHome, "ibus", "bus")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, id+"-unix-wayland-0")
	w, err := testwait.WatchFile(file)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var path string
	read := func() bool {
		b, err := os.ReadFile(file)
		if err != nil {
			return false
		}
		for _, l := range strings.Split(string(b), "\n") {
			if a, ok := strings.CutPrefix(l, "IBUS_ADDRESS=unix:path="); ok {
				// Escaped as D-Bus addresses are (see BusAddress).
				p, err := dbus.UnescapeBusAddressValue(strings.Split(a, ",")[0])
				if err != nil {
					return false
				}
				path = p
				return true
			}
		}
		return false
	}
	if err := testwait.Until(testwait.Context(t), read, w); err != nil {
		t.Fatalf("ibus-daemon never wrote its address file %s: %v\n%s", file, err, lastLines(d.Log(), 20))
	}
	return BusAddress(d.Relay(t, path))
}
