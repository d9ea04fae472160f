package safesocket

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/yazses/yazses/internal/testwait"
)

// The test binary doubles as the helper process of the cross-process
// tests: with childEnv set it runs the named helper instead of the tests.
const (
	childEnv = "YAZ_SAFESOCKET_TEST_CHILD"
	dirEnv   = "YAZ_SAFESOCKET_TEST_DIR"
	// nameEnv names the socket the "dial" helper connects to (default
	// SocketName); with the "hold" helper, a socket it listens on beside.
	nameEnv = "YAZ_SAFESOCKET_TEST_NAME"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(child(mode, os.Getenv(dirEnv)))
	}
	goleak.VerifyTestMain(m)
}

// child runs one helper and reports on stdout; it never runs tests.
func child(mode, dir string) int {
	switch mode {
	case "hold":
		// Become the daemon, say so, and hold on until stdin closes.
		ln, err := Listen(dir)
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		if name := os.Getenv(nameEnv); name != "" {
			if _, err := ln.Beside(name); err != nil {
				fmt.Println("error:", err)
				return 1
			}
		}
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		ln.Close()
		return 0
	case "listen-raw":
		// A listener outside the lock discipline, as another user.
		ln, err := net.Listen("unix", SocketPath(dir))
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
			}
		}()
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		return 0
	case "dial":
		// A client as another user: Dial must refuse the folder; a raw
		// connect gets through the (test-only) open modes and must then be
		// closed by the server without a byte.
		name := os.Getenv(nameEnv)
		if name == "" {
			name = SocketName
		}
		if _, err := DialName(context.Background(), dir, name); err == nil {
			fmt.Println("dial: accepted")
		} else {
			fmt.Println("dial: refused")
		}
		c, err := net.Dial("unix", filepath.Join(dir, name))
		if err != nil {
			fmt.Println("raw: connect failed:", err)
			return 1
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := c.Read(make([]byte, 1))
		var ne net.Error
		switch {
		case n > 0:
			fmt.Println("raw: got data")
		case errors.As(err, &ne) && ne.Timeout():
			fmt.Println("raw: still open")
		default:
			fmt.Println("raw: closed")
		}
		return 0
	}
	fmt.Println("unknown mode", mode)
	return 2
}

// helper is a running child process of this test binary.
type helper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func startHelper(t *testing.T, exe, mode, dir string, cred *syscall.Credential, env ...string) *helper {
	t.Helper()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnv+"="+mode, dirEnv+"="+dir), env...)
	cmd.Stderr = os.Stderr
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper %s: %v", mode, err)
	}
	h := &helper{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return h
}

func (h *helper) line(t *testing.T) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		s, _ := h.out.ReadString('\n')
		got <- strings.TrimSpace(s)
	}()
	select {
	case s := <-got:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("helper said nothing within 10 s")
		return ""
	}
}

// runtimeDir is a fresh 0700 runtime folder.
func runtimeDir(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	if err := os.Chmod(base, 0o700); err != nil {
		t.Fatal(err)
	}
	return base
}

func mustDir(t *testing.T) string {
	t.Helper()
	dir, err := Dir(runtimeDir(t))
	if err != nil {
		t.Fatalf("Dir = %v", err)
	}
	return dir
}

