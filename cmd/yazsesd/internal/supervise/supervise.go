// Package supervise runs one child process and keeps it running: the
// supervisor yazsesd uses for each of its children.
//
// The rules follow gokrazy's supervisor and s6:
//
//   - A child runs in its own process group (Setpgid) with Pdeathsig SIGKILL,
//     and whenever it exits the whole group is SIGKILLed, so neither the child
//     nor anything it started outlives it or the supervisor.
//   - Stop is SIGTERM to the group, a grace period, then SIGKILL.
//   - Exit 125 means "do not restart me": never restarted. Any other end
//     while the context lives is restarted, exit 0 included (every YazSes
//     program exits 0 on SIGTERM, so a child that someone else stopped
//     would otherwise stay down while the daemon serves on), unless
//     Spec.ExitZeroStops says exit 0 is the end of the child's work. The
//     restart comes after a backoff that starts at one second, doubles up
//     to 30 s and is reset after a minute of uptime. Five starts within a
//     minute trip the crash guard (systemd's StartLimitBurst; the window
//     is a minute rather than systemd's ten seconds because our backoff
//     spaces the starts 1, 2, 4 and 8 s apart: a child that fails at once
//     is given up after about 15 s): the child is left down and Run
//     returns ErrCrashLoop.
//   - Files in Spec.ExtraFiles become fd 3, 4, ... in the child, named in
//     YAZ_FDNAMES the way systemd names LISTEN_FDNAMES; the supervisor never
//     closes them, so a restarted child finds the other side still there.
//   - Readiness is explicit: with Spec.Ready the child gets a pipe's write end
//     as the next fd, named by YAZ_READY_FD, writes "\n" and closes it. The
//     line may say what the child is ready with before its newline (at most
//     MaxReadyLine bytes: yaz-decode serve names its device); Status.Ready
//     keeps it until the next start.
//   - The child's stderr is re-logged line by line with child=<name>.
//   - A child that cannot run for a reason a restart cannot fix says so in
//     one ERROR record with the attribute cause (a closed-vocabulary word
//     such as "model_missing") and a message for a person, and exits 125.
//     Status carries both (Cause, Reason) until the child starts again;
//     OnState hooks see every change of state, so the caller can show the
//     cause where the person looks.
package supervise

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/lib/linebound"
)

// Names of the variables a child receives.
const (
	// ReadyEnv names the readiness fd (same name as lib/cli.ReadyEnv).
	ReadyEnv = "YAZ_READY_FD"
	// FDNamesEnv lists the names of fd 3, 4, ... separated by ':'.
	FDNamesEnv = "YAZ_FDNAMES"
)

// Exit codes with a meaning to the supervisor.
const (
	// ExitStopped (0) ends supervision without a restart where
	// Spec.ExitZeroStops says so; otherwise it is restarted as any end.
	ExitStopped = 0
	// ExitNoRestart (125) asks never to be restarted.
	ExitNoRestart = 125
)

// Defaults for the zero values of Spec's durations and counts.
const (
	DefaultReadyTimeout = 10 * time.Second
	DefaultStopGrace    = 3 * time.Second
	DefaultBackoffBase  = time.Second
	DefaultBackoffMax   = 30 * time.Second
	DefaultBackoffReset = 60 * time.Second
	DefaultCrashWindow  = time.Minute
	DefaultCrashBurst   = 5
)

// MaxLogLine caps one re-logged stderr line; the rest of a longer line is
// dropped and the record carries truncated=true.
const MaxLogLine = 64 << 10

var (
	// ErrCrashLoop is wrapped by Run's error when the crash guard tripped.
	ErrCrashLoop = errors.New("crash loop")
	// ErrNotReady is wrapped when a child did not signal readiness in time
	// (as the last failure of a crash loop, see Run).
	ErrNotReady = errors.New("child not ready")
)

