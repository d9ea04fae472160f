package supervise

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/internal/testwait"
)

// TestMain doubles as the child program: with CHILD_MODE set, the test
// binary behaves as the mode says instead of running tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("CHILD_MODE"); mode != "" {
		os.Exit(child(mode))
	}
	goleak.VerifyTestMain(m)
}

// report writes one line to fd 3 when CHILD_REPORT=1.
func report(format string, a ...any) {
	if os.Getenv("CHILD_REPORT") != "1" {
		return
	}
	f := os.NewFile(3, "report")
	fmt.Fprintf(f, format+"\n", a...)
}

func ready() {
	fd, err := strconv.Atoi(os.Getenv(ReadyEnv))
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "ready")
	f.Write([]byte("\n"))
	f.Close()
}

func child(mode string) int {
	args := strings.Join(os.Args[1:], " ")
	switch mode {
	case "exit0":
		report("pid %d %s", os.Getpid(), args)
		return 0
	case "exit1":
		report("pid %d %s", os.Getpid(), args)
		return 1
	case "exit125":
		report("pid %d %s", os.Getpid(), args)
		return 125
	case "ready":
		report("pid %d fdnames=%s readyfd=%s", os.Getpid(), os.Getenv(FDNamesEnv), os.Getenv(ReadyEnv))
		ready()
	case "readyline":
		// The readiness line CHILD_READY_LINE, as yaz-decode --serve
		// writes one naming its device.
		report("pid %d", os.Getpid())
		if fd, err := strconv.Atoi(os.Getenv(ReadyEnv)); err == nil {
			f := os.NewFile(uintptr(fd), "ready")
			f.Write([]byte(os.Getenv("CHILD_READY_LINE")))
			f.Close()
		}
	case "notready":
		report("pid %d", os.Getpid())
	case "term":
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM)
		report("pid %d", os.Getpid())
		ready()
		<-ch
		report("term")
		return 0
	case "ignoreterm":
		signal.Ignore(syscall.SIGTERM)
		report("pid %d", os.Getpid())
		ready()
	case "grandchild":
		gc := exec.Command(os.Args[0])
		gc.Env = append(os.Environ(), "CHILD_MODE=sleep", "CHILD_REPORT=0")
		if err := gc.Start(); err != nil {
			return 3
		}
		report("pid %d %d", os.Getpid(), gc.Process.Pid)
		ready()
		if os.Getenv("CHILD_EXIT") == "1" {
			return 1
		}
	case "stderr":
		w := bufio.NewWriter(os.Stderr)
		fmt.Fprintln(w, "plain line")
		fmt.Fprintln(w, `{"time":"x","level":"WARN","msg":"json msg","k":"v","child":"spoof"}`)
		fmt.Fprintln(w, `{"broken json`)
		w.Write([]byte("\xff\xfe garbage\n"))
		fmt.Fprintln(w, strings.Repeat("L", 100<<10))
		fmt.Fprintln(w, "after long")
		fmt.Fprint(w, "no newline at end")
		w.Flush()
		return 0
	case "sleep":
	default:
		return 2
	}
	// A child process's own life, not a wait of the test: it runs until
	// the supervisor (or the test's cleanup) kills it.
	time.Sleep(time.Hour)
	return 0
}

// reporter is the parent's end of the children's fd 3.
type reporter struct {
	w     *os.File
	lines chan string
}

func newReporter(t *testing.T) *reporter {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	rep := &reporter{w: w, lines: make(chan string, 100)}
	go func() {
		defer close(rep.lines)
		defer r.Close()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			rep.lines <- sc.Text()
		}
	}()
	return rep
}

func (r *reporter) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-r.lines:
		if !ok {
			t.Fatal("report pipe closed")
		}
		return l
	case <-time.After(testwait.Hang):
		t.Fatalf("no report from the child within %v", testwait.Hang)
	}
	return ""
}

// close closes our write end and returns the lines not yet read; call it
// once every child is gone.
func (r *reporter) close() []string {
	r.w.Close()
	var rest []string
	for l := range r.lines {
		rest = append(rest, l)
	}
	return rest
}