func mustListen(t *testing.T, dir string) *Listener {
	t.Helper()
	ln, err := Listen(dir)
	if err != nil {
		t.Fatalf("Listen(%s) = %v", dir, err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func perm(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// acceptOne accepts in the background and returns what Accept returned.
func acceptOne(ln net.Listener) <-chan net.Conn {
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(ch)
			return
		}
		ch <- c
	}()
	return ch
}

func TestDir(t *testing.T) {
	base := runtimeDir(t)
	dir, err := Dir(base)
	if err != nil {
		t.Fatalf("Dir = %v", err)
	}
	if want := filepath.Join(base, "yazses"); dir != want {
		t.Errorf("Dir = %s, want %s", dir, want)
	}
	if m := perm(t, dir); m != fs.ModeDir|0o700 {
		t.Errorf("Dir mode = %v, want drwx------", m)
	}
	if again, err := Dir(base); err != nil || again != dir {
		t.Errorf("second Dir = %s, %v; want %s, nil", again, err, dir)
	}
}

// TestDirExisting: a folder of ours readable by others is tightened to
// 0700; one writable by others, another user's, a symlink or a file is
// refused and left as it was.
func TestDirExisting(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string)
		wantErr string // "" means accepted and 0700 afterwards
	}{
		{"0700", func(t *testing.T, dir string) { mkdir(t, dir, 0o700) }, ""},
		{"0755 tightened", func(t *testing.T, dir string) { mkdir(t, dir, 0o755) }, ""},
		{"0750 tightened", func(t *testing.T, dir string) { mkdir(t, dir, 0o750) }, ""},
		{"0500 fixed", func(t *testing.T, dir string) { mkdir(t, dir, 0o500) }, ""},
		{"0777 refused", func(t *testing.T, dir string) { mkdir(t, dir, 0o777) }, "could have written"},
		{"0720 refused", func(t *testing.T, dir string) { mkdir(t, dir, 0o720) }, "could have written"},
		{"other owner", func(t *testing.T, dir string) {
			mkdir(t, dir, 0o700)
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "owned by uid 65534"},
		{"symlink", func(t *testing.T, dir string) {
			target := filepath.Join(filepath.Dir(dir), "elsewhere")
			mkdir(t, target, 0o700)
			if err := os.Symlink(target, dir); err != nil {
				t.Fatal(err)
			}
		}, "symlink"},
		{"file", func(t *testing.T, dir string) {
			if err := os.WriteFile(dir, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := runtimeDir(t)
			dir := filepath.Join(base, "yazses")
			tt.prepare(t, dir)
			before := perm(t, dir)
			got, err := Dir(base)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Dir = %v, want success", err)
				}
				if m := perm(t, got); m != fs.ModeDir|0o700 {
					t.Errorf("mode after Dir = %v, want drwx------", m)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Dir = %q, %v; want an error containing %q", got, err, tt.wantErr)
			}
			if after := perm(t, dir); after != before {
				t.Errorf("refused folder changed mode: %v -> %v", before, after)
			}
		})
	}
}

func mkdir(t *testing.T, dir string, mode fs.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}

func TestDirRuntimeDir(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		if _, err := Dir(""); err == nil || !strings.Contains(err.Error(), "not an absolute path") {
			t.Errorf("Dir(\"\") = %v, want a relative path error", err)
		}
	})
	t.Run("relative", func(t *testing.T) {
		if _, err := Dir("run/user"); err == nil || !strings.Contains(err.Error(), "not an absolute path") {
			t.Errorf("Dir = %v, want a relative path error", err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		if _, err := Dir(filepath.Join(t.TempDir(), "gone")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Dir = %v, want not exist", err)
		}
	})
	t.Run("other owner", func(t *testing.T) {
		base := runtimeDir(t)
		if err := os.Chown(base, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := Dir(base); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("Dir = %v, want an owner error", err)
		}
	})
	t.Run("world writable", func(t *testing.T) {
		base := runtimeDir(t)
		if err := os.Chmod(base, 0o777); err != nil {
			t.Fatal(err)
		}
		if _, err := Dir(base); err == nil || !strings.Contains(err.Error(), "writable by group or others") {
			t.Errorf("Dir = %v, want a mode error", err)
		}
		if _, err := os.Lstat(filepath.Join(base, "yazses")); err == nil {
			t.Error("Dir created its folder inside a world-writable runtime dir")
		}
	})
}

func TestListenModesAndPeerCred(t *testing.T) {
	dir := mustDir(t)
	ln := mustListen(t, dir)
	if m := perm(t, dir); m != fs.ModeDir|0o700 {
		t.Errorf("folder mode = %v, want drwx------", m)
	}
	sock := SocketPath(dir)
	if m := perm(t, sock); m != fs.ModeSocket|0o600 {
		t.Errorf("socket mode = %v, want Srw-------", m)
	}
	if m := perm(t, filepath.Join(dir, LockName)); m != 0o600 {
		t.Errorf("lock mode = %v, want -rw-------", m)
	}
	if _, err := os.Lstat(filepath.Join(dir, tempName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temporary socket name left behind: %v", err)
	}
	if got := ln.Addr().String(); got != sock {
		t.Errorf("Addr() = %s, want %s", got, sock)
	}

	accepted := acceptOne(ln)
	nc, err := Dial(context.Background(), dir)
	if err != nil {
		t.Fatalf("Dial = %v", err)
	}
	defer nc.Close()
	sc := testwait.Recv(t, accepted, "the listener to accept the dialed connection")
	if sc == nil {
		t.Fatal("Accept failed")
	}
	defer sc.Close()
	for name, c := range map[string]net.Conn{"server side": sc, "client side": nc} {
		pid, uid, gid := c.(*Conn).PeerCred()
		if pid != os.Getpid() || uid != os.Geteuid() || gid != os.Getegid() {
			t.Errorf("%s PeerCred() = %d, %d, %d; want %d, %d, %d", name, pid, uid, gid, os.Getpid(), os.Geteuid(), os.Getegid())
		}
	}
	if _, err := io.WriteString(nc, "hi\n"); err != nil {
		t.Fatal(err)
	}
	if got, err := bufio.NewReader(sc).ReadString('\n'); err != nil || got != "hi\n" {
		t.Errorf("read through the socket = %q, %v", got, err)
	}

	if err := ln.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket still there after Close: %v", err)
	}
	if _, err := Dial(context.Background(), dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Dial after Close = %v, want ErrNotRunning", err)
	}
	// The lock is free again.
	mustListen(t, dir)
}

func TestSecondListenInProcess(t *testing.T) {
	dir := mustDir(t)
	ln := mustListen(t, dir)
	before := inode(t, SocketPath(dir))
	_, err := Listen(dir)
	var are *AlreadyRunningError
	if !errors.Is(err, ErrAlreadyRunning) || !errors.As(err, &are) || are.PID != os.Getpid() {
		t.Fatalf("second Listen = %v, want ErrAlreadyRunning naming pid %d", err, os.Getpid())
	}
	if !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("error %q does not name the pid", err)
	}
	if after := inode(t, SocketPath(dir)); after != before {
		t.Error("a failed Listen replaced the live socket")
	}
	accepted := acceptOne(ln)
	c, err := Dial(context.Background(), dir)
	if err != nil {
		t.Fatalf("Dial to the first listener = %v", err)
	}
	c.Close()
	if sc := testwait.Recv(t, accepted, "the listener to accept the dialed connection"); sc != nil {
		sc.Close()
	} else {
		t.Error("first listener no longer accepts")
	}
}

