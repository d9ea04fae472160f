package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/safesocket"
)

// The tests in this file start the daemon in /run/user/$UID as the
// programs under test see it: hostRuntime, testbin.UserRunRoot/$UID, which
// testbin links into the programs it builds in place of /run/user (so the
// user's own /run/user/$UID and any daemon of theirs there are never
// reached or touched), as systemd gives it to `systemctl --user` services,
// and its clients (yaz-mcp, `yazsesd status`, `yazsesd ctl`) with the
// environment an MCP host gives a program (hostEnv: no XDG_RUNTIME_DIR).
// They are the only tests that put anything in hostRuntime. None calls
// t.Parallel, so no other test of this package runs while they do (Go
// starts the parallel tests only after the sequential ones).

// userRunDir provides hostRuntime as logind makes /run/user/$UID at
// login: a folder of ours with mode 0700. When it is missing it is made,
// and removed with everything in it when the test ends, its parent too if
// that was missing; a folder that was already there (left by a killed run)
// is used as it is and left alone. created says which.
func userRunDir(t testing.TB) (dir string, created bool) {
	t.Helper()
	dir = hostRuntime()
	root := filepath.Dir(dir)
	if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(root, 0o755); err != nil {
			t.Fatalf("make %s: %v", root, err)
		}
		t.Cleanup(func() { os.Remove(root) })
	}
	err := os.Mkdir(dir, 0o700)
	switch {
	case err == nil:
		created = true
		t.Cleanup(func() {
			if err := os.RemoveAll(dir); err != nil {
				t.Errorf("remove %s: %v", dir, err)
			}
		})
	case errors.Is(err, fs.ErrExist):
		noHostDaemon(t)
		if fi, err := os.Lstat(dir); err != nil || fi.Mode() != fs.ModeDir|0o700 {
			t.Fatalf("%s exists but is not a 0700 folder (%v, %v): not a login session's folder; this test will not use it", dir, fi.Mode(), err)
		}
	default:
		t.Fatalf("make %s: %v (the test needs to create the folder a login session would have)", dir, err)
	}
	if err := os.Chmod(dir, 0o700); created && err != nil {
		t.Fatal(err) // whatever the umask made of it
	}
	return dir, created
}

// startDaemonAt starts yazsesd with XDG_RUNTIME_DIR=runtime, as a systemd
// user service gets it, and waits until its children run.
func startDaemonAt(t testing.TB, cfg toml, runtime string) *daemon {
	t.Helper()
	d := newDaemon(t, cfg, "XDG_RUNTIME_DIR="+runtime) // the last value wins
	d.Runtime = runtime
	d.Start()
	d.WaitRunning("gate", "speak", "decode")
	return d
}

// fileUtterances counts the utterances of about jfk.wav's length that the
// daemon's resident decoder reports (its own "utterance" log lines): each
// transcribe of jfk.wav served by the daemon adds one, a local decode none.
func (d *daemon) fileUtterances() int {
	n := 0
	for _, m := range d.LogRecords() {
		ms, _ := m["audio_ms"].(float64)
		if m["child"] == "decode" && m["msg"] == "utterance" && ms > jfkMs-200 && ms < jfkMs+200 {
			n++
		}
	}
	return n
}

// hostCommand runs a yazses binary with exactly env, as `env -i` would.
func hostCommand(t *testing.T, env []string, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin(name), args...)
	cmd.Env = env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return o.String(), e.String(), code
}

