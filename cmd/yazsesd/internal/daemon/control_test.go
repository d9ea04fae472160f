package daemon

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
	"github.com/yazses/yazses/lib/safesocket"
)

// The control socket: RUNTIME/yazses/control.sock, beside yazsesd.sock,
// serving hold.* and status only, on a server of its own, so that no
// number of clients on the main socket keeps a press or a release out.

// controlPath is where the control socket is, spelled out (not taken from
// the code under test).
func controlPath(run string) string { return filepath.Join(run, "control.sock") }

// holdConfig is fakeConfig with the settings a hold of the fake children
// needs to end at once: no tail, and every hold too short, so hold.stop
// answers without the (fake) decoder.
func holdConfig() config.Config {
	cfg := fakeConfig()
	cfg.MCP.AskHuman = false
	cfg.Dictation.TailMs = 0
	cfg.Dictation.MinUtteranceMs = 60000
	return cfg
}

// runHoldDaemon is runFakeDaemon with holdConfig.
func runHoldDaemon(t *testing.T, run, state string) (<-chan error, func()) {
	t.Helper()
	return runDaemon(t, run, state, holdConfig())
}

// startHoldDaemon starts one of holdConfig in a fresh folder; see
// startDaemon.
func startHoldDaemon(t *testing.T) (run string) {
	t.Helper()
	return startDaemon(t, holdConfig())
}

// startDaemon starts a daemon of cfg in a fresh folder and waits until
// it serves status on its main socket (then both sockets are bound). The
// daemon is stopped, and Run's error checked, when the test ends.
func startDaemon(t *testing.T, cfg config.Config) (run string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "yctl") // short: AF_UNIX paths are short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	run = filepath.Join(dir, "run")
	errc, stop := runDaemon(t, run, filepath.Join(dir, "state"), cfg)
	c := dialFake(t, run, errc)
	if _, err := c.Status(testwait.Context(t)); err != nil {
		t.Fatalf("status on the main socket: %v", err)
	}
	c.Close()
	t.Cleanup(func() {
		stop()
		if err := testwait.Recv(t, errc, "the daemon's Run to end"); err != nil {
			t.Errorf("Run = %v", err)
		}
	})
	return run
}