// TestSecondListenOtherProcess: a daemon in another process holds the
// lock; ours fails naming its pid. Once it is killed (no clean up: its
// socket stays on disk), the kernel drops the lock and ours replaces the
// stale socket.
func TestSecondListenOtherProcess(t *testing.T) {
	dir := mustDir(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := startHelper(t, exe, "hold", dir, nil)
	if got := h.line(t); got != "ready" {
		t.Fatalf("helper: %s", got)
	}
	_, err = Listen(dir)
	var are *AlreadyRunningError
	if !errors.As(err, &are) || are.PID != h.cmd.Process.Pid {
		t.Fatalf("Listen while another process holds the lock = %v, want ErrAlreadyRunning naming pid %d", err, h.cmd.Process.Pid)
	}

	h.cmd.Process.Kill()
	h.cmd.Wait()
	if m := perm(t, SocketPath(dir)); m.Type() != fs.ModeSocket {
		t.Fatalf("killed daemon left %v, want its stale socket", m)
	}
	ln := mustListen(t, dir)
	accepted := acceptOne(ln)
	c, err := Dial(context.Background(), dir)
	if err != nil {
		t.Fatalf("Dial to the new daemon = %v", err)
	}
	defer c.Close()
	sc := testwait.Recv(t, accepted, "the listener to accept the dialed connection")
	if sc == nil {
		t.Fatal("new daemon did not accept")
	}
	defer sc.Close()
	if pid, _, _ := c.(*Conn).PeerCred(); pid != os.Getpid() {
		t.Errorf("Dial reached pid %d, want the new daemon %d", pid, os.Getpid())
	}
}

// TestStaleSocketReplaced: a socket that was bound and closed without
// being removed refuses connections, and is replaced.
func TestStaleSocketReplaced(t *testing.T) {
	dir := mustDir(t)
	sock := SocketPath(dir)
	old, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	old.SetUnlinkOnClose(false)
	old.Close()
	if _, err := net.Dial("unix", sock); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial stale socket = %v, want connection refused", err)
	}
	if _, err := Dial(context.Background(), dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Dial to a stale socket = %v, want ErrNotRunning", err)
	}

	ln := mustListen(t, dir)
	accepted := acceptOne(ln)
	c, err := Dial(context.Background(), dir)
	if err != nil {
		t.Fatalf("Dial after replacing = %v", err)
	}
	c.Close()
	if sc := testwait.Recv(t, accepted, "the listener to accept the dialed connection"); sc != nil {
		sc.Close()
	} else {
		t.Error("new listener did not accept")
	}
}