// TestMCPHostEnvFindsDaemon: the daemon runs with XDG_RUNTIME_DIR =
// hostRuntime (systemd's /run/user/$UID); yaz-mcp started with only what an MCP host
// passes (no XDG_RUNTIME_DIR) finds it from the official Go SDK client and
// from the MCP Inspector: ask_human reaches the daemon and is spoken, and
// transcribe runs on the daemon's resident decoder (its utterance count
// rises by one per call). `yazsesd status` and `yazsesd ctl last` under
// `env -i` find it too.
func TestMCPHostEnvFindsDaemon(t *testing.T) {
	inspectorDir(t) // fails when it is not installed
	rt, _ := userRunDir(t)
	d := startDaemonAt(t, baseConfig().With("budget.ask_human_per_hour", "5"), rt)
	env := hostEnv(d.Dir)
	for _, kv := range env {
		if strings.HasPrefix(kv, "XDG_") {
			t.Fatalf("host environment carries %s", kv)
		}
	}
	spoken := func() int { return d.Count("ask.spoken", "") }
	wantReached := func(t *testing.T, a daemonapi.AskResult, spokenBefore int) {
		t.Helper()
		if a.Result != daemonapi.Answered && a.Result != daemonapi.NoAnswer {
			t.Errorf("ask_human = %+v, want the question spoken by the daemon (answered or no_answer)", a)
		}
		if n := spoken(); n != spokenBefore+1 {
			t.Errorf("daemon audit: %d ask.spoken, want %d", n, spokenBefore+1)
		}
	}

	t.Run("go sdk", func(t *testing.T) {
		cs, _, stderr := sdkSession(t, env, "2025-11-25", nil)
		before := spoken()
		r := callTool(t, cs, "ask_human", map[string]any{"question": "Shall I deploy the build?", "timeout_s": 20})
		var a daemonapi.AskResult
		structuredInto(t, r, &a)
		wantReached(t, a, before)

		utts := d.fileUtterances()
		checkTranscript(t, callTool(t, cs, "transcribe", map[string]any{"path": world.jfk}), jfkMs)
		// The decoder's "utterance" record comes through its stderr and
		// may trail the result.
		d.Await(10*time.Second, func() bool { return d.fileUtterances() > utts })
		if n := d.fileUtterances(); n != utts+1 {
			t.Errorf("daemon decoder utterances of jfk.wav: %d -> %d, want one more (transcribe on the resident decoder)", utts, n)
		}
		cs.Close()
		if log := stderr.String(); !strings.Contains(log, "transcribed on the daemon") || strings.Contains(log, "no daemon found") {
			t.Errorf("yaz-mcp log does not show the daemon used:\n%s", log)
		}
	})

	t.Run("inspector", func(t *testing.T) {
		before := spoken()
		r, code := inspectorCall(t, env, "ask_human", "question=Shall I deploy the other build?", "timeout_s=20")
		var a daemonapi.AskResult
		if err := json.Unmarshal(r.StructuredContent, &a); err != nil || code != 0 || r.IsError {
			t.Fatalf("ask_human: exit %d %+v (%v)", code, r, err)
		}
		wantReached(t, a, before)

		utts := d.fileUtterances()
		r, code = inspectorCall(t, env, "transcribe", "path="+world.jfk)
		var tr mcpTranscript
		if err := json.Unmarshal(r.StructuredContent, &tr); err != nil || code != 0 || r.IsError || tr.AudioMs < jfkMs-100 || tr.AudioMs > jfkMs+100 {
			t.Fatalf("transcribe: exit %d %+v (%v)", code, r, err)
		}
		// The decoder's "utterance" record comes through its stderr and
		// may trail the result.
		d.Await(10*time.Second, func() bool { return d.fileUtterances() > utts })
		if n := d.fileUtterances(); n != utts+1 {
			t.Errorf("daemon decoder utterances of jfk.wav: %d -> %d, want one more (transcribe on the resident decoder)", utts, n)
		}
	})

	t.Run("yazsesd status and ctl last", func(t *testing.T) {
		out, errOut, code := hostCommand(t, env, "yazsesd", "status")
		if code != 0 {
			t.Fatalf("yazsesd status under env -i: exit %d\n%s", code, errOut)
		}
		if pid := fmt.Sprintf("pid %d,", d.Cmd.Process.Pid); !strings.Contains(out, pid) {
			t.Errorf("yazsesd status under env -i printed %q, want the daemon's %s", out, pid)
		}
		out, errOut, code = hostCommand(t, env, "yazsesd", "ctl", "last")
		var last daemonapi.Last
		if code != 0 || json.Unmarshal([]byte(out), &last) != nil {
			t.Errorf("yazsesd ctl last under env -i: exit %d\n%s%s", code, out, errOut)
		}
	})
}