// Spec describes one supervised child.
type Spec struct {
	Name string   // "decode"; logs say child=<name>
	Argv []string // program and arguments
	// ArgvFor, when non-nil, replaces Argv and is asked on every start;
	// restart is 0 for the first start and counts up after that.
	ArgvFor    func(restart int) []string
	Env        []string   // added to os.Environ()
	ExtraFiles []*os.File // fd 3, 4, ... in the child; never closed here
	// Files, when non-nil, is called on every (re)start; its files follow
	// ExtraFiles in the child and are closed here once the child has
	// started (a fresh socketpair end per start, for example).
	Files   func(restart int) ([]*os.File, error)
	FDNames []string // passed as YAZ_FDNAMES=a:b

	// Ready makes the supervisor wait for the child's readiness line on
	// the fd named by YAZ_READY_FD (the fd after the ExtraFiles).
	Ready        bool
	ReadyTimeout time.Duration // default 10 s

	StopGrace time.Duration // SIGTERM, then SIGKILL after this; default 3 s

	// ExitZeroStops makes exit 0 the end of the child's work: stopped,
	// not restarted (a capture child that replayed its file). Without it
	// exit 0 is restarted like any other end.
	ExitZeroStops bool

	// Stdin and Stdout, when non-nil, are called on every (re)start; the
	// file they return is handed to the child and closed here once the
	// child has started (the child keeps its copy). Nil means /dev/null.
	Stdin  func() (*os.File, error)
	Stdout func() (*os.File, error)

	BackoffBase  time.Duration // first restart delay; default 1 s
	BackoffMax   time.Duration // cap of the doubling delay; default 30 s
	BackoffReset time.Duration // uptime that resets the delay; default 60 s
	CrashWindow  time.Duration // default 1 min
	CrashBurst   int           // starts within CrashWindow that trip the guard; default 5
}

// State is where a child is in its life.
type State string

// The states of a child.
const (
	StateStarting  State = "starting"  // started, waiting for readiness
	StateRunning   State = "running"   // up (and ready, if asked)
	StateBackoff   State = "backoff"   // ended abnormally, restart pending
	StateStopped   State = "stopped"   // stopped by the context, or exited 0 with ExitZeroStops
	StateCrashLoop State = "crashloop" // crash guard tripped; left down
	StateExited    State = "exited"    // exited 125; never restarted
)

// Failed reports a state in which the child was left down by a failure
// and stays down until the daemon restarts: exited 125 (a cause it named)
// or a crash loop. It is what health reports and notifies; a child that
// merely stopped has not failed.
func (s State) Failed() bool { return s == StateExited || s == StateCrashLoop }

// Down reports a state from which no start comes by itself: Failed, or
// stopped (by the context, or exited 0 with Spec.ExitZeroStops). A waiter
// for the child's work gives up on it.
func (s State) Down() bool { return s.Failed() || s == StateStopped }

// Status is a snapshot of a child for `yazsesd status`.
type Status struct {
	Name     string
	State    State
	PID      int    // 0 when no process runs
	Restarts int    // starts after the first one
	LastExit string // "exit 1", "signal killed", "not ready", "start failed"
	Since    time.Time
	// Cause and Reason are what the current (or last) start said in its
	// last ERROR record with a cause attribute: the word and the message
	// ("model_missing", "model not found: … — fetch one with …"). Both
	// are empty when it said none; a new start clears them.
	Cause  string
	Reason string
	// Ready is what the current start said on its readiness line before
	// the newline ("" for a bare newline, as most children write, and
	// until the child is ready): yaz-decode serve names the device its
	// model loaded on there (package device). A new start clears it.
	Ready string
}

// MaxReadyLine is the longest readiness line a child may write, newline
// included; a longer one is no readiness.
const MaxReadyLine = 4096

// Child supervises one Spec. Make it with New and call Run once at a time.
type Child struct {
	spec Spec
	log  *slog.Logger

	restart chan struct{}

	mu         sync.Mutex
	st         Status
	running    bool
	hooks      []func(pid, restart int)
	stateHooks []func(Status)
}