// TestLiveSocketNotStolen: something answers on the socket without holding
// the lock (a daemon whose lock file was deleted). Listen holds the lock
// but must leave that socket alone, and release the lock again.
func TestLiveSocketNotStolen(t *testing.T) {
	dir := mustDir(t)
	sock := SocketPath(dir)
	other, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	liveIno := inode(t, sock)

	if _, err := Listen(dir); !errors.Is(err, ErrSocketInUse) {
		t.Fatalf("Listen over a live socket = %v, want ErrSocketInUse", err)
	}
	if inode(t, sock) != liveIno {
		t.Fatal("the live socket was replaced")
	}
	accepted := acceptOne(other)
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("the live socket stopped answering: %v", err)
	}
	c.Close()
	if sc := testwait.Recv(t, accepted, "the listener to accept the dialed connection"); sc != nil {
		sc.Close()
	}

	// The failed Listen let go of the lock: once the other listener is
	// gone, Listen works.
	other.Close()
	mustListen(t, dir)
}

func TestNonSocketNotRemoved(t *testing.T) {
	dir := mustDir(t)
	sock := SocketPath(dir)
	if err := os.WriteFile(sock, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(dir); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen with a file at the socket path = %v, want a refusal", err)
	}
	if b, err := os.ReadFile(sock); err != nil || string(b) != "keep me" {
		t.Errorf("file at the socket path = %q, %v; want it untouched", b, err)
	}
	os.Remove(sock)
	mustListen(t, dir) // the failed Listen released the lock
}

func TestListenDialRefuseLooseFolder(t *testing.T) {
	dir := mustDir(t)
	ln := mustListen(t, dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "want 0700") {
		t.Errorf("Dial into a 0755 folder = %v, want a mode refusal", err)
	}
	ln.Close()
	if _, err := Listen(dir); err == nil || !strings.Contains(err.Error(), "want 0700") {
		t.Errorf("Listen in a 0755 folder = %v, want a mode refusal", err)
	}
}

// openForOthers makes a private copy of the test binary runnable by uid
// 65534 and returns its path and a scratch folder that uid can traverse.
func openForOthers(t *testing.T) (exe, base string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a helper as uid 65534")
	}
	base, err := os.MkdirTemp("", "yss")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(base, "helper.test")
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return exe, base
}

var nobody = &syscall.Credential{Uid: 65534, Gid: 65534}

