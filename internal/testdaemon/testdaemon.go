// Package testdaemon runs a real yazsesd for end-to-end tests (test/e2e and
// test/adversarial share it): its own HOME, runtime, configuration and
// state folders, its JSON log kept in memory, the socket, `yazsesd ctl`
// as a separate process, the audit log, and a stop that requires exit 0
// within 10 s and no process of the daemon's left behind.
//
// Waits are on what the daemon does, not on the clock: WaitFor and WaitLog
// re-check their condition each time the daemon writes a log record (it
// logs every child start, exit, question and hold at debug level), and
// only as a fallback every FallbackCheck for a change the daemon does not
// log (a process's end, seen in /proc).
package testdaemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/internal/testx"
	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/safesocket"
)

// Config is a configuration as table → key → raw TOML value.
type Config map[string]map[string]string

// Q quotes a TOML string.
func Q(s string) string { return strconv.Quote(s) }

// Arr writes a TOML array of strings.
func Arr(v ...string) string {
	parts := make([]string, len(v))
	for i, s := range v {
		parts[i] = Q(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// With returns c with table.key set to the raw value.
func (c Config) With(key, value string) Config {
	out := Config{}
	for t, kv := range c {
		out[t] = maps.Clone(kv)
	}
	table, k, _ := strings.Cut(key, ".")
	if out[table] == nil {
		out[table] = map[string]string{}
	}
	out[table][k] = value
	return out
}

// Without returns c without table.key: the daemon's default applies.
func (c Config) Without(key string) Config {
	out := c.With(key, "")
	table, k, _ := strings.Cut(key, ".")
	delete(out[table], k)
	return out
}

func (c Config) String() string {
	var b strings.Builder
	for _, t := range slices.Sorted(maps.Keys(c)) {
		fmt.Fprintf(&b, "[%s]\n", t)
		for _, k := range slices.Sorted(maps.Keys(c[t])) {
			fmt.Fprintf(&b, "%s = %s\n", k, c[t][k])
		}
	}
	return b.String()
}

// HostVars are the variables an MCP host (the TypeScript and Go SDKs on
// Linux and macOS) passes from its own environment to a server it starts.
var HostVars = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}

// HostEnv is the environment a host or a login shell gives a program, as
// `env -i` would make it: the HostVars of this process (skipping values
// that start with "()", as the SDK does), HOME set to home, then extra.
func HostEnv(home string, extra ...string) []string {
	var env []string
	for _, k := range HostVars {
		v, ok := os.LookupEnv(k)
		if k == "HOME" {
			v, ok = home, true
		}
		if ok && !strings.HasPrefix(v, "()") {
			env = append(env, k+"="+v)
		}
	}
	return append(env, extra...)
}

// FallbackCheck is how often a wait re-checks a condition when the daemon
// logs nothing.
const FallbackCheck = 250 * time.Millisecond

// Daemon is one yazsesd under test.
type Daemon struct {
	T       testing.TB
	Bin     string // the folder of the programs
	Dir     string // HOME
	Runtime string // XDG_RUNTIME_DIR
	CfgPath string
	Audit   string // the audit log's path
	Env     []string
	Cmd     *exec.Cmd
	Log     *testwait.Buffer // stderr: JSON log records
	Stdout  *testwait.Buffer
	Done    chan struct{} // closed when the process has ended
	Stopped bool
	Wrap    []string // a command that runs yazsesd (unshare --net)
	Level   string   // --log-level; "" is debug
}

// Start starts yazsesd from bin with cfg and waits until its gate, speaker
// and decoder are running. It is stopped when the test ends (Stop).
func Start(t testing.TB, bin string, cfg Config, env ...string) *Daemon {
	t.Helper()
	d := New(t, bin, cfg, env...)
	d.Start()
	d.WaitRunning("gate", "speak", "decode")
	return d
}

// New prepares a daemon's folders and configuration without starting it.
// The configuration is where HOME alone finds it, so a client started with
// only HOME (yaz-mcp from an MCP host) reads the same file. env is added to
// this process's environment.
func New(t testing.TB, bin string, cfg Config, env ...string) *Daemon {
	t.Helper()
	// Not t.TempDir: its name carries the test's, and a long test name
	// makes the socket path too long for AF_UNIX (108 bytes).
	dir, err := os.MkdirTemp("", "yzd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &Daemon{T: t, Bin: bin, Dir: dir, Runtime: filepath.Join(dir, "run"), Log: &testwait.Buffer{}, Stdout: &testwait.Buffer{}}
	if err := os.Mkdir(d.Runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	cfgHome := filepath.Join(dir, ".config")
	d.CfgPath = filepath.Join(cfgHome, "yazses", "config.toml")
	d.Audit = filepath.Join(dir, "state", "yazses", "audit.jsonl")
	d.WriteConfig(cfg)
	// The caller's desktop session is never reached: a test that means a
	// display, a compositor or a bus passes it in env.
	d.Env = append(testx.WithoutEnv(os.Environ(), DesktopEnv...),
		"HOME="+dir,
		"XDG_RUNTIME_DIR="+d.Runtime,
		"XDG_CONFIG_HOME="+cfgHome,
		"XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"XDG_DATA_HOME="+filepath.Join(dir, "data"),
	)
	d.Env = append(d.Env, env...)
	return d
}

// DesktopEnv are the variables of a person's desktop session that no
// test daemon inherits from the caller (a desktop terminal's): where a
// daemon would type, show notifications or find portals.
var DesktopEnv = []string{"DISPLAY", "XAUTHORITY", "WAYLAND_DISPLAY", "WAYLAND_SOCKET", "SWAYSOCK", "I3SOCK",
	"DBUS_SESSION_BUS_ADDRESS", "XDG_CURRENT_DESKTOP", "XDG_SESSION_DESKTOP", "XDG_SESSION_TYPE",
	"XDG_DESKTOP_PORTAL_DIR", "IBUS_ADDRESS", "HYPRLAND_INSTANCE_SIGNATURE"}

// Path is the program name in the daemon's bin folder.
func (d *Daemon) Path(name string) string { return filepath.Join(d.Bin, name) }

// WriteConfig writes cfg where the daemon reads it.
func (d *Daemon) WriteConfig(cfg Config) {
	d.T.Helper()
	if err := os.MkdirAll(filepath.Dir(d.CfgPath), 0o700); err != nil {
		d.T.Fatal(err)
	}
	if err := os.WriteFile(d.CfgPath, []byte(cfg.String()), 0o600); err != nil {
		d.T.Fatal(err)
	}
}

// Start runs `yazsesd run` with extra arguments (JSON log at d.Level).
func (d *Daemon) Start(extra ...string) {
	d.T.Helper()
	level := d.Level
	if level == "" {
		level = "debug"
	}
	args := append([]string{"--log-format", "json", "--log-level", level, "run"}, extra...)
	argv := append(append(append([]string(nil), d.Wrap...), d.Path("yazsesd")), args...)
	d.Cmd = exec.Command(argv[0], argv[1:]...)
	d.Cmd.Env = d.Env
	d.Cmd.Stderr = d.Log
	d.Cmd.Stdout = d.Stdout
	if err := d.Cmd.Start(); err != nil {
		d.T.Fatal(err)
	}
	d.Done = make(chan struct{})
	go func() { d.Cmd.Wait(); close(d.Done) }()
	d.Stopped = false
	d.T.Cleanup(d.Stop)
}

// Stop ends the daemon with SIGTERM and checks that it exits 0 (waiting up
// to testwait.Hang: a guard against a hang, not a speed requirement) and
// leaves no process of its own behind.
func (d *Daemon) Stop() {
	d.T.Helper()
	if d.Stopped {
		return
	}
	d.Stopped = true
	d.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.Done:
	case <-time.After(testwait.Hang):
		d.Cmd.Process.Kill()
		<-d.Done
		d.T.Errorf("yazsesd still running %v after SIGTERM", testwait.Hang)
	}
	if code := d.Cmd.ProcessState.ExitCode(); code != 0 && !d.T.Failed() {
		d.T.Errorf("yazsesd exit %d after SIGTERM\n%s", code, d.LogTail(30))
	}
	if left := d.Processes(); len(left) > 0 {
		d.T.Errorf("processes of the daemon outlived it: %v", left)
		for _, p := range left {
			syscall.Kill(p, syscall.SIGKILL)
		}
	}
	if d.T.Failed() {
		d.T.Logf("daemon log tail:\n%s", d.LogTail(60))
	}
}

// Processes lists the live processes that carry this daemon's runtime
// folder in their environment: the daemon and everything it started.
func (d *Daemon) Processes() []int {
	var pids []int
	marker := []byte("XDG_RUNTIME_DIR=" + d.Runtime + "\x00")
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(b, marker) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
				continue // a zombie holds no resources; its parent reaps it
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// LogTail is the last n lines of the daemon's log.
func (d *Daemon) LogTail(n int) string {
	lines := strings.Split(strings.TrimSpace(d.Log.String()), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// SocketDir is the folder of the daemon's socket.
func (d *Daemon) SocketDir() string { return filepath.Join(d.Runtime, safesocket.DirName) }

// Socket is the path of the daemon's socket.
func (d *Daemon) Socket() string { return safesocket.SocketPath(d.SocketDir()) }

// Client dials the daemon's socket; the connection closes with the test.
func (d *Daemon) Client() *daemonapi.Client {
	d.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := safesocket.Dial(ctx, d.SocketDir())
	if err != nil {
		d.T.Fatalf("dial yazsesd: %v\n%s", err, d.LogTail(30))
	}
	c := daemonapi.NewClient(conn)
	d.T.Cleanup(func() { c.Close() })
	return c
}

// Ctl runs `yazsesd ctl ARGS…` as a separate process, as a person would
// from a login shell: HostEnv plus the XDG_RUNTIME_DIR of this daemon's
// session; nothing else of the test's environment.
func (d *Daemon) Ctl(ctx context.Context, args ...string) (stdout, stderr string, code int) {
	cmd := exec.CommandContext(ctx, d.Path("yazsesd"), append([]string{"ctl"}, args...)...)
	cmd.Env = HostEnv(d.Dir, "XDG_RUNTIME_DIR="+d.Runtime)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Run()
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// TryStatus asks the daemon for its status on a fresh connection.
func (d *Daemon) TryStatus() (daemonapi.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := safesocket.Dial(ctx, d.SocketDir())
	if err != nil {
		return daemonapi.Status{}, err
	}
	c := daemonapi.NewClient(conn)
	defer c.Close()
	return c.Status(ctx)
}

// Status is TryStatus; an error fails the test.
func (d *Daemon) Status() daemonapi.Status {
	d.T.Helper()
	st, err := d.TryStatus()
	if err != nil {
		d.T.Fatalf("status: %v", err)
	}
	return st
}

// Child is the named child's status.
func (d *Daemon) Child(name string) daemonapi.ChildStatus {
	d.T.Helper()
	for _, c := range d.Status().Children {
		if c.Name == name {
			return c
		}
	}
	d.T.Fatalf("no child %q in status", name)
	return daemonapi.ChildStatus{}
}

// Running reports whether the named children run in st.
func Running(st daemonapi.Status, names ...string) bool {
	for _, n := range names {
		ok := false
		for _, ch := range st.Children {
			ok = ok || (ch.Name == n && ch.State == "running")
		}
		if !ok {
			return false
		}
	}
	return true
}

// WaitRunning waits (up to 30 s) until the socket answers and the named
// children run (and, with the gate, the budget is available).
func (d *Daemon) WaitRunning(names ...string) {
	d.T.Helper()
	d.WaitFor(30*time.Second, "children "+strings.Join(names, ", ")+" running", func() bool {
		st, err := d.TryStatus()
		return err == nil && Running(st, names...) && (st.Budget.Available || !slices.Contains(names, "gate"))
	})
}

// fallback is a testwait.Source that changes after FallbackCheck.
type fallback struct{}

func (fallback) Changed() <-chan struct{} {
	ch := make(chan struct{})
	time.AfterFunc(FallbackCheck, func() { close(ch) })
	return ch
}

// Await waits (up to limit) until cond holds, re-checking it whenever the
// daemon logs and every FallbackCheck. It reports whether cond held; false
// when the time ran out or the daemon exited first.
func (d *Daemon) Await(limit time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	exited := false
	testwait.Until(ctx, func() bool {
		if cond() {
			return true
		}
		select {
		case <-d.Done:
			exited = true
			return true
		default:
			return false
		}
	}, d.Log, fallback{})
	return !exited && ctx.Err() == nil || cond()
}

// WaitFor is Await that fails the test when cond does not come to hold.
func (d *Daemon) WaitFor(limit time.Duration, what string, cond func() bool) {
	d.T.Helper()
	start := time.Now()
	if d.Await(limit, cond) {
		return
	}
	select {
	case <-d.Done:
		d.T.Fatalf("yazsesd exited while waiting for %s\n%s", what, d.LogTail(40))
	default:
		d.T.Fatalf("timed out after %v waiting for %s\n%s", time.Since(start).Round(time.Millisecond), what, d.LogTail(40))
	}
}

// WaitLog waits until a daemon log record matches.
func (d *Daemon) WaitLog(limit time.Duration, what string, match func(map[string]any) bool) {
	d.T.Helper()
	d.WaitFor(limit, what, func() bool { return slices.ContainsFunc(d.LogRecords(), match) })
}

// Ask calls ask_human on a fresh connection.
func (d *Daemon) Ask(question string, timeoutS int) daemonapi.AskResult {
	d.T.Helper()
	c := d.Client()
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(timeoutS+60)*time.Second)
	defer cancel()
	r, err := c.AskHuman(ctx, daemonapi.AskParams{Question: question, TimeoutS: timeoutS})
	if err != nil {
		d.T.Fatalf("ask_human: %v\n%s", err, d.LogTail(30))
	}
	return r
}

// Events reads the audit log.
func (d *Daemon) Events() []audit.Event {
	d.T.Helper()
	evs, err := audit.Read(d.Audit, 10000)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // nothing audited yet
	}
	if err != nil {
		d.T.Fatalf("read audit: %v", err)
	}
	return evs
}

// Count counts audit events of kind (and reason, when not empty).
func (d *Daemon) Count(kind, reason string) int {
	n := 0
	for _, e := range d.Events() {
		if e.Kind == kind && (reason == "" || e.Reason == reason) {
			n++
		}
	}
	return n
}

// LogRecords are the daemon's JSON log lines.
func (d *Daemon) LogRecords() []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(d.Log.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// Records are the daemon's log records with msg, from child (or, with
// child "", the daemon's own records).
func (d *Daemon) Records(child, msg string) []map[string]any {
	var out []map[string]any
	for _, m := range d.LogRecords() {
		c, _ := m["child"].(string)
		if c == child && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// SpokenBySpeaker counts the utterances the speaker child itself reports
// as played to the end or broken off after audio started: the count of
// questions heard, taken from the speak child, not from the daemon's own
// bookkeeping.
func (d *Daemon) SpokenBySpeaker() int {
	n := 0
	for _, m := range d.LogRecords() {
		if m["child"] != "speak" {
			continue
		}
		switch {
		case m["msg"] == "spoken":
			n++
		case m["msg"] == "playback failed" && m["audible"] == true:
			n++
		}
	}
	return n
}

// Budget is the budget part of the status.
func (d *Daemon) Budget() daemonapi.BudgetStatus { return d.Status().Budget }

// PidOf returns the pid of a running child.
func (d *Daemon) PidOf(name string) int {
	d.T.Helper()
	c := d.Child(name)
	if c.PID == 0 {
		d.T.Fatalf("child %s not running: %+v", name, c)
	}
	return c.PID
}

// FDs counts the daemon's open file descriptors.
func (d *Daemon) FDs() int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", d.Cmd.Process.Pid))
	if err != nil {
		d.T.Fatal(err)
	}
	return len(ents)
}
