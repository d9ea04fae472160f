package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yazses/yazses/internal/testbin"
	"github.com/yazses/yazses/internal/testdaemon"
	"github.com/yazses/yazses/internal/testmcp"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/safesocket"
	"github.com/yazses/yazses/lib/wav"
)

// hostVars are the variables an MCP host passes to a stdio server it
// starts: the official TypeScript SDK's getDefaultEnvironment on Linux and
// macOS (the MCP Inspector and most hosts are built on it) takes exactly
// these from its own environment, and nothing else unless the host's
// configuration names more.
var hostVars = testdaemon.HostVars

// mcpEnv is the environment of a yaz-mcp started by an MCP host (hostEnv)
// with its own HOME, whose ~/.config/yazses/config.toml sets ask_human as
// given and decode.model = model, plus extra. With no XDG_RUNTIME_DIR,
// yaz-mcp looks for the daemon in hostRuntime (the test build's stand-in
// for /run/user/$UID); noHostDaemon makes sure none answers there.
func mcpEnv(t testing.TB, askHuman bool, model string, extra ...string) []string {
	t.Helper()
	noHostDaemon(t)
	home := t.TempDir()
	cfg := toml{
		"mcp":    {"ask_human": strconv.FormatBool(askHuman)},
		"decode": {"model": q(model), "threads": "2"},
	}
	writeUserConfig(t, home, cfg)
	return hostEnv(home, extra...)
}

// writeUserConfig writes cfg to HOME/.config/yazses/config.toml, where a
// program without XDG_CONFIG_HOME reads it.
func writeUserConfig(t testing.TB, home string, cfg toml) {
	t.Helper()
	dir := filepath.Join(home, ".config", "yazses")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// hostRuntime is where a program under test without XDG_RUNTIME_DIR looks
// for the daemon: /run/user/$UID in a production build, and
// testbin.UserRunRoot/$UID in the programs testbin builds, so that these
// tests never reach the user's own daemon or touch its folder.
func hostRuntime() string {
	return filepath.Join(testbin.UserRunRoot(world.bin), strconv.Itoa(os.Geteuid()))
}

// noHostDaemon fails the test when a yazsesd answers in hostRuntime: a
// yaz-mcp started with a host's environment would reach it. Only the
// tests of mcp_hostenv_test.go start a daemon there, alone, and stop it
// before they end; one that answers was left by a test run killed before
// its cleanup.
func noHostDaemon(t testing.TB) {
	t.Helper()
	sock := safesocket.SocketPath(filepath.Join(hostRuntime(), safesocket.DirName))
	if c, err := net.Dial("unix", sock); err == nil {
		c.Close()
		t.Fatalf("a yazsesd answers on %s, the test programs' own fallback folder (left by a test run killed before its cleanup?): these tests start yaz-mcp with the environment an MCP host gives (no XDG_RUNTIME_DIR), so it would reach that daemon; stop it to run them", sock)
	}
}

// sdkSession starts yaz-mcp through the official MCP Go SDK's
// CommandTransport and negotiates version ("" for the SDK's default).
func sdkSession(t *testing.T, env []string, version string, opts *sdk.ClientOptions) (*sdk.ClientSession, *exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(bin("yaz-mcp"))
	cmd.Env = env
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "yazses-e2e", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect to yaz-mcp: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("yaz-mcp stderr:\n%s", stderr.String())
		}
	})
	return cs, cmd, stderr
}

// callTool calls a tool and fails on a protocol error.
func callTool(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return r
}

// resultText joins a result's text content.
func resultText(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// structuredInto decodes a result's structured content into v.
func structuredInto(t *testing.T, r *sdk.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(r.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

// mcpTranscript is transcribe's structured content.
type mcpTranscript struct {
	Text     string `json:"text"`
	Segments []struct {
		StartMs int64  `json:"start_ms"`
		EndMs   int64  `json:"end_ms"`
		Text    string `json:"text"`
	} `json:"segments"`
	AudioMs  int64 `json:"audio_ms"`
	DecodeMs int64 `json:"decode_ms"`
}

// checkTranscript checks the shape of a transcript of audio of about
// audioMs (never its words: the generated models print gibberish).
func checkTranscript(t *testing.T, r *sdk.CallToolResult, audioMs int64) mcpTranscript {
	t.Helper()
	if r.IsError {
		t.Fatalf("transcribe failed: %s", resultText(r))
	}
	var tr mcpTranscript
	structuredInto(t, r, &tr)
	if d := tr.AudioMs - audioMs; d < -100 || d > 100 {
		t.Errorf("audio_ms = %d, want about %d", tr.AudioMs, audioMs)
	}
	var last int64
	var texts []string
	for i, s := range tr.Segments {
		if s.StartMs < last || s.EndMs < s.StartMs || s.EndMs > tr.AudioMs+50 {
			t.Errorf("segment %d runs %d..%d after %d (audio %d ms)", i, s.StartMs, s.EndMs, last, tr.AudioMs)
		}
		last = s.StartMs
		texts = append(texts, strings.TrimSpace(s.Text))
	}
	if tr.Text != strings.Join(texts, " ") {
		t.Errorf("text %q is not the segments joined %q", tr.Text, strings.Join(texts, " "))
	}
	want := tr.Text
	if strings.TrimSpace(want) == "" {
		want = "[no speech found]"
	}
	if got := resultText(r); got != want {
		t.Errorf("text content %q, want %q", got, want)
	}
	return tr
}

var longWAVOnce struct {
	sync.Once
	path string
	err  error
}

// longWAV is a 60 s WAV made of jfk.wav repeated, made once for the suite.
func longWAV(t testing.TB) string {
	t.Helper()
	longWAVOnce.Do(func() {
		f32, _, err := wav.ReadFile16k(world.jfk, 60*pcm.SampleRate)
		if err != nil {
			longWAVOnce.err = err
			return
		}
		one := pcm.FromFloat32(nil, f32)
		n := 60 * pcm.SampleRate
		samples := make([]int16, 0, n)
		for len(samples) < n {
			samples = append(samples, one[:min(len(one), n-len(samples))]...)
		}
		p := filepath.Join(filepath.Dir(world.bin), "jfk-60s.wav")
		data := append(pcm.WAVHeader(int64(2*len(samples))), pcm.Encode(nil, samples)...)
		longWAVOnce.err = os.WriteFile(p, data, 0o644)
		longWAVOnce.path = p
	})
	if longWAVOnce.err != nil {
		t.Fatalf("60 s WAV: %v", longWAVOnce.err)
	}
	return longWAVOnce.path
}

// childrenOf lists the live processes whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := procStat(p); ok && st.ppid == pid && st.state != "Z" {
			out = append(out, p)
		}
	}
	return out
}