// trapTmp listens on /tmp/yazses/yazsesd.sock, where a client that fell
// back to the shared temp folder would look, and counts who connects.
func trapTmp(t *testing.T) *atomic.Int32 {
	t.Helper()
	dir := filepath.Join("/tmp", safesocket.DirName)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatalf("make the trap %s: %v (a leftover? remove it)", dir, err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := safesocket.Listen(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return &n
}

// TestMCPHostEnvRefusesUnsafeRunUser: with the daemon running in
// /run/user/$UID, that folder made group/other readable (0755) or given to
// another uid (65534) is not used: yaz-mcp says daemon_not_running and
// decodes locally (the daemon's decoder sees nothing), logs once at INFO
// why, and never tries /tmp; `yazsesd status` says what it looked for and
// why it refused it.
func TestMCPHostEnvRefusesUnsafeRunUser(t *testing.T) {
	rt, created := userRunDir(t)
	if !created {
		t.Skipf("%s belongs to a login session here; this test changes its mode and owner, which it does only to a folder it made itself", rt)
	}
	if os.Geteuid() != 0 {
		t.Skip("giving the folder to another uid needs root")
	}
	d := startDaemonAt(t, baseConfig(), rt)
	trap := trapTmp(t)
	for _, c := range []struct {
		name    string
		alter   func() error
		restore func() error
		want    string
	}{
		{"mode 0755", func() error { return os.Chmod(rt, 0o755) }, func() error { return os.Chmod(rt, 0o700) }, "has mode 0755, want 0700"},
		{"owner 65534", func() error { return os.Chown(rt, 65534, 65534) }, func() error { return os.Chown(rt, os.Geteuid(), os.Getegid()) }, "is owned by uid 65534"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.alter(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := c.restore(); err != nil {
					t.Errorf("restore %s: %v", rt, err)
				}
			})
			if st := d.Status(); st.PID != d.Cmd.Process.Pid { // still there for a client that names its folder
				t.Fatalf("daemon status pid %d, want %d", st.PID, d.Cmd.Process.Pid)
			}
			env := hostEnv(d.Dir)
			utts := d.fileUtterances()
			cs, _, stderr := sdkSession(t, env, "2025-11-25", nil)
			r := callTool(t, cs, "ask_human", map[string]any{"question": "Shall I deploy the build?", "timeout_s": 20})
			var a daemonapi.AskResult
			structuredInto(t, r, &a)
			if a.Result != daemonapi.Unavailable || a.Reason != daemonapi.ReasonDaemonNotRunning {
				t.Errorf("ask_human = %+v, want unavailable daemon_not_running", a)
			}
			for range 2 {
				checkTranscript(t, callTool(t, cs, "transcribe", map[string]any{"path": world.jfk}), jfkMs)
			}
			cs.Close()
			if n := d.fileUtterances(); n != utts {
				t.Errorf("daemon decoder utterances of jfk.wav: %d -> %d, want none (the folder is refused)", utts, n)
			}
			log := stderr.String()
			var notes []string
			for _, line := range strings.Split(log, "\n") {
				if strings.Contains(line, "no daemon found: decoding locally") {
					notes = append(notes, line)
				}
			}
			if len(notes) != 1 || !strings.Contains(notes[0], "INFO") || !strings.Contains(notes[0], rt) || !strings.Contains(notes[0], c.want) {
				t.Errorf("yaz-mcp log lines saying why it decodes locally: %q, want one INFO naming %s and %q", notes, rt, c.want)
			}
			if !strings.Contains(log, "transcribed locally") {
				t.Errorf("yaz-mcp did not decode locally:\n%s", log)
			}

			_, errOut, code := hostCommand(t, env, "yazsesd", "status")
			if code != 1 || !strings.Contains(errOut, "not running") || !strings.Contains(errOut, rt) || !strings.Contains(errOut, c.want) {
				t.Errorf("yazsesd status under env -i: exit %d %q, want 1 naming %s and %q", code, errOut, rt, c.want)
			}
			if n := trap.Load(); n != 0 {
				t.Errorf("%d connections to /tmp/yazses/yazsesd.sock: a client fell back to /tmp", n)
			}
		})
	}
}

// BenchmarkMCPHostEnvTranscribe: transcribe of jfk.wav through yaz-mcp
// started with a host's environment (no XDG_RUNTIME_DIR), once with the
// daemon running in /run/user/$UID (its resident decoder) and once with
// --daemon never (a yaz-decode child per call: what every call cost while
// the daemon could not be found), same model and threads, for generated
// models of the tiny.en and base.en dimensions. Each iteration runs both,
// alternating which goes first.
//
//	go test ./test/e2e -run '^$' -bench MCPHostEnvTranscribe -benchtime 5x
func BenchmarkMCPHostEnvTranscribe(b *testing.B) {
	for _, size := range []testmodel.Size{testmodel.TinyEn, testmodel.BaseEn} {
		b.Run(size.String(), func(b *testing.B) {
			model := filepath.Join(world.models, "ggml-"+size.String()+".bin")
			if _, err := os.Stat(model); err != nil {
				if err := testmodel.WriteFile(model, size, 1); err != nil {
					b.Fatal(err)
				}
			}
			benchHostEnvTranscribe(b, model)
		})
	}
}

