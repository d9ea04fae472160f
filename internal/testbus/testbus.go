// Package testbus runs a private D-Bus session bus for a test: a
// dbus-daemon of its own, listening on a socket in a folder the test
// chooses, with no service folders, so that nothing is activated behind
// the test's back (Debian's session.conf would start dunst, say, for a
// call to org.freedesktop.Notifications). A bus can be stopped in the
// middle of a test and started again on the same address, as a session
// bus that goes away and comes back.
package testbus

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/yazses/yazses/internal/testwait"
)

// Bus is one running dbus-daemon.
type Bus struct {
	T    testing.TB
	Addr string           // "unix:path=DIR/bus"
	Log  *testwait.Buffer // the daemon's stderr

	cmd      *exec.Cmd
	done     chan struct{}
	stopOnce sync.Once
}

// Start runs a dbus-daemon with its socket and configuration in dir (a
// short folder: a socket path is at most 108 bytes) and returns once it
// listens (it prints its address then). It is killed when the test ends,
// or at Stop. A missing dbus-daemon fails the test: scripts/install-deps.sh
// installs it.
func Start(t testing.TB, dir string) *Bus {
	t.Helper()
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		t.Fatalf("dbus-daemon is needed for this test (scripts/install-deps.sh installs it): %v", err)
	}
	conf := filepath.Join(dir, "bus.conf")
	sock := filepath.Join(dir, "bus")
	busConf := `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=` + sock + `</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`
	if err := os.WriteFile(conf, []byte(busConf), 0o644); err != nil {
		t.Fatal(err)
	}
	// A socket left by a bus that was killed is in the way of the next.
	if err := os.Remove(sock); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	b := &Bus{T: t, Log: &testwait.Buffer{}, done: make(chan struct{})}
	b.cmd = exec.Command("dbus-daemon", "--config-file="+conf, "--nofork", "--nopidfile", "--print-address=3")
	b.cmd.ExtraFiles = []*os.File{w}
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	b.cmd.Stderr = b.Log
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start dbus-daemon: %v", err)
	}
	w.Close()
	go func() { _ = b.cmd.Wait(); close(b.done) }()
	t.Cleanup(b.Stop)
	lines := make(chan string, 1)
	go func() {
		defer r.Close()
		s, _ := bufio.NewReader(r).ReadString('\n')
		lines <- strings.TrimSpace(s)
	}()
	b.Addr = testwait.Recv(t, lines, "dbus-daemon to print its address")
	if b.Addr == "" {
		t.Fatalf("dbus-daemon printed no address: %s", b.Log)
	}
	return b
}

// Stop kills the bus and waits until it has exited; its clients see their
// connections end.
func (b *Bus) Stop() {
	b.stopOnce.Do(func() {
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		testwait.Closed(b.T, b.done, "dbus-daemon to exit")
	})
}

// WaitOwner waits until name has an owner on the bus (on the bus's own
// NameOwnerChanged signal) and returns the owner's unique name.
func (b *Bus) WaitOwner(name string) string {
	t := b.T
	t.Helper()
	c, err := dbus.Connect(b.Addr)
	if err != nil {
		t.Fatalf("connect to the test bus: %v", err)
	}
	defer c.Close()
	sigs := make(chan *dbus.Signal, 16)
	c.Signal(sigs)
	ctx := testwait.Context(t)
	if err := c.AddMatchSignalContext(ctx, dbus.WithMatchSender("org.freedesktop.DBus"), dbus.WithMatchMember("NameOwnerChanged"), dbus.WithMatchArg(0, name)); err != nil {
		t.Fatalf("watch %s: %v", name, err)
	}
	var owner string
	if c.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetNameOwner", 0, name).Store(&owner) == nil && owner != "" {
		return owner
	}
	for {
		s := testwait.Recv(t, sigs, name+" to get an owner on the test bus")
		if len(s.Body) == 3 {
			if o, _ := s.Body[2].(string); o != "" {
				return o
			}
		}
	}
}
