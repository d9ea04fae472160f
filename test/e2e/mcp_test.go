package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/lib/daemonapi"
)

// The yaz-mcp tests drive the real binary with independent MCP clients:
// the official MCP Go SDK, the MCP Inspector CLI (TypeScript SDK), and a
// raw line client for input no SDK would send. transcribe runs the real
// yaz-decode on the generated models (never asserting words).

const jfkMs = 11000

// TestMCPWithGoSDK: both protocol versions negotiate; the tool list follows
// the opt-in; both tools answer.
func TestMCPWithGoSDK(t *testing.T) {
	// 2026-07-28 (stateless, no initialize) is the SDK's default; it works
	// too, but the two before it are the ones the server must negotiate.
	for _, version := range []string{"2025-06-18", "2025-11-25", "2026-07-28"} {
		for _, on := range []bool{false, true} {
			name := version + "/ask_human=off"
			if on {
				name = version + "/ask_human=on"
			}
			t.Run(name, func(t *testing.T) {
				env := mcpEnv(t, on, world.mini)
				cs, _, _ := sdkSession(t, env, version, nil)
				if got := cs.InitializeResult().ProtocolVersion; got != version {
					t.Fatalf("negotiated %q, want %q", got, version)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				list, err := cs.ListTools(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, tl := range list.Tools {
					names = append(names, tl.Name)
					a := tl.Annotations
					if a == nil || a.OpenWorldHint == nil || *a.OpenWorldHint {
						t.Errorf("%s: openWorldHint not false: %+v", tl.Name, a)
					}
					if tl.Name == "transcribe" && (a == nil || !a.ReadOnlyHint) {
						t.Errorf("transcribe: readOnlyHint not set")
					}
					if tl.OutputSchema == nil {
						t.Errorf("%s: no output schema", tl.Name)
					}
					if !strings.Contains(tl.Description, "never leaves the machine") {
						t.Errorf("%s: description %q does not say the audio stays", tl.Name, tl.Description)
					}
				}
				slices.Sort(names)
				want := []string{"transcribe"}
				if on {
					want = []string{"ask_human", "transcribe"}
				}
				if !slices.Equal(names, want) {
					t.Fatalf("tools = %s, want %s", fmtNames(names), fmtNames(want))
				}

				checkTranscript(t, callTool(t, cs, "transcribe", map[string]any{"path": world.jfk}), jfkMs)
				r := callTool(t, cs, "transcribe", map[string]any{"path": "/dev/zero"})
				wantCode(t, r.IsError, resultText(r), "not_a_file")

				_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "ask_human", Arguments: map[string]any{"question": "Shall I deploy?", "timeout_s": 5}})
				if !on {
					if err == nil {
						t.Fatal("ask_human with the opt-in off: no error, want an unknown tool")
					}
					return
				}
				if err != nil {
					t.Fatalf("ask_human: %v", err)
				}
				r = callTool(t, cs, "ask_human", map[string]any{"question": "Shall I deploy?", "timeout_s": 5})
				var a daemonapi.AskResult
				structuredInto(t, r, &a)
				if r.IsError || a.Result != daemonapi.Unavailable || a.Reason != daemonapi.ReasonDaemonNotRunning {
					t.Errorf("ask_human without a daemon = %+v %q, want unavailable daemon_not_running", a, resultText(r))
				}
			})
		}
	}
}

