package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/safesocket"
)

// toml is a configuration as table → key → raw TOML value.
type toml map[string]map[string]string

// q quotes a TOML string.
func q(s string) string { return strconv.Quote(s) }

// arr writes a TOML array of strings.
func arr(v ...string) string {
	parts := make([]string, len(v))
	for i, s := range v {
		parts[i] = q(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// baseConfig is what every daemon test starts from: ask_human on, one
// question per hour, the generated model, speech into the PulseAudio null
// sink, and the answer played in by yaz-capture --file.
func baseConfig() toml {
	return toml{
		"mcp":    {"ask_human": "true"},
		"budget": {"ask_human_per_hour": "1"},
		"ask":    {"guard_ms": "100", "answer_silence_ms": "800"},
		"decode": {"model": q(world.mini), "threads": "1"},
		"children": {
			"speak":   arr(bin("yaz-speak"), "--serve", "--backend", "pulseaudio"),
			"capture": arr(bin("yaz-capture"), "--file", answerWAV()),
			"decode":  arr(bin("yaz-decode"), "--serve"),
			"gate":    arr(bin("yaz-gate")),
		},
	}
}

func bin(name string) string { return filepath.Join(world.bin, name) }

// with returns c with the given table.key set to the raw value.
func (c toml) with(key, value string) toml {
	out := toml{}
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

func (c toml) String() string {
	var b strings.Builder
	for _, t := range slices.Sorted(maps.Keys(c)) {
		fmt.Fprintf(&b, "[%s]\n", t)
		for _, k := range slices.Sorted(maps.Keys(c[t])) {
			fmt.Fprintf(&b, "%s = %s\n", k, c[t][k])
		}
	}
	return b.String()
}

var answerOnce struct {
	sync.Once
	path string
	err  error
}

// answerWAV is a spoken answer (espeak-ng), made once for the suite.
func answerWAV() string {
	answerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "yazses-answer-")
		if err != nil {
			answerOnce.err = err
			return
		}
		p := filepath.Join(dir, "answer.wav")
		out, err := exec.Command(bin("yaz-speak"), "--out", p, "--format", "wav", "Yes, go ahead and deploy it.").CombinedOutput()
		if err != nil {
			answerOnce.err = fmt.Errorf("yaz-speak: %v: %s", err, out)
		}
		answerOnce.path = p
	})
	if answerOnce.err != nil {
		panic(answerOnce.err)
	}
	return answerOnce.path
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// daemon is one yazsesd under test, with its own runtime, config and state
// folders.
type daemon struct {
	t       testing.TB
	dir     string
	runtime string // XDG_RUNTIME_DIR
	cfgPath string
	audit   string
	env     []string
	cmd     *exec.Cmd
	log     *syncBuffer
	stdout  *syncBuffer
	done    chan struct{}
	stopped bool
	wrap    []string // a command that runs yazsesd (unshare --net)
	level   string   // --log-level; "" is debug
}

// startDaemon starts yazsesd with cfg and waits until its gate, speaker
// and decoder are running. It is stopped (SIGTERM) when the test ends,
// and the test fails if any of its processes outlives it.
func startDaemon(t testing.TB, cfg toml, env ...string) *daemon {
	t.Helper()
	d := newDaemon(t, cfg, env...)
	d.start()
	d.waitRunning("gate", "speak", "decode")
	return d
}

func newDaemon(t testing.TB, cfg toml, env ...string) *daemon {
	t.Helper()
	dir := t.TempDir()
	d := &daemon{t: t, dir: dir, runtime: filepath.Join(dir, "run"), log: &syncBuffer{}, stdout: &syncBuffer{}}
	if err := os.Mkdir(d.runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	// The configuration is where HOME alone finds it, so a client started
	// with only HOME (yaz-mcp from an MCP host) reads the same file.
	cfgHome := filepath.Join(dir, ".config")
	d.cfgPath = filepath.Join(cfgHome, "yazses", "config.toml")
	d.audit = filepath.Join(dir, "state", "yazses", "audit.jsonl")
	d.writeConfig(cfg)
	d.env = append(os.Environ(),
		"HOME="+dir,
		"XDG_RUNTIME_DIR="+d.runtime,
		"XDG_CONFIG_HOME="+cfgHome,
		"XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"XDG_DATA_HOME="+filepath.Join(dir, "data"),
	)
	d.env = append(d.env, env...)
	return d
}

func (d *daemon) writeConfig(cfg toml) {
	d.t.Helper()
	if err := os.MkdirAll(filepath.Dir(d.cfgPath), 0o700); err != nil {
		d.t.Fatal(err)
	}
	if err := os.WriteFile(d.cfgPath, []byte(cfg.String()), 0o600); err != nil {
		d.t.Fatal(err)
	}
}

func (d *daemon) start(extra ...string) {
	d.t.Helper()
	level := d.level
	if level == "" {
		level = "debug"
	}
	args := append([]string{"--log-format", "json", "--log-level", level, "run"}, extra...)
	argv := append(append(append([]string(nil), d.wrap...), bin("yazsesd")), args...)
	d.cmd = exec.Command(argv[0], argv[1:]...)
	d.cmd.Env = d.env
	d.cmd.Stderr = d.log
	d.cmd.Stdout = d.stdout
	if err := d.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.done = make(chan struct{})
	go func() { d.cmd.Wait(); close(d.done) }()
	d.t.Cleanup(d.stop)
}

// stop ends the daemon with SIGTERM and checks that it exits 0 within 10 s
// and leaves no process of its own behind.
func (d *daemon) stop() {
	d.t.Helper()
	if d.stopped {
		return
	}
	d.stopped = true
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
		d.t.Errorf("yazsesd still running 10 s after SIGTERM")
	}
	if code := d.cmd.ProcessState.ExitCode(); code != 0 && !d.t.Failed() {
		d.t.Errorf("yazsesd exit %d after SIGTERM\n%s", code, d.logTail(30))
	}
	if left := d.processes(); len(left) > 0 {
		d.t.Errorf("processes of the daemon outlived it: %v", left)
		for _, p := range left {
			syscall.Kill(p, syscall.SIGKILL)
		}
	}
	if d.t.Failed() {
		d.t.Logf("daemon log tail:\n%s", d.logTail(60))
	}
}

// processes lists the live processes that carry this daemon's runtime
// folder in their environment: the daemon and everything it started.
func (d *daemon) processes() []int {
	var pids []int
	marker := []byte("XDG_RUNTIME_DIR=" + d.runtime + "\x00")
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

func (d *daemon) logTail(n int) string {
	lines := strings.Split(strings.TrimSpace(d.log.String()), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// client dials the daemon's socket.
func (d *daemon) client() *daemonapi.Client {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := safesocket.Dial(ctx, filepath.Join(d.runtime, safesocket.DirName))
	if err != nil {
		d.t.Fatalf("dial yazsesd: %v\n%s", err, d.logTail(30))
	}
	c := daemonapi.NewClient(conn)
	d.t.Cleanup(func() { c.Close() })
	return c
}

// ctl runs `yazsesd ctl ARGS…` as a separate process, as a person would
// from a login shell: HOME, PATH and the few variables of hostEnv, plus the
// XDG_RUNTIME_DIR of this daemon's session; nothing else of the test's
// environment.
func (d *daemon) ctl(ctx context.Context, args ...string) (stdout, stderr string, code int) {
	cmd := exec.CommandContext(ctx, bin("yazsesd"), append([]string{"ctl"}, args...)...)
	cmd.Env = hostEnv(d.dir, "XDG_RUNTIME_DIR="+d.runtime)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Run()
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

func (d *daemon) status() daemonapi.Status {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := d.client()
	defer c.Close()
	st, err := c.Status(ctx)
	if err != nil {
		d.t.Fatalf("status: %v", err)
	}
	return st
}

func (d *daemon) child(name string) daemonapi.ChildStatus {
	for _, c := range d.status().Children {
		if c.Name == name {
			return c
		}
	}
	d.t.Fatalf("no child %q in status", name)
	return daemonapi.ChildStatus{}
}

// waitRunning waits (up to 30 s) until the socket answers and the named
// children run.
func (d *daemon) waitRunning(names ...string) {
	d.t.Helper()
	d.waitFor(30*time.Second, "children "+strings.Join(names, ", ")+" running", func() bool {
		conn, err := safesocket.Dial(context.Background(), filepath.Join(d.runtime, safesocket.DirName))
		if err != nil {
			return false
		}
		c := daemonapi.NewClient(conn)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st, err := c.Status(ctx)
		if err != nil {
			return false
		}
		for _, n := range names {
			ok := false
			for _, ch := range st.Children {
				ok = ok || (ch.Name == n && ch.State == "running")
			}
			if !ok {
				return false
			}
		}
		return st.Budget.Available || !slices.Contains(names, "gate")
	})
}

// waitFor polls cond every 50 ms until it holds or the time is up.
func (d *daemon) waitFor(limit time.Duration, what string, cond func() bool) {
	d.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		select {
		case <-d.done:
			d.t.Fatalf("yazsesd exited while waiting for %s\n%s", what, d.logTail(40))
		default:
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("timed out after %v waiting for %s\n%s", limit, what, d.logTail(40))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ask calls ask_human on a fresh connection.
func (d *daemon) ask(question string, timeoutS int) daemonapi.AskResult {
	d.t.Helper()
	c := d.client()
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(timeoutS+60)*time.Second)
	defer cancel()
	r, err := c.AskHuman(ctx, daemonapi.AskParams{Question: question, TimeoutS: timeoutS})
	if err != nil {
		d.t.Fatalf("ask_human: %v\n%s", err, d.logTail(30))
	}
	return r
}

// events reads the audit log.
func (d *daemon) events() []audit.Event {
	d.t.Helper()
	evs, err := audit.Read(d.audit, 10000)
	if err != nil {
		d.t.Fatalf("read audit: %v", err)
	}
	return evs
}

// count counts audit events of kind (and reason, when not empty).
func (d *daemon) count(kind, reason string) int {
	n := 0
	for _, e := range d.events() {
		if e.Kind == kind && (reason == "" || e.Reason == reason) {
			n++
		}
	}
	return n
}

// logRecords are the daemon's JSON log lines.
func (d *daemon) logRecords() []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(d.log.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// spokenBySpeaker counts the utterances the speaker child itself reports
// as played to the end or broken off after audio started: the count of
// questions heard, taken from the speak child, not from the daemon's own
// bookkeeping.
func (d *daemon) spokenBySpeaker() int {
	n := 0
	for _, m := range d.logRecords() {
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

func (d *daemon) budget() daemonapi.BudgetStatus {
	return d.status().Budget
}

// pidOf returns the pid of a running child.
func (d *daemon) pidOf(name string) int {
	d.t.Helper()
	c := d.child(name)
	if c.PID == 0 {
		d.t.Fatalf("child %s not running: %+v", name, c)
	}
	return c.PID
}

// fds counts the daemon's open file descriptors.
func (d *daemon) fds() int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", d.cmd.Process.Pid))
	if err != nil {
		d.t.Fatal(err)
	}
	return len(ents)
}