// childSpec is a Spec re-executing the test binary in mode, reporting on rep.
func childSpec(mode string, rep *reporter, env ...string) Spec {
	return Spec{
		Name:        "dec",
		Argv:        []string{os.Args[0]},
		Env:         append([]string{"CHILD_MODE=" + mode, "CHILD_REPORT=1"}, env...),
		ExtraFiles:  []*os.File{rep.w},
		FDNames:     []string{"report"},
		BackoffBase: 10 * time.Millisecond,
		BackoffMax:  20 * time.Millisecond,
		StopGrace:   2 * time.Second,
		// A start of this binary under -race on a loaded machine can take
		// seconds; the tests of the readiness timeout set a short one.
		ReadyTimeout: testwait.Hang,
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) records(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(s.b.Bytes()), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func testLogger() (*slog.Logger, *syncBuf) {
	b := &syncBuf{}
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// start runs c in the background; wait returns Run's error.
func start(c *Child) (cancel func(), wait func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	var once sync.Once
	var err error
	return cancel, func() error {
		once.Do(func() {
			select {
			case err = <-errc:
			case <-time.After(testwait.Hang):
				err = fmt.Errorf("Run did not return within %v", testwait.Hang)
			}
		})
		return err
	}
}

func pidOf(t *testing.T, line string, field int) int {
	t.Helper()
	f := strings.Fields(line)
	if len(f) <= field || f[0] != "pid" {
		t.Fatalf("report %q: no pid field %d", line, field)
	}
	n, err := strconv.Atoi(f[field])
	if err != nil {
		t.Fatalf("report %q: %v", line, err)
	}
	return n
}

// gone reports whether pid has ended (exited: a zombie counts) within
// testwait.Hang (a guard, not a speed requirement: every caller expects
// the process gone), waiting on its pidfd.
func gone(pid int) bool {
	exited, err := testwait.Exited(pid)
	if err != nil {
		return false
	}
	t := time.NewTimer(testwait.Hang)
	defer t.Stop()
	select {
	case <-exited:
		return true
	case <-t.C:
		return false
	}
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		mode     string
		zeroStop bool // Spec.ExitZeroStops
		burst    int
		window   time.Duration
		wantErr  error
		state    State
		lastExit string
		starts   int
	}{
		{"exit0", true, 5, 0, nil, StateStopped, "exit 0", 1},
		{"exit125", false, 5, 0, nil, StateExited, "exit 125", 1},
		{"exit125", true, 5, 0, nil, StateExited, "exit 125", 1},
		// The window is wide: 5 starts of this binary under -race on a
		// loaded machine take seconds.
		{"exit0", false, 5, testwait.Hang, ErrCrashLoop, StateCrashLoop, "exit 0", 5},
		{"exit1", false, 5, testwait.Hang, ErrCrashLoop, StateCrashLoop, "exit 1", 5},
		{"exit1", true, 3, testwait.Hang, ErrCrashLoop, StateCrashLoop, "exit 1", 3},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/zerostops=%t/burst%d", tt.mode, tt.zeroStop, tt.burst), func(t *testing.T) {
			rep := newReporter(t)
			spec := childSpec(tt.mode, rep)
			spec.CrashBurst, spec.CrashWindow, spec.ExitZeroStops = tt.burst, tt.window, tt.zeroStop
			c := New(spec, slog.New(slog.DiscardHandler))
			cancel, wait := start(c)
			defer cancel()
			err := wait()
			lines := rep.close()
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("Run() = %v, want %v", err, tt.wantErr)
			}
			st := c.Status()
			if st.State != tt.state || st.LastExit != tt.lastExit || st.PID != 0 {
				t.Errorf("Status() = %+v, want state %s, last exit %q, pid 0", st, tt.state, tt.lastExit)
			}
			if len(lines) != tt.starts || st.Restarts != tt.starts-1 {
				t.Errorf("starts = %d (Restarts %d), want %d", len(lines), st.Restarts, tt.starts)
			}
		})
	}
}