// TestMCPWithInspector: the MCP Inspector CLI lists and calls the tools.
func TestMCPWithInspector(t *testing.T) {
	inspectorDir(t) // fails when it is not installed
	off := mcpEnv(t, false, world.mini)
	on := mcpEnv(t, true, world.mini)

	toolNames := func(env []string) []string {
		t.Helper()
		out, errOut, code := inspector(t, env, "--method", "tools/list")
		if code != 0 {
			t.Fatalf("tools/list: exit %d\n%s\n%s", code, out, errOut)
		}
		var r struct {
			Tools []struct{ Name string } `json:"tools"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("tools/list output %q: %v", out, err)
		}
		var names []string
		for _, tl := range r.Tools {
			names = append(names, tl.Name)
		}
		slices.Sort(names)
		return names
	}
	if got := toolNames(off); !slices.Equal(got, []string{"transcribe"}) {
		t.Errorf("opt-in off: tools %s", fmtNames(got))
	}
	if got := toolNames(on); !slices.Equal(got, []string{"ask_human", "transcribe"}) {
		t.Errorf("opt-in on: tools %s", fmtNames(got))
	}

	r, code := inspectorCall(t, off, "transcribe", "path="+world.jfk)
	if code != 0 || r.IsError {
		t.Fatalf("transcribe jfk.wav: exit %d %+v", code, r)
	}
	var tr mcpTranscript
	if err := json.Unmarshal(r.StructuredContent, &tr); err != nil || tr.AudioMs < jfkMs-100 || tr.AudioMs > jfkMs+100 {
		t.Errorf("transcribe structured content %s (%v)", r.StructuredContent, err)
	}
	r, _ = inspectorCall(t, off, "transcribe", "path=/dev/zero")
	if !r.IsError || len(r.Content) == 0 || !strings.HasPrefix(r.Content[0].Text, "not_a_file: ") {
		t.Errorf("transcribe /dev/zero = %+v, want not_a_file", r)
	}
	r, code = inspectorCall(t, off, "ask_human", "question=Shall I deploy?")
	if code == 0 || r.Error == nil || r.Error.Code != "tool_not_found" {
		t.Errorf("ask_human with the opt-in off: exit %d %+v, want tool_not_found", code, r)
	}
	r, code = inspectorCall(t, on, "ask_human", "question=Shall I deploy?", "timeout_s=5")
	var a daemonapi.AskResult
	json.Unmarshal(r.StructuredContent, &a)
	if code != 0 || r.IsError || a.Result != daemonapi.Unavailable || a.Reason != daemonapi.ReasonDaemonNotRunning {
		t.Errorf("ask_human without a daemon: exit %d %+v", code, r)
	}
}

// TestMCPBadInput: every bad line gets its error, and the server keeps
// serving; stdin stays open until every response is in.
func TestMCPBadInput(t *testing.T) {
	env := mcpEnv(t, true, world.mini, "YAZ_LOG_LEVEL=debug")
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.wav")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.wav")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := startRawMCP(t, env)
	r.Initialize("2025-11-25")

	parseError := func(what string) {
		t.Helper()
		select {
		case m := <-r.Nulls:
			if m.Error == nil || m.Error.Code != -32700 {
				t.Errorf("%s: %+v, want a parse error", what, m)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no answer", what)
		}
	}
	r.Send(`{"jsonrpc":"2.0","id":5,"method":`)
	parseError("malformed JSON")
	r.Send("\x00\xff garbage")
	parseError("garbage")
	r.Send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"ask_human","arguments":{"question":"` + strings.Repeat("q", 10<<20) + `"}}}`)
	parseError("10 MB line")

	m := r.Call("resources/read", map[string]any{"uri": "file:///etc/passwd"})
	if m.Error == nil {
		t.Errorf("resources/read: %s, want an error", m.Result)
	}
	m = r.Call("no/such/method", map[string]any{})
	if m.Error == nil || m.Error.Code != -32601 {
		t.Errorf("unknown method: %+v", m)
	}
	m = r.Call("tools/call", map[string]any{"name": "delete_everything", "arguments": map[string]any{}})
	if m.Error == nil || m.Error.Code != -32602 {
		t.Errorf("unknown tool: %+v", m)
	}

	for _, c := range []struct {
		name string
		tool string
		args any
		code string
	}{
		{"path as number", "transcribe", map[string]any{"path": 12}, "invalid_argument"},
		{"path as object", "transcribe", map[string]any{"path": map[string]any{"a": 1}}, "invalid_argument"},
		{"no arguments", "transcribe", map[string]any{}, "invalid_argument"},
		{"fifo", "transcribe", map[string]any{"path": fifo}, "not_a_file"},
		{"dev zero", "transcribe", map[string]any{"path": "/dev/zero"}, "not_a_file"},
		{"0-byte file", "transcribe", map[string]any{"path": empty}, "unsupported_format"},
		{"folder", "transcribe", map[string]any{"path": dir}, "not_a_file"},
		{"question as list", "ask_human", map[string]any{"question": []string{"a"}}, "invalid_argument"},
		{"timeout as text", "ask_human", map[string]any{"question": "Q?", "timeout_s": "ten"}, "invalid_argument"},
		{"timeout too short for an answer", "ask_human", map[string]any{"question": "Q?", "timeout_s": 0.001}, "invalid_argument"},
		{"empty question", "ask_human", map[string]any{"question": "\u200e\x07 "}, "invalid_argument"},
	} {
		isErr, text := r.Tool(c.tool, c.args)
		if !isErr || !strings.HasPrefix(text, c.code+": ") {
			t.Errorf("%s: isError=%v %q, want %s", c.name, isErr, text, c.code)
		}
	}
	if names := r.ToolNames(); len(names) != 2 {
		t.Errorf("tools after all that = %s", fmtNames(names))
	}
	// No listener of any kind: with no daemon to call, yaz-mcp holds no
	// socket at all.
	if n := sockets(t, r.Cmd.Process.Pid); n != 0 {
		t.Errorf("yaz-mcp holds %d sockets, want none", n)
	}
	r.Close()
	if strings.Contains(r.Out.String(), fifo) || strings.Contains(r.Stderr.String(), fifo) {
		t.Error("a path reached the output or the log")
	}
}

// TestMCPHidesInternalText: a decode failure whose internal error text
// carries a marker, and paths carrying it, never show it to the client
// (nor in yaz-mcp's log).
func TestMCPHidesInternalText(t *testing.T) {
	const marker = "SYNTHETIC-MARKER-90210"
	dir := filepath.Join(t.TempDir(), marker)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A model file that exists but is no model: yaz-decode's error names
	// it, marker and all.
	model := filepath.Join(dir, "ggml-"+marker+".bin")
	if err := os.WriteFile(model, []byte(marker+" is not a whisper model"), 0o644); err != nil {
		t.Fatal(err)
	}
	audio := filepath.Join(dir, marker+".wav")
	b, err := os.ReadFile(world.jfk)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(audio, b, 0o644)

	r := startRawMCP(t, mcpEnv(t, false, model, "YAZ_LOG_LEVEL=debug"))
	r.Initialize("2025-06-18")
	isErr, text := r.Tool("transcribe", map[string]any{"path": audio})
	wantCode(t, isErr, text, "decode_failed")
	isErr, text = r.Tool("transcribe", map[string]any{"path": filepath.Join(dir, "missing-"+marker+".wav")})
	wantCode(t, isErr, text, "not_found")
	os.Remove(model)
	isErr, text = r.Tool("transcribe", map[string]any{"path": audio})
	wantCode(t, isErr, text, "model_missing")
	r.Close()
	if strings.Contains(r.Out.String(), marker) {
		t.Errorf("the marker reached the client:\n%s", r.Out.String())
	}
	if strings.Contains(r.Stderr.String(), marker) {
		t.Errorf("the marker reached yaz-mcp's log:\n%s", r.Stderr.String())
	}
}

// TestMCPProgressAndCancel: a long transcribe sends progress; a cancelled
// one leaves no decoder running a second later; the decoder runs niced.
func TestMCPProgressAndCancel(t *testing.T) {
	long := longWAV(t)
	env := mcpEnv(t, false, world.tinyEn)
	var mu sync.Mutex
	var progress []float64
	// decoding is closed at a run's first progress above 0 (yaz-mcp says 0
	// before it starts the decoder, then the end of each 30 s piece of the
	// 60 s file): whisper.cpp decodes the second piece, with its threads.
	decoding := map[string]chan struct{}{"long-1": make(chan struct{}), "long-2": make(chan struct{})}
	opts := &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		tok, _ := req.Params.ProgressToken.(string)
		if tok == "long-1" {
			progress = append(progress, req.Params.Progress)
		}
		if ch := decoding[tok]; ch != nil && req.Params.Progress > 0 {
			close(ch)
			decoding[tok] = nil
		}
	}}
	cs, cmd, _ := sdkSession(t, env, "2025-11-25", opts)
	firstProgress := func(tok string) <-chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		return decoding[tok]
	}
	started1, started2 := firstProgress("long-1"), firstProgress("long-2")

	// Progress on a whole run, and the decoder's niceness while it runs.
	nices := make(chan []int, 1)
	go func() {
		select {
		case <-started1: // decoding: the decoder and its threads exist
			nices <- threadNices(childNamed(cmd.Process.Pid, "yaz-decode"))
		case <-time.After(time.Minute):
		}
	}()
	params := &sdk.CallToolParams{Name: "transcribe", Arguments: map[string]any{"path": long}}
	params.SetProgressToken("long-1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	checkTranscript(t, res, 60000)
	select {
	case n := <-nices:
		base, _ := syscall.Getpriority(syscall.PRIO_PROCESS, cmd.Process.Pid)
		want := min(20-base+5, 19) // yaz-mcp's default --nice 5
		if len(n) == 0 {
			t.Error("no threads seen")
		}
		for _, v := range n {
			if v != want {
				t.Errorf("decoder thread niceness %v, want all %d", n, want)
				break
			}
		}
	case <-time.After(5 * time.Second):
		t.Error("decoder niceness not read")
	}

	// Cancel mid-way.
	cctx, ccancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		params := &sdk.CallToolParams{Name: "transcribe", Arguments: map[string]any{"path": long}}
		params.SetProgressToken("long-2")
		_, err := cs.CallTool(cctx, params)
		errc <- err
	}()
	select {
	case <-started2: // decoding by now
	case <-time.After(time.Minute):
		t.Fatal("no progress from the second run in a minute")
	}
	pid := decoderChild(t, cmd.Process.Pid)
	gone := exited(t, pid)
	start := time.Now()
	ccancel()
	select {
	case <-gone:
	case <-time.After(time.Second):
		t.Fatalf("decoder %d still running 1 s after the cancel", pid)
	}
	t.Logf("decoder gone %v after the cancel", time.Since(start).Round(time.Millisecond))
	if err := <-errc; err == nil {
		t.Error("cancelled call returned no error")
	}
	// Still serving.
	checkTranscript(t, callTool(t, cs, "transcribe", map[string]any{"path": world.jfk}), jfkMs)

	// The first run's progress, checked last: a notification may trail
	// its result, but not two more calls and their results.
	mu.Lock()
	got := slices.Clone(progress)
	mu.Unlock()
	t.Logf("progress notifications: %v", got)
	if len(got) < 2 || got[len(got)-1] <= 0 {
		t.Errorf("progress notifications %v, want at least 2, rising above 0", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Errorf("progress does not rise: %v", got)
		}
	}
}