// dialControl connects to the control socket with a plain dial.
func dialControl(t *testing.T, run string) *jsonrpc.Client {
	t.Helper()
	conn, err := net.Dial("unix", controlPath(run))
	if err != nil {
		t.Fatalf("dial the control socket: %v", err)
	}
	c := jsonrpc.NewClient(conn)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestControlSocketWhileMainFull: the main socket holds as many clients
// as it admits (each has called status and stays connected, idle); a
// further one is refused there (server busy), and on the control socket
// hold.start, status and hold.stop are still answered.
func TestControlSocketWhileMainFull(t *testing.T) {
	run := startHoldDaemon(t)
	ctx := testwait.Context(t)
	main := filepath.Join(run, "yazsesd.sock")
	for i := range jsonrpc.DefaultMaxConns {
		conn, err := net.Dial("unix", main)
		if err != nil {
			t.Fatalf("main connection %d: %v", i, err)
		}
		c := jsonrpc.NewClient(conn)
		t.Cleanup(func() { c.Close() })
		if err := c.Call(ctx, daemonapi.MethodStatus, nil, nil); err != nil {
			t.Fatalf("main connection %d: status: %v", i, err)
		}
	}
	conn, err := net.Dial("unix", main)
	if err != nil {
		t.Fatalf("one more main connection: %v", err)
	}
	extra := jsonrpc.NewClient(conn)
	t.Cleanup(func() { extra.Close() })
	var rpcErr *jsonrpc.Error
	if err := extra.Call(ctx, daemonapi.MethodStatus, nil, nil); !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.ServerBusy {
		t.Errorf("status on main connection %d: %v; want server busy (%d): the main socket is full",
			jsonrpc.DefaultMaxConns+1, err, jsonrpc.ServerBusy)
	}

	ctl := dialControl(t, run)
	var h daemonapi.HoldResult
	if err := ctl.Call(ctx, daemonapi.MethodHoldStart, nil, &h); err != nil || h.Hold != daemonapi.HoldHolding {
		t.Fatalf("hold.start on the control socket with the main one full = %+v, %v; want holding", h, err)
	}
	var st daemonapi.Status
	if err := ctl.Call(ctx, daemonapi.MethodStatus, nil, &st); err != nil || st.Hold != daemonapi.HoldHolding || st.PID != os.Getpid() {
		t.Errorf("status on the control socket = hold %q pid %d, %v; want holding, pid %d", st.Hold, st.PID, err, os.Getpid())
	}
	h = daemonapi.HoldResult{}
	if err := ctl.Call(ctx, daemonapi.MethodHoldStop, nil, &h); err != nil || h.Hold != daemonapi.HoldIdle || h.Outcome == "" {
		t.Errorf("hold.stop on the control socket with the main one full = %+v, %v; want idle and an outcome", h, err)
	}
}

// TestControlSocketServesOnlyControl: hold.* and status answer there;
// every other method of the main socket is method-not-found, with strict
// parameters as on the main socket.
func TestControlSocketServesOnlyControl(t *testing.T) {
	run := startHoldDaemon(t)
	ctx := testwait.Context(t)
	ctl := dialControl(t, run)
	for _, m := range []string{daemonapi.MethodHoldToggle, daemonapi.MethodHoldCancel, daemonapi.MethodStatus} {
		if err := ctl.Call(ctx, m, nil, nil); err != nil {
			t.Errorf("%s on the control socket: %v; want an answer", m, err)
		}
	}
	others := map[string]any{
		daemonapi.MethodAskHuman:         daemonapi.AskParams{Question: "Is this the control socket?", TimeoutS: 5},
		daemonapi.MethodLast:             nil,
		daemonapi.MethodAudit:            nil,
		daemonapi.MethodBudgetStatus:     nil,
		daemonapi.MethodTranscribe:       daemonapi.TranscribeParams{Path: "/nonexistent.wav"},
		daemonapi.MethodTranscribeStream: daemonapi.TranscribeParams{Path: "/nonexistent.wav"},
		daemonapi.MethodWatch:            nil,
	}
	for m, p := range others {
		var rpcErr *jsonrpc.Error
		if err := ctl.Call(ctx, m, p, nil); !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.MethodNotFound {
			t.Errorf("%s on the control socket: %v; want method not found (%d)", m, err, jsonrpc.MethodNotFound)
		}
	}
	var rpcErr *jsonrpc.Error
	if err := ctl.Call(ctx, daemonapi.MethodHoldStart, map[string]any{"x": 1}, nil); !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.InvalidParams {
		t.Errorf("hold.start with a parameter on the control socket: %v; want invalid params", err)
	}
}

// TestControlSocketMode: control.sock is a socket of ours with mode 0600
// in the 0700 folder; it is gone after a clean stop.
func TestControlSocketMode(t *testing.T) {
	dir, err := os.MkdirTemp("", "yctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	run := filepath.Join(dir, "run")
	errc, stop := runHoldDaemon(t, run, filepath.Join(dir, "state"))
	c := dialFake(t, run, errc)
	if _, err := c.Status(testwait.Context(t)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	var st unix.Stat_t
	if err := unix.Lstat(controlPath(run), &st); err != nil {
		t.Fatalf("no control socket: %v", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK || st.Mode&0o777 != 0o600 || int(st.Uid) != os.Geteuid() {
		t.Errorf("control.sock: type %o mode %04o uid %d; want a socket, 0600, uid %d", st.Mode&unix.S_IFMT, st.Mode&0o777, st.Uid, os.Geteuid())
	}
	if fi, err := os.Lstat(run); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("socket folder: %v, %v; want 0700", fi.Mode(), err)
	}
	stop()
	if err := testwait.Recv(t, errc, "the daemon's Run to end"); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if _, err := os.Lstat(controlPath(run)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("control.sock after a clean stop: %v; want it removed", err)
	}
}

// TestStaleControlSocketReplaced: a control.sock left by a killed daemon
// (nothing listens: a connect is refused) is replaced by the next one,
// which answers there.
func TestStaleControlSocketReplaced(t *testing.T) {
	dir, err := os.MkdirTemp("", "yctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	run := filepath.Join(dir, "run")
	if err := os.MkdirAll(run, 0o700); err != nil {
		t.Fatal(err)
	}
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: controlPath(run), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ul.SetUnlinkOnClose(false)
	ul.Close() // stale: the name stays, nothing listens
	errc, stop := runHoldDaemon(t, run, filepath.Join(dir, "state"))
	c := dialFake(t, run, errc)
	if _, err := c.Status(testwait.Context(t)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	var h daemonapi.HoldResult
	if err := dialControl(t, run).Call(testwait.Context(t), daemonapi.MethodHoldCancel, nil, &h); err != nil || h.Hold != daemonapi.HoldIdle {
		t.Errorf("hold.cancel on the replaced control socket = %+v, %v; want idle", h, err)
	}
	stop()
	if err := testwait.Recv(t, errc, "the daemon's Run to end"); err != nil {
		t.Fatalf("Run = %v", err)
	}
}

// TestSecondDaemonLeavesControlSocket: a second daemon in the same folder
// is refused (the lock) and leaves the first one's control socket as it
// was: the same inode, still answering.
func TestSecondDaemonLeavesControlSocket(t *testing.T) {
	run := startHoldDaemon(t)
	var before unix.Stat_t
	if err := unix.Lstat(controlPath(run), &before); err != nil {
		t.Fatalf("no control socket: %v", err)
	}
	// Another state folder: the runtime folder's lock is what refuses it.
	errc2, stop2 := runHoldDaemon(t, run, filepath.Join(filepath.Dir(run), "state2"))
	defer stop2()
	select {
	case err := <-errc2:
		if !errors.Is(err, safesocket.ErrAlreadyRunning) {
			t.Errorf("second daemon: %v; want ErrAlreadyRunning", err)
		}
	case <-time.After(testwait.Hang):
		t.Fatalf("a second daemon in the same folder still runs %v after its start; want it refused", testwait.Hang)
	}
	var after unix.Stat_t
	if err := unix.Lstat(controlPath(run), &after); err != nil || after.Ino != before.Ino {
		t.Errorf("control socket after the refused daemon: inode %d (%v), want %d", after.Ino, err, before.Ino)
	}
	var st daemonapi.Status
	if err := dialControl(t, run).Call(testwait.Context(t), daemonapi.MethodStatus, nil, &st); err != nil || st.PID != os.Getpid() {
		t.Errorf("status on the first daemon's control socket = pid %d, %v; want pid %d", st.PID, err, os.Getpid())
	}
}
