package safesocket

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/yazses/yazses/internal/testwait"
)

// mustBeside listens on ControlName beside ln, closed at the end.
func mustBeside(t *testing.T, ln *Listener) *Listener {
	t.Helper()
	c, err := ln.Beside(ControlName)
	if err != nil {
		t.Fatalf("Beside(%s) = %v", ControlName, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dialAccepted dials name in dir and returns both ends.
func dialAccepted(t *testing.T, ln *Listener, dir, name string) (client, server net.Conn) {
	t.Helper()
	accepted := acceptOne(ln)
	c, err := DialName(context.Background(), dir, name)
	if err != nil {
		t.Fatalf("DialName(%s) = %v", name, err)
	}
	t.Cleanup(func() { c.Close() })
	sc := testwait.Recv(t, accepted, "the listener to accept the dialed connection")
	if sc == nil {
		t.Fatalf("the %s listener did not accept", name)
	}
	t.Cleanup(func() { sc.Close() })
	return c, sc
}

// TestBesideModesAndClose: the second socket is bound 0600 like the
// first, its peers are identified, and closing it removes only it: the
// lock stays with the first listener until that one is closed.
func TestBesideModesAndClose(t *testing.T) {
	dir := mustDir(t)
	ln := mustListen(t, dir)
	ctl := mustBeside(t, ln)
	path := ControlPath(dir)
	if m := perm(t, path); m != fs.ModeSocket|0o600 {
		t.Errorf("control socket mode = %v, want Srw-------", m)
	}
	if _, err := os.Lstat(filepath.Join(dir, tempName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temporary socket name left behind: %v", err)
	}
	if got := ctl.Addr().String(); got != path {
		t.Errorf("Addr() = %s, want %s", got, path)
	}
	c, sc := dialAccepted(t, ctl, dir, ControlName)
	for name, conn := range map[string]net.Conn{"server side": sc, "client side": c} {
		if pid, uid, _ := conn.(*Conn).PeerCred(); pid != os.Getpid() || uid != os.Geteuid() {
			t.Errorf("%s PeerCred() = pid %d uid %d; want %d, %d", name, pid, uid, os.Getpid(), os.Geteuid())
		}
	}
	for _, bad := range []string{"", SocketName, LockName, "../x.sock", "a/b.sock"} {
		if _, err := ln.Beside(bad); err == nil {
			t.Errorf("Beside(%q) = nil error; want it refused", bad)
		}
	}

	if err := ctl.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("control socket still there after its Close: %v", err)
	}
	if _, err := DialName(context.Background(), dir, ControlName); !errors.Is(err, ErrNotRunning) {
		t.Errorf("DialName after Close = %v, want ErrNotRunning", err)
	}
	if _, err := Listen(dir); !errors.Is(err, ErrAlreadyRunning) {
		t.Errorf("Listen after the control socket's Close = %v; want ErrAlreadyRunning (the lock stays)", err)
	}
	dialAccepted(t, ln, dir, SocketName) // the main socket still serves
}

// TestBesideStaleReplacedLiveKept: a control socket that refuses
// connections (left by a killed daemon) is replaced; one that answers
// (something outside the lock) is left alone, ErrSocketInUse.
func TestBesideStaleReplacedLiveKept(t *testing.T) {
	dir := mustDir(t)
	path := ControlPath(dir)
	old, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	old.SetUnlinkOnClose(false)
	old.Close()
	if _, err := net.Dial("unix", path); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial stale control socket = %v, want connection refused", err)
	}
	ln := mustListen(t, dir)
	ctl := mustBeside(t, ln)
	dialAccepted(t, ctl, dir, ControlName)
	ctl.Close()

	other, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	live := inode(t, path)
	if _, err := ln.Beside(ControlName); !errors.Is(err, ErrSocketInUse) {
		t.Errorf("Beside over a live socket = %v, want ErrSocketInUse", err)
	}
	if inode(t, path) != live {
		t.Error("the live control socket was replaced")
	}
}

// TestBesideOnlyLockHolder: while another process is the daemon (it holds
// the lock and both sockets), a second one cannot even reach Beside (its
// Listen fails) and both sockets stay the holder's; once the holder is
// killed (its sockets stay on disk, stale) the next daemon replaces both.
func TestBesideOnlyLockHolder(t *testing.T) {
	dir := mustDir(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := startHelper(t, exe, "hold", dir, nil, nameEnv+"="+ControlName)
	if got := h.line(t); got != "ready" {
		t.Fatalf("helper: %s", got)
	}
	before := inode(t, ControlPath(dir))
	if _, err := Listen(dir); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("Listen while another process holds the lock = %v, want ErrAlreadyRunning", err)
	}
	if inode(t, ControlPath(dir)) != before {
		t.Error("a refused daemon replaced the holder's control socket")
	}
	c, err := DialName(context.Background(), dir, ControlName)
	if err != nil {
		t.Fatalf("the holder's control socket: %v", err)
	}
	if pid, _, _ := c.(*Conn).PeerCred(); pid != h.cmd.Process.Pid {
		t.Errorf("control socket answered by pid %d, want the holder %d", pid, h.cmd.Process.Pid)
	}
	c.Close()

	h.cmd.Process.Kill()
	h.cmd.Wait()
	if m := perm(t, ControlPath(dir)); m.Type() != fs.ModeSocket {
		t.Fatalf("killed daemon left %v, want its stale control socket", m)
	}
	ln := mustListen(t, dir)
	ctl := mustBeside(t, ln)
	c, _ = dialAccepted(t, ctl, dir, ControlName)
	if pid, _, _ := c.(*Conn).PeerCred(); pid != os.Getpid() {
		t.Errorf("control socket answered by pid %d, want the new daemon %d", pid, os.Getpid())
	}
}

// TestBesideRejectsOtherUID: the control socket's listener refuses a peer
// of another uid with SO_PEERCRED, as the main one does (the folder and
// socket are opened up after listening so that the connect gets through).
func TestBesideRejectsOtherUID(t *testing.T) {
	exe, base := openForOthers(t)
	dir := filepath.Join(base, "yazses")
	mkdir(t, dir, 0o700)
	ln := mustListen(t, dir)
	ctl := mustBeside(t, ln)
	type reject struct{ uid, pid int }
	rejects := make(chan reject, 10)
	ctl.OnReject = func(uid, pid int) { rejects <- reject{uid, pid} }
	accepted := make(chan net.Conn, 10)
	go func() {
		defer close(accepted)
		for {
			c, err := ctl.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ControlPath(dir), 0o666); err != nil {
		t.Fatal(err)
	}
	h := startHelper(t, exe, "dial", dir, nobody, nameEnv+"="+ControlName)
	if got := h.line(t); got != "dial: refused" {
		t.Errorf("DialName as uid 65534: %s, want refused (folder is not theirs)", got)
	}
	r := testwait.Recv(t, rejects, "OnReject for uid 65534 on the control socket")
	if r != (reject{65534, h.cmd.Process.Pid}) {
		t.Errorf("OnReject(%d, %d), want (65534, %d)", r.uid, r.pid, h.cmd.Process.Pid)
	}
	if got := h.line(t); got != "raw: closed" {
		t.Errorf("raw connect to the control socket as uid 65534: %s, want closed", got)
	}
	ctl.Close() // Accept ends: whatever it returned is in accepted
	for c := range accepted {
		_, uid, _ := c.(*Conn).PeerCred()
		t.Errorf("Accept returned a connection from uid %d", uid)
		c.Close()
	}
}