// A child that someone else stops with SIGTERM exits 0, as every YazSes
// program does on SIGTERM: while the supervisor's context lives, that end
// is restarted like any other, and the child is running again.
func TestSIGTERMFromOutsideRestarts(t *testing.T) {
	rep := newReporter(t)
	spec := childSpec("term", rep)
	spec.Ready, spec.CrashWindow = true, testwait.Hang
	c := New(spec, slog.New(slog.DiscardHandler))
	running := make(chan int, 4)
	c.OnStart(func(pid, restart int) { running <- restart })
	cancel, wait := start(c)
	defer func() {
		cancel()
		if err := wait(); err != nil {
			t.Errorf("Run() = %v, want nil", err)
		}
		rep.close()
	}()
	pid := pidOf(t, rep.next(t), 1)
	testwait.Recv(t, running, "the first start to be ready")
	if err := unix.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if l := rep.next(t); l != "term" {
		t.Fatalf("report %q, want term", l)
	}
	if l := rep.next(t); pidOf(t, l, 1) == pid {
		t.Fatalf("report %q: the same pid after its end", l)
	}
	if n := testwait.Recv(t, running, "the child to be running again after SIGTERM"); n != 1 {
		t.Errorf("restart number %d, want 1", n)
	}
	if st := c.Status(); st.State != StateRunning || st.LastExit != "exit 0" || st.Restarts != 1 {
		t.Errorf("Status() = %+v, want running after one restart, last exit 0", st)
	}
}

// A crash window shorter than the backoff never trips the guard.
func TestCrashWindowExpires(t *testing.T) {
	rep := newReporter(t)
	spec := childSpec("exit1", rep)
	spec.CrashBurst, spec.CrashWindow = 2, time.Millisecond
	c := New(spec, slog.New(slog.DiscardHandler))
	cancel, wait := start(c)
	for range 4 {
		rep.next(t)
	}
	cancel()
	if err := wait(); err != nil {
		t.Errorf("Run() = %v, want nil", err)
	}
	rep.close()
	if st := c.Status(); st.State != StateStopped || st.Restarts < 3 {
		t.Errorf("Status() = %+v, want stopped after at least 3 restarts", st)
	}
}