// TestMCPSignals: SIGTERM or SIGINT ends yaz-mcp with exit 0 within 5 s,
// idle or in the middle of a transcribe, and no decoder is left.
func TestMCPSignals(t *testing.T) {
	long := longWAV(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		for _, busy := range []bool{false, true} {
			name := sig.String() + "/idle"
			if busy {
				name = sig.String() + "/decoding"
			}
			t.Run(name, func(t *testing.T) {
				r := startRawMCP(t, mcpEnv(t, false, world.tinyEn))
				r.Initialize("2025-06-18")
				decoder := 0
				var gone <-chan struct{}
				if busy {
					r.Request("tools/call", map[string]any{"name": "transcribe", "arguments": map[string]any{"path": long},
						"_meta": map[string]any{"progressToken": "busy"}})
					waitProgress(t, r, "busy")
					decoder = decoderChild(t, r.Cmd.Process.Pid)
					gone = exited(t, decoder)
				}
				r.Cmd.Process.Signal(sig)
				exited := make(chan error, 1)
				go func() { <-r.Exited(); exited <- r.Cmd.Wait() }()
				select {
				case err := <-exited:
					if err != nil {
						t.Errorf("exit after %v: %v", sig, err)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("yaz-mcp still running 5 s after %v", sig)
				}
				if decoder != 0 {
					select {
					case <-gone:
					case <-time.After(time.Second):
						t.Fatalf("decoder %d outlived yaz-mcp by a second", decoder)
					}
				}
				if strings.Contains(r.Stderr.String(), "panic") {
					t.Errorf("stderr: %s", r.Stderr.String())
				}
			})
		}
	}
}

// TestMCPBudgetAcrossProcesses: with ask_human_per_hour = 1 in the daemon,
// two separate yaz-mcp processes each ask once: one question is spoken,
// the other is refused with retry_after_s. yaz-mcp holds no budget of its
// own; the daemon's one gate decides. transcribe uses the daemon's
// resident decoder while it runs.
func TestMCPBudgetAcrossProcesses(t *testing.T) {
	d := startDaemon(t, baseConfig())
	env := hostEnv(d.Dir, "XDG_RUNTIME_DIR="+d.Runtime, "YAZ_LOG_LEVEL=debug")
	var results []daemonapi.AskResult
	var mu sync.Mutex
	progress := 0
	opts := &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		if req.Params.ProgressToken == "ask" {
			progress++
		}
	}}
	for i, question := range []string{"Shall I deploy the build?", "Shall I deploy the other build?"} {
		cs, _, stderr := sdkSession(t, env, "2025-06-18", opts)
		params := &sdk.CallToolParams{Name: "ask_human", Arguments: map[string]any{"question": question, "timeout_s": 30}}
		params.SetProgressToken("ask")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		r, err := cs.CallTool(ctx, params)
		cancel()
		if err != nil {
			t.Fatalf("process %d: ask_human: %v", i+1, err)
		}
		if r.IsError {
			t.Fatalf("process %d: error %q", i+1, resultText(r))
		}
		var a daemonapi.AskResult
		structuredInto(t, r, &a)
		results = append(results, a)
		if i == 0 {
			checkTranscript(t, callTool(t, cs, "transcribe", map[string]any{"path": world.jfk}), jfkMs)
		}
		cs.Close()
		if i == 0 && !strings.Contains(stderr.String(), "transcribed on the daemon") {
			t.Errorf("transcribe did not use the daemon's decoder:\n%s", stderr.String())
		}
		if strings.Contains(stderr.String(), "deploy") {
			t.Errorf("the question reached yaz-mcp's log:\n%s", stderr.String())
		}
	}
	t.Logf("results: %+v", results)
	spoken := 0
	for _, a := range results {
		if a.Result == daemonapi.Answered || a.Result == daemonapi.NoAnswer {
			spoken++
		}
	}
	if spoken != 1 || results[1].Result != daemonapi.Refused || results[1].Reason != daemonapi.ReasonBudgetExhausted || results[1].RetryAfterS <= 0 {
		t.Errorf("results %+v, want one spoken and the second refused budget_exhausted with retry_after_s > 0", results)
	}
	mu.Lock()
	if progress == 0 {
		t.Error("no progress notification while ask_human waited")
	}
	mu.Unlock()
	if n := d.Count("ask.spoken", ""); n != 1 {
		t.Errorf("audit has %d ask.spoken, want 1", n)
	}
	if n := d.SpokenBySpeaker(); n != 1 {
		t.Errorf("speaker played %d questions, want 1", n)
	}
}