// New returns a Child for spec, logging through log (nil means
// slog.Default()). Zero durations and counts in spec take the defaults.
func New(spec Spec, log *slog.Logger) *Child {
	if log == nil {
		log = slog.Default()
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&spec.ReadyTimeout, DefaultReadyTimeout)
	def(&spec.StopGrace, DefaultStopGrace)
	def(&spec.BackoffBase, DefaultBackoffBase)
	def(&spec.BackoffMax, DefaultBackoffMax)
	def(&spec.BackoffReset, DefaultBackoffReset)
	def(&spec.CrashWindow, DefaultCrashWindow)
	if spec.CrashBurst <= 0 {
		spec.CrashBurst = DefaultCrashBurst
	}
	c := &Child{
		spec:    spec,
		log:     log.With("child", spec.Name),
		restart: make(chan struct{}, 1),
	}
	c.st = Status{Name: spec.Name, State: StateStopped, Since: time.Now()}
	return c
}

// OnStart adds a hook called after each successful start (and readiness,
// if asked), with the child's pid and its restart number (0 first). Hooks
// run on Run's goroutine and must not block for long.
func (c *Child) OnStart(f func(pid int, restart int)) {
	c.mu.Lock()
	c.hooks = append(c.hooks, f)
	c.mu.Unlock()
}

// OnState adds a hook called with a snapshot after every change of state
// (starting, running, backoff, stopped, crashloop, exited). Hooks run on
// Run's goroutine, in order, and must not block for long.
func (c *Child) OnState(f func(Status)) {
	c.mu.Lock()
	c.stateHooks = append(c.stateHooks, f)
	c.mu.Unlock()
}

// Status returns a snapshot of the child.
func (c *Child) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

// Restart SIGKILLs the running child's process group so that Run starts it
// again at once, without backoff. During a backoff it cuts the wait short.
// It does nothing when Run is not running. A restart counts as a start for
// the crash guard.
func (c *Child) Restart() {
	select {
	case c.restart <- struct{}{}:
	default:
	}
}

func (c *Child) set(f func(*Status)) {
	c.mu.Lock()
	f(&c.st)
	c.mu.Unlock()
}

func (c *Child) setState(s State, pid int) {
	c.mu.Lock()
	c.st.State, c.st.PID, c.st.Since = s, pid, time.Now()
	snap, hooks := c.st, slices.Clone(c.stateHooks)
	c.mu.Unlock()
	for _, h := range hooks {
		h(snap)
	}
}

// Backoff returns the delay before restart n (n ≥ 1 counts the failures
// since the last reset): base, 2·base, 4·base, … capped at max.
func Backoff(n int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// Run supervises the child until ctx is done, then stops it (SIGTERM to the
// group, StopGrace, SIGKILL), waits for it and returns nil. It also returns
// nil when the child exits 125 (state exited), or 0 with Spec.ExitZeroStops
// (state stopped); any other end is restarted. When CrashBurst starts fall
// within CrashWindow and the last one ended abnormally, Run leaves the
// child down in state crashloop and returns an error wrapping ErrCrashLoop
// (and ErrNotReady, if readiness was what failed last).
func (c *Child) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.running {
		c.mu.Unlock()
		return fmt.Errorf("supervise %s: already running", c.spec.Name)
	}
	c.running = true
	c.st.Restarts = 0
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.running = false
		c.mu.Unlock()
	}()
	select { // a Restart from before this Run means nothing now
	case <-c.restart:
	default:
	}

	var starts []time.Time
	failures := 0
	for n := 0; ; n++ {
		if ctx.Err() != nil {
			c.setState(StateStopped, 0)
			return nil
		}
		if n > 0 {
			c.set(func(st *Status) { st.Restarts = n })
		}
		now := time.Now()
		starts = append(starts, now)
		i := 0
		for i < len(starts) && now.Sub(starts[i]) >= c.spec.CrashWindow {
			i++
		}
		starts = starts[i:]

		res := c.runOnce(ctx, n)
		if res.uptime >= c.spec.BackoffReset {
			failures = 0
		}
		c.set(func(st *Status) { st.LastExit = res.exit })
		switch {
		case res.ctxDone:
			c.setState(StateStopped, 0)
			return nil
		case res.restarted:
			c.log.Info("restarting on request", "last_exit", res.exit)
			continue
		case res.code == ExitStopped && c.spec.ExitZeroStops:
			c.log.Info("child stopped", "last_exit", res.exit)
			c.setState(StateStopped, 0)
			return nil
		case res.code == ExitNoRestart:
			c.log.Info("child asked not to be restarted", "last_exit", res.exit)
			c.setState(StateExited, 0)
			return nil
		}
		if len(starts) >= c.spec.CrashBurst {
			c.setState(StateCrashLoop, 0)
			c.log.Error("crash loop: not restarting", "starts", len(starts),
				"window", c.spec.CrashWindow, "last_exit", res.exit)
			err := fmt.Errorf("supervise %s: %w: %d starts within %v, last %s",
				c.spec.Name, ErrCrashLoop, len(starts), c.spec.CrashWindow, res.exit)
			if res.err != nil {
				err = fmt.Errorf("%w: %w", err, res.err)
			}
			return err
		}
		failures++
		delay := Backoff(failures, c.spec.BackoffBase, c.spec.BackoffMax)
		c.setState(StateBackoff, 0)
		c.log.Warn("child ended, restarting", "last_exit", res.exit, "backoff", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			c.setState(StateStopped, 0)
			return nil
		case <-c.restart:
			t.Stop()
		case <-t.C:
		}
	}
}

