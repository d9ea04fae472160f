package adversarial

// A small copy of test/e2e's daemon harness (start, stop, ctl, log
// records), without PulseAudio: the speaker plays to the null backend and
// the microphone reads a WAV file. A later refactor will share it.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/safesocket"
)

var world struct {
	bin    string // built binaries
	model  string // the mini model
	answer string // a spoken answer, played in by yaz-capture --file
}

func TestMain(m *testing.M) {
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "adversarial setup:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	tmp, err := os.MkdirTemp("", "yazses-adversarial-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	world.bin = filepath.Join(tmp, "bin")
	build := exec.Command("go", "build", "-o", world.bin+"/", "./cmd/...")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("go build ./cmd/...: %v\n%s", err, out)
	}
	world.model = filepath.Join(tmp, "ggml-mini.bin")
	if err := testmodel.WriteFile(world.model, testmodel.Mini, 1); err != nil {
		return 0, err
	}
	world.answer = filepath.Join(tmp, "answer.wav")
	out, err := exec.Command(bin("yaz-speak"), "--out", world.answer, "--format", "wav", "Yes, go ahead.").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("yaz-speak: %v: %s", err, out)
	}
	return m.Run(), nil
}

func bin(name string) string { return filepath.Join(world.bin, name) }

func arr(v ...string) string {
	parts := make([]string, len(v))
	for i, s := range v {
		parts[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// config is ask_human on, one question an hour, the null speaker, the
// answer file as microphone, and the mini model.
func config() string {
	return fmt.Sprintf(`[mcp]
ask_human = true
[budget]
ask_human_per_hour = 1
[ask]
guard_ms = 100
answer_silence_ms = 800
[decode]
model = %q
threads = 1
[children]
speak = %s
capture = %s
decode = %s
gate = %s
`, world.model,
		arr(bin("yaz-speak"), "--serve", "--backend", "null"),
		arr(bin("yaz-capture"), "--file", world.answer),
		arr(bin("yaz-decode"), "--serve"),
		arr(bin("yaz-gate")))
}

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

// daemon is one yazsesd with its own HOME and runtime folder.
type daemon struct {
	t       *testing.T
	dir     string
	runtime string
	env     []string
	cmd     *exec.Cmd
	log     *syncBuffer
	done    chan struct{}
	stopped bool
}

// startDaemon starts yazsesd and waits until its gate, speaker and decoder
// run. It is stopped (SIGTERM) when the test ends.
func startDaemon(t *testing.T) *daemon {
	t.Helper()
	dir := t.TempDir()
	d := &daemon{t: t, dir: dir, runtime: filepath.Join(dir, "run"), log: &syncBuffer{}, done: make(chan struct{})}
	if err := os.Mkdir(d.runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, ".config", "yazses", "config.toml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(config()), 0o600); err != nil {
		t.Fatal(err)
	}
	d.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"XDG_RUNTIME_DIR=" + d.runtime,
		"XDG_CONFIG_HOME=" + filepath.Join(dir, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(dir, "state"),
		"XDG_DATA_HOME=" + filepath.Join(dir, "data"),
	}
	d.cmd = exec.Command(bin("yazsesd"), "--log-format", "json", "--log-level", "debug", "run")
	d.cmd.Env = d.env
	d.cmd.Stderr = d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.cmd.Wait(); close(d.done) }()
	t.Cleanup(d.stop)
	d.waitReady()
	return d
}

// stop ends the daemon with SIGTERM; it must exit 0 within 10 s.
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
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		d.t.Errorf("yazsesd exit %d after SIGTERM", code)
	}
	if d.t.Failed() {
		d.t.Logf("daemon log tail:\n%s", d.logTail(40))
	}
}

func (d *daemon) logTail(n int) string {
	lines := strings.Split(strings.TrimSpace(d.log.String()), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// socket is the path of the daemon socket.
func (d *daemon) socket() string {
	return safesocket.SocketPath(filepath.Join(d.runtime, safesocket.DirName))
}

// ctl runs `yazsesd ctl ARGS…` as a separate process, as a compositor
// binding would.
func (d *daemon) ctl(args ...string) (stdout, stderr string, code int) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin("yazsesd"), append([]string{"ctl"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + d.dir, "XDG_RUNTIME_DIR=" + d.runtime}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Run()
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// waitReady polls status (every 50 ms, up to 30 s) until the gate, the
// speaker and the decoder run.
func (d *daemon) waitReady() {
	d.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-d.done:
			d.t.Fatalf("yazsesd exited while starting\n%s", d.logTail(40))
		default:
		}
		if st, ok := d.status(); ok && st.Budget.Available && running(st, "gate", "speak", "decode") {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("yazsesd not ready within 30 s\n%s", d.logTail(40))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (d *daemon) status() (daemonapi.Status, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := safesocket.Dial(ctx, filepath.Dir(d.socket()))
	if err != nil {
		return daemonapi.Status{}, false
	}
	c := daemonapi.NewClient(conn)
	defer c.Close()
	st, err := c.Status(ctx)
	return st, err == nil
}

func running(st daemonapi.Status, names ...string) bool {
	for _, n := range names {
		ok := false
		for _, c := range st.Children {
			ok = ok || c.Name == n && c.State == "running"
		}
		if !ok {
			return false
		}
	}
	return true
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