func benchHostEnvTranscribe(b *testing.B, model string) {
	rt, _ := userRunDir(b)
	cfg := baseConfig().With("decode.model", q(model)).With("decode.threads", "2")
	d := startDaemonAt(b, cfg, rt)
	ctx := context.Background()
	session := func(args ...string) *sdk.ClientSession {
		cmd := exec.Command(bin("yaz-mcp"), args...)
		cmd.Env = hostEnv(d.Dir)
		client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		return cs
	}
	viaDaemon, local := session(), session("--daemon", "never")
	run := func(cs *sdk.ClientSession) (wall time.Duration, decodeMs int64) {
		start := time.Now()
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "transcribe", Arguments: map[string]any{"path": world.jfk}})
		if err != nil || r.IsError {
			b.Fatalf("transcribe: %v %s", err, resultText(r))
		}
		wall = time.Since(start)
		var tr mcpTranscript
		bs, _ := json.Marshal(r.StructuredContent)
		json.Unmarshal(bs, &tr)
		return wall, tr.DecodeMs
	}
	utts := d.fileUtterances()
	run(viaDaemon) // warm the page cache and the resident decoder
	run(local)
	var sumD, sumL time.Duration
	var decD, decL int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		order := []bool{true, false}
		if i%2 == 1 {
			order = []bool{false, true}
		}
		for _, daemon := range order {
			if daemon {
				w, ms := run(viaDaemon)
				sumD, decD = sumD+w, decD+ms
			} else {
				w, ms := run(local)
				sumL, decL = sumL+w, decL+ms
			}
		}
	}
	b.StopTimer()
	d.Await(10*time.Second, func() bool { return d.fileUtterances()-utts >= b.N+1 })
	if n := d.fileUtterances() - utts; n != b.N+1 {
		b.Errorf("the daemon decoded %d files, want %d: the host-environment yaz-mcp did not reach it", n, b.N+1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(sumD.Milliseconds())/n, "daemon-ms/op")
	b.ReportMetric(float64(sumL.Milliseconds())/n, "local-ms/op")
	b.ReportMetric(float64(decD)/n, "daemon-decode-ms/op")
	b.ReportMetric(float64(decL)/n, "local-decode-ms/op")
	b.ReportMetric(float64(sumL)/float64(sumD), "local/daemon")
}

// TestHostEnvStatusSaysWhereItLooked: with no daemon running, `yazsesd
// status` started with the environment an MCP host or a service manager
// gives (no XDG_RUNTIME_DIR) says where it looked, as README's
// Troubleshooting promises: the socket in the per-user folder, and that
// XDG_RUNTIME_DIR is not set; with XDG_RUNTIME_DIR set, the socket there.
// (It said only "yazsesd is not running".)
func TestHostEnvStatusSaysWhereItLooked(t *testing.T) {
	rt, _ := userRunDir(t)
	noHostDaemon(t)
	home := t.TempDir()
	sock := safesocket.SocketPath(filepath.Join(rt, safesocket.DirName))
	_, errOut, code := hostCommand(t, hostEnv(home), "yazsesd", "status")
	if code != 1 || !strings.Contains(errOut, "not running") || !strings.Contains(errOut, sock) || !strings.Contains(errOut, "XDG_RUNTIME_DIR is not set") {
		t.Errorf("yazsesd status under env -i, no daemon: exit %d %q; want 1 naming %s and that XDG_RUNTIME_DIR is not set", code, errOut, sock)
	}
	xdg := t.TempDir()
	sock = safesocket.SocketPath(filepath.Join(xdg, safesocket.DirName))
	_, errOut, code = hostCommand(t, hostEnv(home, "XDG_RUNTIME_DIR="+xdg), "yazsesd", "status")
	if code != 1 || !strings.Contains(errOut, "not running") || !strings.Contains(errOut, sock) {
		t.Errorf("yazsesd status with XDG_RUNTIME_DIR, no daemon: exit %d %q; want 1 naming %s", code, errOut, sock)
	}
}