// result is how one start ended.
type result struct {
	code      int    // exit code; -1 for signals and failures to start
	exit      string // for Status.LastExit
	err       error  // ErrNotReady or a start error
	uptime    time.Duration
	ctxDone   bool // stopped because ctx is done
	restarted bool // killed by Restart
}

// proc is one started child.
type proc struct {
	cmd     *exec.Cmd
	pid     int
	done    chan struct{} // closed once Wait returned
	logDone chan struct{} // closed once the stderr reader ended
	stderr  *os.File      // our read end
}

// runOnce starts the child, waits for readiness, and waits for it to end.
func (c *Child) runOnce(ctx context.Context, n int) result {
	c.set(func(st *Status) { st.Cause, st.Reason, st.Ready = "", "", "" })
	c.setState(StateStarting, 0)
	p, ready, err := c.start(n)
	if err != nil {
		c.log.Error("start failed", "err", err)
		return result{code: -1, exit: "start failed", err: err}
	}
	started := time.Now()
	c.setState(StateStarting, p.pid)
	c.log.Info("child started", "pid", p.pid, "restart", n)

	readyLine := ""
	if ready != nil {
		line, ok, why := c.awaitReady(ctx, p, ready)
		readyLine = line
		if !ok {
			if ctx.Err() != nil {
				c.stop(p)
				return result{code: -1, exit: why, uptime: time.Since(started), ctxDone: true}
			}
			select {
			case <-p.done:
				c.reap(p)
			default:
				c.kill(p)
			}
			// A child that exited by itself before it was ready: its
			// exit code keeps its meaning.
			if code, exit := describe(p.cmd.ProcessState); code == ExitStopped || code == ExitNoRestart {
				return result{code: code, exit: exit, uptime: time.Since(started)}
			}
			c.log.Error("child not ready", "pid", p.pid, "why", why)
			return result{code: -1, exit: "not ready", err: fmt.Errorf("%w: %s", ErrNotReady, why),
				uptime: time.Since(started)}
		}
	}
	if readyLine != "" {
		c.set(func(st *Status) { st.Ready = clip(readyLine, MaxReadyLine) })
	}
	c.setState(StateRunning, p.pid)
	c.mu.Lock()
	hooks := slices.Clone(c.hooks)
	c.mu.Unlock()
	for _, h := range hooks {
		h(p.pid, n)
	}

	r := result{}
	select {
	case <-p.done:
		c.reap(p)
	case <-ctx.Done():
		c.stop(p)
		r.ctxDone = true
	case <-c.restart:
		c.kill(p)
		r.restarted = true
	}
	r.uptime = time.Since(started)
	r.code, r.exit = describe(p.cmd.ProcessState)
	return r
}