// TestMCPCancelledAskNeverSpoken: a question waiting for a hold to end is
// cancelled by the MCP client; yaz-mcp closes its daemon connection, the
// daemon drops the question, and when the hold ends nothing is spoken and
// nothing is charged. (Without the cancel the daemon would speak it then:
// TestQuestionWaitsForHoldToEnd.)
func TestMCPCancelledAskNeverSpoken(t *testing.T) {
	d := startDaemon(t, baseConfig())
	c := d.Client()
	ctx := context.Background()
	if _, err := c.Hold(ctx, daemonapi.MethodHoldStart); err != nil {
		t.Fatal(err)
	}
	cs, _, _ := sdkSession(t, hostEnv(d.Dir, "XDG_RUNTIME_DIR="+d.Runtime), "2025-11-25", nil)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: "ask_human", Arguments: map[string]any{"question": "Shall I wait for you?", "timeout_s": 30}})
		errc <- err
	}()
	d.WaitFor(20*time.Second, "the question to wait for the hold", func() bool { return d.Status().Waiting > 0 })
	select {
	case err := <-errc:
		t.Fatalf("ask_human returned during the hold: %v", err)
	default:
	}
	cancel()
	if err := <-errc; err == nil {
		t.Error("cancelled call returned no error")
	}
	d.WaitFor(5*time.Second, "the daemon to end the cancelled ask", func() bool {
		for _, m := range d.LogRecords() {
			if m["msg"] == "ask_human" && m["reason"] == "cancelled" {
				return true
			}
		}
		return false
	})
	if _, err := c.Hold(ctx, daemonapi.MethodHoldCancel); err != nil {
		t.Fatal(err)
	}
	if st := d.Status(); st.Asking || st.Waiting != 0 || st.Budget.Used != 0 {
		t.Errorf("after a cancelled ask: asking=%v, waiting=%d, budget %+v, want idle and 0 used", st.Asking, st.Waiting, st.Budget)
	}
	// The one slot is still there for the next caller. Questions are
	// spoken in turn, so had the cancelled one still been queued it would
	// have been spoken (and charged) before this one: this one answered and
	// one ask.spoken in the audit prove it never was.
	r := callTool(t, cs, "ask_human", map[string]any{"question": "Now?", "timeout_s": 30})
	var a daemonapi.AskResult
	structuredInto(t, r, &a)
	if a.Result != daemonapi.Answered {
		t.Errorf("ask after the cancel = %+v, want answered", a)
	}
	if n := d.Count("ask.spoken", ""); n != 1 {
		t.Errorf("audit has %d ask.spoken after a cancelled and an answered question, want 1", n)
	}
}

// waitProgress waits (up to a minute) for a progress notification above 0
// with token from the raw client: the call is being decoded (yaz-mcp says
// 0 before it starts the decoder; the rest is the decoder's own bar).
func waitProgress(t *testing.T, r *rawMCP, token string) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case m := <-r.Notes:
			var p struct {
				ProgressToken any     `json:"progressToken"`
				Progress      float64 `json:"progress"`
			}
			if m.Method == "notifications/progress" && json.Unmarshal(m.Params, &p) == nil && p.ProgressToken == token && p.Progress > 0 {
				return
			}
		case <-timeout:
			t.Fatalf("no progress for %q in a minute", token)
		}
	}
}