// TestRejectOtherUID: a client running as another uid. In production the
// 0700 folder and 0600 socket already stop it at connect; here both are
// opened up after Listen so the connect succeeds and SO_PEERCRED alone
// must refuse it: OnReject hears its uid and pid, it is closed without a
// byte, and Accept never returns it.
func TestRejectOtherUID(t *testing.T) {
	exe, base := openForOthers(t)
	dir := filepath.Join(base, "yazses")
	mkdir(t, dir, 0o700)
	ln := mustListen(t, dir)
	type reject struct{ uid, pid int }
	rejects := make(chan reject, 10)
	ln.OnReject = func(uid, pid int) { rejects <- reject{uid, pid} }
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(SocketPath(dir), 0o666); err != nil {
		t.Fatal(err)
	}

	h := startHelper(t, exe, "dial", dir, nobody)
	if got := h.line(t); got != "dial: refused" {
		t.Errorf("safesocket.Dial as uid 65534: %s, want refused (folder is not theirs)", got)
	}
	select {
	case r := <-rejects:
		if r != (reject{65534, h.cmd.Process.Pid}) {
			t.Errorf("OnReject(%d, %d), want (65534, %d)", r.uid, r.pid, h.cmd.Process.Pid)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnReject was not called for uid 65534")
	}
	if got := h.line(t); got != "raw: closed" {
		t.Errorf("raw connect as uid 65534: %s, want closed", got)
	}
	select {
	case c := <-accepted:
		pid, uid, _ := c.(*Conn).PeerCred()
		t.Errorf("Accept returned a connection from uid %d pid %d", uid, pid)
	default:
	}

	// Our own uid still gets through the same listener.
	c, err := net.Dial("unix", SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case sc := <-accepted:
		if _, uid, _ := sc.(*Conn).PeerCred(); uid != os.Geteuid() {
			t.Errorf("accepted uid %d, want %d", uid, os.Geteuid())
		}
		sc.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("own connection was not accepted after a rejection")
	}
	ln.Close()
	for range accepted {
	}
}

// TestDialRefusesOtherServer: a server set up by another uid inside a
// folder of ours (its socket still listening after we locked the folder
// down) is refused by Dial's own SO_PEERCRED check.
func TestDialRefusesOtherServer(t *testing.T) {
	exe, base := openForOthers(t)
	dir := filepath.Join(base, "yazses")
	mkdir(t, dir, 0o777)
	h := startHelper(t, exe, "listen-raw", dir, nobody)
	if got := h.line(t); got != "ready" {
		t.Fatalf("helper: %s", got)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Dial(context.Background(), dir)
	if err == nil || !strings.Contains(err.Error(), "server runs as uid 65534") {
		t.Errorf("Dial to a server of uid 65534 = %v, want a refusal", err)
	}
}

// TestLockNamesHolder: Lock's second taker is told the
// holder's pid and the socket it stored; an earlier holder's longer
// content is overwritten and cut, never mixed in; Close releases it.
func TestLockNamesHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "yazsesd.lock")
	if err := os.WriteFile(path, []byte("999999\n/an/older/socket/path/that/is/much/longer/than/ours.sock\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Lock(path, "/run/test/yazses/yazsesd.sock")
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.Itoa(os.Getpid()) + "\n/run/test/yazses/yazsesd.sock\n"
	if b, _ := os.ReadFile(path); string(b) != want {
		t.Errorf("lock file holds %q, want %q", b, want)
	}
	_, err = Lock(path, "/another.sock")
	var are *AlreadyRunningError
	if !errors.As(err, &are) || are.PID != os.Getpid() || are.Socket != "/run/test/yazses/yazsesd.sock" {
		t.Fatalf("second Lock = %v, want ErrAlreadyRunning naming pid %d and the socket", err, os.Getpid())
	}
	if !strings.Contains(err.Error(), "socket /run/test/yazses/yazsesd.sock") {
		t.Errorf("error %q does not name the socket", err)
	}
	f.Close()
	g, err := Lock(path, "")
	if err != nil {
		t.Fatalf("Lock after Close = %v", err)
	}
	g.Close()
}