// start starts one child process. ready is the read end of the readiness
// pipe when the Spec asks for readiness.
func (c *Child) start(n int) (p *proc, ready *os.File, err error) {
	argv := c.spec.Argv
	if c.spec.ArgvFor != nil {
		argv = c.spec.ArgvFor(n)
	}
	if len(argv) == 0 {
		return nil, nil, errors.New("start: empty argv")
	}
	var closers []*os.File
	defer func() {
		for _, f := range closers {
			f.Close()
		}
		if err != nil && ready != nil {
			ready.Close()
			ready = nil
		}
	}()

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), c.spec.Env...)
	cmd.ExtraFiles = append([]*os.File(nil), c.spec.ExtraFiles...)
	if len(c.spec.FDNames) > 0 {
		cmd.Env = append(cmd.Env, FDNamesEnv+"="+strings.Join(c.spec.FDNames, ":"))
	}
	if c.spec.Files != nil {
		fs, err := c.spec.Files(n)
		if err != nil {
			return nil, nil, fmt.Errorf("start: files: %w", err)
		}
		closers = append(closers, fs...)
		cmd.ExtraFiles = append(cmd.ExtraFiles, fs...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if c.spec.Stdin != nil {
		f, err := c.spec.Stdin()
		if err != nil {
			return nil, nil, fmt.Errorf("start: stdin: %w", err)
		}
		closers = append(closers, f)
		cmd.Stdin = f
	}
	if c.spec.Stdout != nil {
		f, err := c.spec.Stdout()
		if err != nil {
			return nil, nil, fmt.Errorf("start: stdout: %w", err)
		}
		closers = append(closers, f)
		cmd.Stdout = f
	}
	if c.spec.Ready {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil, fmt.Errorf("start: readiness pipe: %w", err)
		}
		ready = r
		closers = append(closers, w)
		cmd.Env = append(cmd.Env, ReadyEnv+"="+strconv.Itoa(3+len(cmd.ExtraFiles)))
		cmd.ExtraFiles = append(cmd.ExtraFiles, w)
	}
	er, ew, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("start: stderr pipe: %w", err)
	}
	closers = append(closers, ew)
	cmd.Stderr = ew

	// Pdeathsig fires when the thread that forked the child exits: keep
	// the fork on one thread.
	runtime.LockOSThread()
	err = cmd.Start()
	runtime.UnlockOSThread()
	if err != nil {
		er.Close()
		return nil, nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	p = &proc{
		cmd:     cmd,
		pid:     cmd.Process.Pid,
		done:    make(chan struct{}),
		logDone: make(chan struct{}),
		stderr:  er,
	}
	go func() {
		defer close(p.done)
		_ = cmd.Wait() // the exit is read from cmd.ProcessState
	}()
	go func() {
		defer close(p.logDone)
		c.relog(er)
	}()
	return p, ready, nil
}

// awaitReady waits for the readiness line, the timeout, the child's end or
// ctx. It always closes ready. The line's text before the newline is
// returned in line (Status.Ready).
func (c *Child) awaitReady(ctx context.Context, p *proc, ready *os.File) (line string, ok bool, why string) {
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		b, err := linebound.NewReader(ready, linebound.Options{Max: MaxReadyLine - 1}).ReadLine()
		switch {
		case errors.Is(err, linebound.ErrTooLong):
			err = fmt.Errorf("readiness line longer than %d bytes", MaxReadyLine)
		case err != nil:
			err = errors.New("closed readiness fd without a newline")
		}
		got <- answer{string(b), err}
	}()
	t := time.NewTimer(c.spec.ReadyTimeout)
	defer t.Stop()
	select {
	case a := <-got:
		ready.Close()
		if a.err != nil {
			return "", false, a.err.Error()
		}
		return a.line, true, ""
	case <-t.C:
		why = "timeout after " + c.spec.ReadyTimeout.String()
	case <-p.done:
		why = "exited before ready"
	case <-ctx.Done():
		why = "stopped before ready"
	}
	ready.Close() // unblocks the reader
	<-got
	return "", false, why
}