type pstat struct {
	state string
	ppid  int
	nice  int
}

// procStat reads /proc/PID/stat (or a task's stat with pid "PID/task/TID").
func procStat(pid int) (pstat, bool) {
	return readStat(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
}

func readStat(path string) (pstat, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return pstat{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return pstat{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 17 {
		return pstat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	nice, _ := strconv.Atoi(f[16])
	return pstat{state: f[0], ppid: ppid, nice: nice}, true
}

// threadNices are the niceness values of every thread of pid.
func threadNices(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "stat"))
	for _, p := range tasks {
		if st, ok := readStat(p); ok {
			out = append(out, st.nice)
		}
	}
	return out
}

// exited is closed when process pid has exited (testwait.Exited).
func exited(t testing.TB, pid int) <-chan struct{} {
	t.Helper()
	ch, err := testwait.Exited(pid)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// childNamed is the child of pid whose command line contains name (0
// when none runs). Call it once something shows that the child runs (its
// progress), not in a loop.
func childNamed(pid int, name string) int {
	for _, c := range childrenOf(pid) {
		b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(c), "cmdline"))
		if strings.Contains(string(b), name) {
			return c
		}
	}
	return 0
}

// decoderChild is childNamed for yaz-decode; none fails the test.
func decoderChild(t *testing.T, pid int) int {
	t.Helper()
	c := childNamed(pid, "yaz-decode")
	if c == 0 {
		t.Fatalf("no yaz-decode child of %d while it reports progress", pid)
	}
	return c
}

// rawMCP is a line-level MCP client of a yaz-mcp process
// (internal/testmcp), for input no SDK would send. It keeps stdin open
// until Close.
type rawMCP = testmcp.Client

func startRawMCP(t *testing.T, env []string, args ...string) *rawMCP {
	t.Helper()
	return testmcp.Start(t, bin("yaz-mcp"), env, args...)
}

// wantCode checks an error text starts with code.
func wantCode(t *testing.T, isError bool, text, code string) {
	t.Helper()
	if !isError || !strings.HasPrefix(text, code+": ") {
		t.Errorf("got isError=%v %q, want error %s", isError, text, code)
	}
}

// inspectorDir is where make installs the MCP Inspector.
func inspectorDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("YAZ_MCP_INSPECTOR")
	if dir == "" {
		dir = filepath.Join(world.root, ".cache", "inspector")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")); err != nil {
		t.Fatalf("MCP Inspector not installed in %s (run make inspector): %v", dir, err)
	}
	return dir
}

// inspector runs the MCP Inspector CLI against yaz-mcp, as a host gives
// it env (hostEnv): the Inspector (TypeScript SDK) passes the hostVars of
// its own environment to the server, so it runs with exactly those from
// env; every other variable of env goes through its -e flag.
func inspector(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	dir := inspectorDir(t)
	argv := []string{"--no-install", "mcp-inspector", "--cli"}
	var own []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(hostVars, k) {
			own = append(own, kv)
		} else {
			argv = append(argv, "-e", kv)
		}
	}
	argv = append(argv, bin("yaz-mcp"))
	argv = append(argv, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npx", argv...)
	cmd.Dir = dir
	cmd.Env = own
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("mcp-inspector %v: %v\n%s", args, err, e.String())
	}
	return o.String(), e.String(), code
}

// inspectorResult is what the Inspector CLI prints for tools/call.
type inspectorResult struct {
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	Error             *struct {
		Code string `json:"code"`
	} `json:"error"`
}

// inspectorCall calls tool through the Inspector CLI with --tool-arg
// key=value arguments, and returns its result and exit code.
func inspectorCall(t *testing.T, env []string, tool string, args ...string) (inspectorResult, int) {
	t.Helper()
	argv := []string{"--method", "tools/call", "--tool-name", tool}
	for _, a := range args {
		argv = append(argv, "--tool-arg", a)
	}
	out, errOut, code := inspector(t, env, argv...)
	var r inspectorResult
	if strings.TrimSpace(out) == "" {
		// Its own errors ({"error":{"code":…}}) come last on stderr.
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		out = lines[len(lines)-1]
	}
	if err := json.NewDecoder(strings.NewReader(out)).Decode(&r); err != nil {
		t.Fatalf("tools/call %s output %q: %v\n%s", tool, out, err, errOut)
	}
	return r, code
}

// fmtNames is for messages.
func fmtNames(v []string) string { return fmt.Sprintf("%q", v) }

// sockets counts the sockets among pid's open descriptors.
func sockets(t *testing.T, pid int) int {
	t.Helper()
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}