func TestBackoff(t *testing.T) {
	s := time.Second
	tests := []struct {
		n    int
		want time.Duration
	}{{1, s}, {2, 2 * s}, {3, 4 * s}, {4, 8 * s}, {5, 16 * s}, {6, 30 * s}, {7, 30 * s}, {100, 30 * s}}
	for _, tt := range tests {
		if got := Backoff(tt.n, DefaultBackoffBase, DefaultBackoffMax); got != tt.want {
			t.Errorf("Backoff(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
}

// Real restarts are spaced by at least the backoff steps, and ArgvFor is
// asked on every start.
func TestBackoffSteps(t *testing.T) {
	rep := newReporter(t)
	spec := childSpec("exit1", rep)
	spec.BackoffBase, spec.BackoffMax = 100*time.Millisecond, 200*time.Millisecond
	spec.CrashBurst = 5
	spec.ArgvFor = func(n int) []string { return []string{os.Args[0], "r=" + strconv.Itoa(n)} }
	c := New(spec, slog.New(slog.DiscardHandler))
	cancel, wait := start(c)
	defer cancel()
	var at []time.Time
	for i := range 5 {
		l := rep.next(t)
		at = append(at, time.Now())
		if want := "r=" + strconv.Itoa(i); !strings.HasSuffix(l, want) {
			t.Errorf("start %d: args %q, want %s", i, l, want)
		}
	}
	if err := wait(); !errors.Is(err, ErrCrashLoop) {
		t.Errorf("Run() = %v, want ErrCrashLoop", err)
	}
	rep.close()
	for i, want := range []time.Duration{100, 200, 200, 200} {
		want *= time.Millisecond
		if gap := at[i+1].Sub(at[i]); gap < want {
			t.Errorf("gap before restart %d = %v, want ≥ %v", i+1, gap, want)
		}
	}
}

func TestNotReady(t *testing.T) {
	rep := newReporter(t)
	spec := childSpec("notready", rep)
	spec.Ready, spec.ReadyTimeout, spec.CrashBurst = true, 300*time.Millisecond, 2
	var logs syncBuf
	c := New(spec, slog.New(slog.NewJSONHandler(&logs, nil)))
	c.OnStart(func(pid, n int) { t.Errorf("OnStart(%d, %d) called for a child never ready", pid, n) })
	t0 := time.Now()
	_, wait := start(c)
	err := wait()
	if !errors.Is(err, ErrNotReady) || !errors.Is(err, ErrCrashLoop) {
		t.Errorf("Run() = %v, want ErrNotReady and ErrCrashLoop", err)
	}
	if d := time.Since(t0); d < 600*time.Millisecond {
		t.Errorf("Run took %v, want ≥ 2 readiness timeouts", d)
	}
	// The starts are the supervisor's own records: a child on a loaded
	// machine may be killed at its readiness timeout before it reports.
	rep.close()
	var pids []int
	for _, r := range logs.records(t) {
		if r["msg"] == "child started" {
			pid, _ := r["pid"].(float64)
			pids = append(pids, int(pid))
		}
	}
	if len(pids) != 2 {
		t.Fatalf("starts = %d (pids %v), want 2", len(pids), pids)
	}
	for _, pid := range pids {
		if !gone(pid) {
			t.Errorf("child %d still alive after not being ready", pid)
		}
	}
	if st := c.Status(); st.LastExit != "not ready" || st.State != StateCrashLoop {
		t.Errorf("Status() = %+v, want crashloop, not ready", st)
	}
}

func TestReadyAndExtraFiles(t *testing.T) {
	rep := newReporter(t)
	spec := childSpec("ready", rep)
	spec.Ready = true
	c := New(spec, slog.New(slog.DiscardHandler))
	started := make(chan int, 1)
	c.OnStart(func(pid, n int) { started <- pid })
	cancel, wait := start(c)
	defer cancel()
	line := rep.next(t)
	pid := testwait.Recv(t, started, "the child's start")
	if want := fmt.Sprintf("pid %d fdnames=report readyfd=4", pid); line != want {
		t.Errorf("child reported %q, want %q", line, want)
	}
	if st := c.Status(); st.State != StateRunning || st.PID != pid {
		t.Errorf("Status() = %+v, want running pid %d", st, pid)
	}
	cancel()
	if err := wait(); err != nil {
		t.Errorf("Run() = %v", err)
	}
	rep.close()
	if !gone(pid) {
		t.Errorf("child %d alive after Run returned", pid)
	}
	if st := c.Status(); st.State != StateStopped || st.PID != 0 {
		t.Errorf("Status() = %+v, want stopped", st)
	}
}

// TestReadyLine: a readiness line may say what the child is ready with
// (yaz-decode --serve names its device there): Status.Ready is its text
// until the next start; a bare newline says nothing, and a line without
// its newline within MaxReadyLine bytes is no readiness.
func TestReadyLine(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		ready      bool
		want       string
	}{
		{"bare", "\n", true, ""},
		{"json", `{"device":{"name":"Vulkan0","kind":"software"}}` + "\n", true, `{"device":{"name":"Vulkan0","kind":"software"}}`},
		{"no newline", `{"device":{}}`, false, ""},
		{"too long", strings.Repeat("x", MaxReadyLine+1) + "\n", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := newReporter(t)
			spec := childSpec("readyline", rep, "CHILD_READY_LINE="+tc.line)
			spec.Ready, spec.CrashBurst = true, 1
			c := New(spec, slog.New(slog.DiscardHandler))
			// The start, or Run's end (a child never ready: a crash loop
			// at once, with CrashBurst 1).
			started := make(chan error, 2)
			c.OnStart(func(pid, n int) { started <- nil })
			cancel, wait := start(c)
			defer cancel()
			go func() { started <- wait() }()
			pidOf(t, rep.next(t), 1)
			err := testwait.Recv(t, started, "the child's start or Run's end")
			switch {
			case !tc.ready:
				if !errors.Is(err, ErrNotReady) {
					t.Errorf("readiness line %.40q: Run() = %v, want ErrNotReady", tc.line, err)
				}
				if st := c.Status(); st.Ready != "" {
					t.Errorf("Status().Ready = %.40q of a child never ready", st.Ready)
				}
				rep.close()
				return
			case err != nil:
				t.Fatalf("readiness line %q: Run() = %v before the child started", tc.line, err)
			}
			if st := c.Status(); st.State != StateRunning || st.Ready != tc.want {
				t.Errorf("readiness line %q: Status() = %+v, want running with Ready %q", tc.line, st, tc.want)
			}
			cancel()
			if err := wait(); err != nil {
				t.Errorf("Run() = %v", err)
			}
			rep.close()
		})
	}
}

func TestStop(t *testing.T) {
	t.Run("sigterm", func(t *testing.T) {
		rep := newReporter(t)
		spec := childSpec("term", rep)
		// The grace is long: a child killed at its end would say
		// "signal killed", not exit 0, however slow the machine.
		spec.Ready, spec.StopGrace = true, time.Minute
		c := New(spec, slog.New(slog.DiscardHandler))
		cancel, wait := start(c)
		defer cancel()
		rep.next(t)
		waitState(t, c, StateRunning)
		cancel()
		if l := rep.next(t); l != "term" {
			t.Errorf("child reported %q, want term", l)
		}
		if err := wait(); err != nil {
			t.Errorf("Run() = %v", err)
		}
		rep.close()
		if st := c.Status(); st.LastExit != "exit 0" {
			t.Errorf("LastExit = %q, want exit 0", st.LastExit)
		}
	})
	t.Run("sigkill-after-grace", func(t *testing.T) {
		rep := newReporter(t)
		spec := childSpec("ignoreterm", rep)
		spec.Ready, spec.StopGrace = true, 300*time.Millisecond
		c := New(spec, slog.New(slog.DiscardHandler))
		cancel, wait := start(c)
		defer cancel()
		pid := pidOf(t, rep.next(t), 1)
		waitState(t, c, StateRunning)
		t0 := time.Now()
		cancel()
		if err := wait(); err != nil {
			t.Errorf("Run() = %v", err)
		}
		if d := time.Since(t0); d < 300*time.Millisecond {
			t.Errorf("stop took %v, want ≥ grace", d)
		}
		rep.close()
		if st := c.Status(); st.LastExit != "signal killed" {
			t.Errorf("LastExit = %q, want signal killed", st.LastExit)
		}
		if !gone(pid) {
			t.Errorf("child %d alive", pid)
		}
	})
}

// waitState waits (bounded by testwait.Hang) until c is in state s,
// looking again at each of its changes of state.
func waitState(t *testing.T, c *Child, s State) {
	t.Helper()
	var changed testwait.Signal
	c.OnState(func(Status) { changed.Notify() })
	if err := testwait.Until(testwait.Context(t), func() bool { return c.Status().State == s }, &changed); err != nil {
		t.Fatalf("state %s not reached; Status() = %+v", s, c.Status())
	}
}

func TestGrandchildKilled(t *testing.T) {
	for _, exit := range []string{"0", "1"} {
		name := map[string]string{"0": "on-stop", "1": "on-crash"}[exit]
		t.Run(name, func(t *testing.T) {
			rep := newReporter(t)
			spec := childSpec("grandchild", rep, "CHILD_EXIT="+exit)
			spec.Ready, spec.CrashBurst = true, 1
			c := New(spec, slog.New(slog.DiscardHandler))
			cancel, wait := start(c)
			defer cancel()
			gpid := pidOf(t, rep.next(t), 2)
			if exit == "0" {
				waitState(t, c, StateRunning)
				cancel()
			}
			err := wait()
			if exit == "1" && !errors.Is(err, ErrCrashLoop) || exit == "0" && err != nil {
				t.Errorf("Run() = %v", err)
			}
			if !gone(gpid) { // before rep.close: a live grandchild holds fd 3
				unix.Kill(gpid, unix.SIGKILL)
				t.Errorf("grandchild %d outlived its child", gpid)
			}
			rep.close()
		})
	}
}

func TestStderrRelabelled(t *testing.T) {
	rep := newReporter(t)
	log, buf := testLogger()
	spec := childSpec("stderr", rep)
	spec.ExitZeroStops = true // one start: its lines are the test
	c := New(spec, log)
	cancel, wait := start(c)
	defer cancel()
	if err := wait(); err != nil {
		t.Fatalf("Run() = %v", err)
	}
	rep.close()
	type rec struct {
		Level, Msg, K string
		Truncated     bool
	}
	var got []rec
	for _, m := range buf.records(t) {
		if m["child"] != "dec" {
			t.Errorf("record %v: child = %v, want dec", m, m["child"])
		}
		msg, _ := m["msg"].(string)
		if strings.HasPrefix(msg, "child ") {
			continue // the supervisor's own records
		}
		if len(msg) > MaxLogLine {
			t.Errorf("record of %d bytes, want ≤ %d", len(msg), MaxLogLine)
		}
		if strings.HasPrefix(msg, "LLLL") {
			msg = "LONG"
		}
		k, _ := m["k"].(string)
		tr, _ := m["truncated"].(bool)
		got = append(got, rec{m["level"].(string), msg, k, tr})
	}
	want := []rec{
		{"INFO", "plain line", "", false},
		{"WARN", "json msg", "v", false},
		{"INFO", `{"broken json`, "", false},
		{"INFO", "\ufffd\ufffd garbage", "", false},
		{"INFO", "LONG", "", true},
		{"INFO", "after long", "", false},
		{"INFO", "no newline at end", "", false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("child records (-want +got):\n%s", diff)
	}
}

func TestRestart(t *testing.T) {
	rep := newReporter(t)
	spec := childSpec("ready", rep)
	// A restart that waited for the backoff would take 10 minutes, past
	// Recv's bound: a restart on request comes at once.
	spec.Ready, spec.BackoffBase, spec.BackoffMax = true, 10*time.Minute, 10*time.Minute
	c := New(spec, slog.New(slog.DiscardHandler))
	started := make(chan [2]int, 2)
	c.OnStart(func(pid, n int) { started <- [2]int{pid, n} })
	cancel, wait := start(c)
	defer cancel()
	first := testwait.Recv(t, started, "the first start")
	rep.next(t)
	c.Restart()
	second := testwait.Recv(t, started, "the start after Restart (with no backoff; it is 10 min)")
	rep.next(t)
	if second[0] == first[0] || first[1] != 0 || second[1] != 1 {
		t.Errorf("starts %v then %v, want a new pid and restart 1", first, second)
	}
	if !gone(first[0]) {
		t.Errorf("old child %d alive", first[0])
	}
	if st := c.Status(); st.Restarts != 1 || st.PID != second[0] || st.LastExit != "signal killed" {
		t.Errorf("Status() = %+v, want 1 restart, pid %d, signal killed", st, second[0])
	}
	cancel()
	if err := wait(); err != nil {
		t.Errorf("Run() = %v", err)
	}
	rep.close()
}

func fdCount(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

func TestNoFDLeak(t *testing.T) {
	rep := newReporter(t)
	before := fdCount(t)
	for _, mode := range []string{"exit1", "notready", "ready"} {
		spec := childSpec(mode, rep)
		spec.Ready, spec.ReadyTimeout, spec.CrashBurst = true, 200*time.Millisecond, 3
		if mode == "ready" {
			// This child is ready when it has started, which takes more
			// than 200 ms on a loaded machine: its case is the restart.
			spec.ReadyTimeout = testwait.Hang
		}
		spec.Stdin = func() (*os.File, error) { return os.Open(os.DevNull) }
		spec.Stdout = func() (*os.File, error) { return os.OpenFile(os.DevNull, os.O_WRONLY, 0) }
		c := New(spec, slog.New(slog.DiscardHandler))
		if mode == "ready" {
			started := make(chan int, 2)
			c.OnStart(func(pid, n int) { started <- n })
			cancel, wait := start(c)
			t.Cleanup(cancel)
			testwait.Recv(t, started, "the ready child's first start")
			c.Restart()
			testwait.Recv(t, started, "its start after Restart")
			cancel()
			if err := wait(); err != nil {
				t.Errorf("Run(%s) = %v", mode, err)
			}
			continue
		}
		cancel, wait := start(c)
		err := wait()
		cancel()
		if !errors.Is(err, ErrCrashLoop) {
			t.Errorf("Run(%s) = %v, want ErrCrashLoop", mode, err)
		}
	}
	if after := fdCount(t); after != before {
		t.Errorf("open fds: %d before, %d after", before, after)
	}
	rep.close()
}

// Exit 0 (with ExitZeroStops) and 125 keep their meaning when the child
// exits before it said it was ready: stopped, and never restarted.
func TestExitBeforeReady(t *testing.T) {
	for code, want := range map[string]State{"0": StateStopped, "125": StateExited} {
		t.Run(code, func(t *testing.T) {
			c := New(Spec{Name: "early", Argv: []string{"/bin/sh", "-c", "exit " + code}, Ready: true, ExitZeroStops: true}, slog.New(slog.DiscardHandler))
			if err := c.Run(testwait.Context(t)); err != nil {
				t.Fatalf("Run() = %v, want nil", err)
			}
			if st := c.Status(); st.State != want || st.Restarts != 0 || st.LastExit != "exit "+code {
				t.Errorf("Status() = %+v, want %s after one start, last exit %s", st, want, code)
			}
		})
	}
}

// A child that cannot start for a known cause (contract 2) logs one ERROR
// record with a cause attribute and exits 125 before it is ready: the
// supervisor keeps the cause and the message in Status, does not restart
// it, and the next start begins with no cause. A cause logged by a child
// that goes on to fail with another exit code is kept too, for the crash
// loop's account; a WARN with a cause attribute is no cause.
func TestCause(t *testing.T) {
	const msg = "model not found: /m/ggml-base.en.bin — fetch one with yaz-fetch-model base.en"
	script := func(level, code string) []string {
		rec := `{"time":"x","level":"` + level + `","msg":"` + msg + `","cause":"model_missing"}`
		return []string{"/bin/sh", "-c", "echo 'some noise first' >&2; echo '" + rec + "' >&2; exit " + code}
	}
	ctx := testwait.Context(t)

	c := New(Spec{Name: "decode", Argv: script("ERROR", "125"), Ready: true}, slog.New(slog.DiscardHandler))
	var states []State
	var mu sync.Mutex
	c.OnState(func(st Status) {
		mu.Lock()
		states = append(states, st.State)
		mu.Unlock()
		if st.State == StateExited && (st.Cause != "model_missing" || st.Reason != msg) {
			t.Errorf("hook saw %s without its cause: %+v", st.State, st)
		}
	})
	if err := c.Run(ctx); err != nil {
		t.Fatalf("Run = %v", err)
	}
	st := c.Status()
	if st.State != StateExited || st.Restarts != 0 || st.Cause != "model_missing" || st.Reason != msg {
		t.Errorf("Status() = %+v, want exited once with cause model_missing and the message", st)
	}
	mu.Lock()
	if want := []State{StateStarting, StateStarting, StateExited}; !cmp.Equal(states, want) {
		t.Errorf("states seen by OnState = %v, want %v", states, want)
	}
	mu.Unlock()

	// Exit 1 with a cause: restarted as any failure, the cause shown.
	c = New(Spec{Name: "decode", Argv: script("ERROR", "1"), Ready: true, BackoffBase: time.Millisecond,
		BackoffMax: time.Millisecond, CrashBurst: 3}, slog.New(slog.DiscardHandler))
	if err := c.Run(ctx); !errors.Is(err, ErrCrashLoop) {
		t.Fatalf("Run = %v, want a crash loop", err)
	}
	if st := c.Status(); st.State != StateCrashLoop || st.Cause != "model_missing" || st.Reason != msg {
		t.Errorf("Status() = %+v, want crashloop with the cause", st)
	}

	// Not an ERROR: no cause.
	c = New(Spec{Name: "decode", Argv: script("WARN", "125"), Ready: true}, slog.New(slog.DiscardHandler))
	c.Run(ctx)
	if st := c.Status(); st.Cause != "" || st.Reason != "" {
		t.Errorf("Status() after a WARN with a cause = %+v, want no cause", st)
	}

	// The cause is cleared when the child starts again and comes up.
	rep := newReporter(t)
	defer rep.close()
	flag := filepath.Join(t.TempDir(), "fixed")
	spec := childSpec("ready", rep)
	spec.Argv = []string{"/bin/sh", "-c", `if [ -e "$0" ]; then exec "$1"; fi; touch "$0"; echo '{"level":"ERROR","msg":"m","cause":"model_invalid"}' >&2; exit 1`, flag, os.Args[0]}
	spec.Ready = true
	c = New(spec, slog.New(slog.DiscardHandler))
	cancelRun, wait := start(c)
	rep.next(t) // the second start is up
	waitState(t, c, StateRunning)
	if st := c.Status(); st.Cause != "" || st.Reason != "" || st.Restarts != 1 {
		t.Errorf("Status() of the restarted child = %+v, want no cause, one restart", st)
	}
	cancelRun()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}

// Two predicates, one meaning each: Failed is a child left down by a
// failure (health reports and notifies it; a stop is not one), Down is a
// child from which no start comes by itself (a waiter for its work gives
// up: the daemon stopping included).
func TestStateFailedAndDown(t *testing.T) {
	for _, tc := range []struct {
		s            State
		failed, down bool
	}{
		{StateStarting, false, false},
		{StateRunning, false, false},
		{StateBackoff, false, false}, // a restart is coming
		{StateStopped, false, true},
		{StateCrashLoop, true, true},
		{StateExited, true, true},
	} {
		if got := tc.s.Failed(); got != tc.failed {
			t.Errorf("%s.Failed() = %v, want %v", tc.s, got, tc.failed)
		}
		if got := tc.s.Down(); got != tc.down {
			t.Errorf("%s.Down() = %v, want %v", tc.s, got, tc.down)
		}
	}
}