// killGroup signals the child's process group; a group already gone is fine.
func killGroup(pid int, sig syscall.Signal) {
	_ = unix.Kill(-pid, sig)
}

// stop is SIGTERM to the group, StopGrace, then SIGKILL.
func (c *Child) stop(p *proc) {
	killGroup(p.pid, syscall.SIGTERM)
	t := time.NewTimer(c.spec.StopGrace)
	select {
	case <-p.done:
	case <-t.C:
		c.log.Warn("child ignored SIGTERM, killing it", "pid", p.pid, "grace", c.spec.StopGrace)
		killGroup(p.pid, syscall.SIGKILL)
		<-p.done
	}
	t.Stop()
	c.reap(p)
}

// kill SIGKILLs the group and waits.
func (c *Child) kill(p *proc) {
	killGroup(p.pid, syscall.SIGKILL)
	<-p.done
	c.reap(p)
}

// reap runs after the child itself was waited for: it kills whatever is left
// of its group and ends the stderr reader (cutting it off if something
// outside the group still holds the pipe).
func (c *Child) reap(p *proc) {
	killGroup(p.pid, syscall.SIGKILL)
	t := time.NewTimer(time.Second)
	select {
	case <-p.logDone:
	case <-t.C:
	}
	t.Stop()
	p.stderr.Close()
	<-p.logDone
}

// describe turns a process state into an exit code and a LastExit text.
func describe(ps *os.ProcessState) (int, string) {
	if ps == nil {
		return -1, "unknown"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, "signal " + ws.Signal().String()
	}
	return ps.ExitCode(), "exit " + strconv.Itoa(ps.ExitCode())
}

// relog copies the child's stderr into the log, one record per line, a
// last one without a newline too; a line longer than MaxLogLine is cut
// there.
func (c *Child) relog(r *os.File) {
	lines := linebound.NewReader(r, linebound.Options{Max: MaxLogLine, Long: linebound.Truncate, Last: linebound.KeepLast})
	for {
		line, err := lines.ReadLine()
		cut := errors.Is(err, linebound.ErrTooLong)
		if err != nil && !cut {
			return
		}
		c.logLine(line, cut)
	}
}

// maxReason caps a child's cause message, in runes.
const maxReason = 500

// clip removes control characters and cuts s to n runes.
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	if r := []rune(s); len(r) > n {
		s = string(r[:n])
	}
	return s
}

// fieldsPassed caps how many extra fields of a JSON log line are kept.
const fieldsPassed = 8

// logLine logs one stderr line. JSON object lines keep their level, msg and
// up to fieldsPassed other fields; anything else becomes the message.
func (c *Child) logLine(line []byte, truncated bool) {
	line = bytes.TrimRight(line, "\r\n")
	if len(line) == 0 {
		return
	}
	ctx := context.Background()
	var attrs []slog.Attr
	if truncated {
		attrs = append(attrs, slog.Bool("truncated", true))
	}
	if !truncated && line[0] == '{' {
		var m map[string]any
		if json.Unmarshal(line, &m) == nil {
			lvl := slog.LevelInfo
			if s, ok := m["level"].(string); ok {
				_ = lvl.UnmarshalText([]byte(s))
			}
			msg, _ := m["msg"].(string)
			keys := make([]string, 0, len(m))
			for k := range m {
				switch k {
				case "time", "level", "msg", "child":
					continue
				}
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if cause, ok := m["cause"].(string); ok && cause != "" && lvl >= slog.LevelError {
				c.set(func(st *Status) { st.Cause, st.Reason = clip(cause, 64), clip(msg, maxReason) })
			}
			if len(keys) > fieldsPassed {
				keys = keys[:fieldsPassed]
			}
			for _, k := range keys {
				attrs = append(attrs, slog.Any(k, m[k]))
			}
			c.log.LogAttrs(ctx, lvl, msg, attrs...)
			return
		}
	}
	c.log.LogAttrs(ctx, slog.LevelInfo, string(line), attrs...)
}
