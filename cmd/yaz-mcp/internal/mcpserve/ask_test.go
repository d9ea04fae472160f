package mcpserve

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
)

// askDaemon is a fake daemon whose ask_human answers with reply and
// records the parameters it got.
type askDaemon struct {
	mu     sync.Mutex
	got    []daemonapi.AskParams
	reply  func(ctx context.Context, p daemonapi.AskParams) (any, error)
	closed chan struct{} // a call's context ended
}

func startAskDaemon(t *testing.T) *askDaemon {
	d := &askDaemon{closed: make(chan struct{}, 10)}
	fakeDaemon(t, map[string]jsonrpc.Handler{
		daemonapi.MethodAskHuman: func(ctx context.Context, params json.RawMessage) (any, error) {
			var p daemonapi.AskParams
			if err := json.Unmarshal(params, &p); err != nil {
				return nil, err
			}
			d.mu.Lock()
			d.got = append(d.got, p)
			reply := d.reply
			d.mu.Unlock()
			defer func() {
				if ctx.Err() != nil {
					d.closed <- struct{}{}
				}
			}()
			return reply(ctx, p)
		},
	})
	return d
}

func (d *askDaemon) set(reply func(ctx context.Context, p daemonapi.AskParams) (any, error)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reply = reply
}

func (d *askDaemon) calls() []daemonapi.AskParams {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]daemonapi.AskParams(nil), d.got...)
}

func askOptions(t *testing.T) Options {
	opt := baseOptions(t)
	opt.Config.MCP.AskHuman = true
	opt.Config.Ask.MaxTimeoutS = 40
	opt.Config.Ask.DefaultTimeoutS = 30
	return opt
}

func structured(t *testing.T, r toolResult) daemonapi.AskResult {
	t.Helper()
	var a daemonapi.AskResult
	if err := json.Unmarshal(r.StructuredContent, &a); err != nil {
		t.Fatalf("structured content %s: %v", r.StructuredContent, err)
	}
	return a
}

func TestAskNoDaemon(t *testing.T) {
	noDaemon(t)
	s, _ := startSession(t, askOptions(t))
	s.initialize("2025-06-18")
	r := s.tool("ask_human", map[string]any{"question": "Ship it?"})
	if r.IsError {
		t.Fatalf("error result %q, want unavailable as a result", r.text())
	}
	if a := structured(t, r); a.Result != daemonapi.Unavailable || a.Reason != daemonapi.ReasonDaemonNotRunning {
		t.Fatalf("result = %+v, want unavailable/daemon_not_running", a)
	}
}

func TestAskArguments(t *testing.T) {
	d := startAskDaemon(t)
	d.set(func(ctx context.Context, p daemonapi.AskParams) (any, error) {
		return daemonapi.AskResult{Result: daemonapi.Answered, Answer: "yes, ship it"}, nil
	})
	s, logs := startSession(t, askOptions(t))
	s.initialize("2025-11-25")

	ok := []struct {
		name    string
		args    map[string]any
		wantQ   string
		wantTmo int
	}{
		// The timeout policy (0: the default; cut to the maximum) is the
		// daemon's alone: yaz-mcp passes whole seconds on.
		{"plain", map[string]any{"question": "Ship it?"}, "Ship it?", 0},
		{"control characters", map[string]any{"question": "Ship\x07 it\r\nnow?\u202e", "timeout_s": 10}, "Ship it now?", 10},
		{"timeout over the maximum is the daemon's to cut", map[string]any{"question": "Q?", "timeout_s": 999}, "Q?", 999},
		{"fraction rounds up", map[string]any{"question": "Q?", "timeout_s": 4.5}, "Q?", 5},
		{"the shortest timeout", map[string]any{"question": "Q?", "timeout_s": 4}, "Q?", 4}, // 5 words at 170 a minute, 300 ms, 250 ms, 1200 ms
		{"zero is the daemon's default", map[string]any{"question": "Q?", "timeout_s": 0}, "Q?", 0},
		{"null timeout", map[string]any{"question": "Q?", "timeout_s": nil}, "Q?", 0},
		{"huge timeout stays an int", map[string]any{"question": "Q?", "timeout_s": 1e300}, "Q?", math.MaxInt32},
		{"500 characters", map[string]any{"question": strings.Repeat("é", 500)}, strings.Repeat("é", 500), 0},
		{"500 after stripping", map[string]any{"question": strings.Repeat("a\x01", 500)}, strings.Repeat("a", 500), 0},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			before := len(d.calls())
			r := s.tool("ask_human", c.args)
			if r.IsError {
				t.Fatalf("error %q", r.text())
			}
			if a := structured(t, r); a.Result != daemonapi.Answered || a.Answer != "yes, ship it" {
				t.Fatalf("result %+v", a)
			}
			if r.text() != "answered: yes, ship it" {
				t.Errorf("text %q", r.text())
			}
			calls := d.calls()
			if len(calls) != before+1 {
				t.Fatalf("daemon called %d times, want 1", len(calls)-before)
			}
			if got := calls[len(calls)-1]; got.Question != c.wantQ || got.TimeoutS != c.wantTmo {
				t.Errorf("daemon got %q/%d, want %q/%d", got.Question, got.TimeoutS, c.wantQ, c.wantTmo)
			}
		})
	}

	bad := []struct {
		name string
		args map[string]any
	}{
		{"no question", map[string]any{}},
		{"number", map[string]any{"question": 7}},
		{"empty", map[string]any{"question": ""}},
		{"only control characters", map[string]any{"question": "\x01\x02\u200e\t \n"}},
		{"501 characters", map[string]any{"question": strings.Repeat("é", 501)}},
		{"timeout as text", map[string]any{"question": "Q?", "timeout_s": "5"}},
		{"negative timeout", map[string]any{"question": "Q?", "timeout_s": -1}},
		{"boolean timeout", map[string]any{"question": "Q?", "timeout_s": true}},
		// Too short for any answer: the label and a word spoken, the guard
		// and the shortest answer take 3.5 s with the defaults.
		{"timeout of a second", map[string]any{"question": "Q?", "timeout_s": 1}},
		{"timeout of a millisecond", map[string]any{"question": "Q?", "timeout_s": 0.001}},
		{"timeout just under the shortest", map[string]any{"question": "Q?", "timeout_s": 3}},
		{"question with marker too long", map[string]any{"question": marker + strings.Repeat("x", 600)}},
	}
	before := len(d.calls())
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			r := s.tool("ask_human", c.args)
			wantError(t, r, InvalidArgument)
			if strings.HasPrefix(c.name, "timeout ") && !strings.Contains(r.text(), "at least 4:") {
				t.Errorf("error %q does not name the shortest timeout, 4 seconds", r.text())
			}
		})
	}
	if n := len(d.calls()) - before; n != 0 {
		t.Errorf("bad arguments reached the daemon %d times", n)
	}
	if strings.Contains(s.output(), marker) || strings.Contains(logs.String(), marker) {
		t.Error("question text reached the output or the log")
	}
	if strings.Contains(logs.String(), "Ship") || strings.Contains(logs.String(), "yes, ship it") {
		t.Errorf("question or answer in the log:\n%s", logs.String())
	}
}

func TestAskResultsStayClosed(t *testing.T) {
	d := startAskDaemon(t)
	s, _ := startSession(t, askOptions(t))
	s.initialize("2025-06-18")
	cases := []struct {
		name  string
		reply daemonapi.AskResult
		want  daemonapi.AskResult
		text  string
	}{
		{"refused", daemonapi.AskResult{Result: daemonapi.Refused, Reason: daemonapi.ReasonBudgetExhausted, RetryAfterS: 1234},
			daemonapi.AskResult{Result: daemonapi.Refused, Reason: daemonapi.ReasonBudgetExhausted, RetryAfterS: 1234}, "retry after 1234 s"},
		{"deferred", daemonapi.AskResult{Result: daemonapi.Deferred, Reason: daemonapi.ReasonHolding},
			daemonapi.AskResult{Result: daemonapi.Deferred, Reason: daemonapi.ReasonHolding}, "deferred (holding)"},
		{"no answer drops a stray answer", daemonapi.AskResult{Result: daemonapi.NoAnswer, Reason: daemonapi.ReasonSilence, Answer: marker},
			daemonapi.AskResult{Result: daemonapi.NoAnswer, Reason: daemonapi.ReasonSilence}, "no_answer (silence)"},
		{"unknown outcome", daemonapi.AskResult{Result: "maybe", Answer: marker},
			daemonapi.AskResult{Result: daemonapi.Unavailable, Reason: "daemon_error"}, "unavailable (daemon_error)"},
		{"free-text reason", daemonapi.AskResult{Result: daemonapi.Unavailable, Reason: "oops: " + marker},
			daemonapi.AskResult{Result: daemonapi.Unavailable, Reason: "unknown"}, "unavailable (unknown)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d.set(func(ctx context.Context, p daemonapi.AskParams) (any, error) { return c.reply, nil })
			r := s.tool("ask_human", map[string]any{"question": "Q?"})
			if r.IsError {
				t.Fatalf("error %q", r.text())
			}
			if got := structured(t, r); got != c.want {
				t.Errorf("result %+v, want %+v", got, c.want)
			}
			if !strings.Contains(r.text(), c.text) {
				t.Errorf("text %q lacks %q", r.text(), c.text)
			}
		})
	}
	d.set(func(ctx context.Context, p daemonapi.AskParams) (any, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.InternalError, Message: "internal " + marker}
	})
	r := s.tool("ask_human", map[string]any{"question": "Q?"})
	if a := structured(t, r); a.Result != daemonapi.Unavailable {
		t.Errorf("daemon error gave %+v, want unavailable", a)
	}
	if strings.Contains(s.output(), marker) {
		t.Errorf("daemon text reached the client:\n%s", s.output())
	}
}

// TestAskProgressAndCancel: progress every interval while the daemon
// waits; a cancelled call closes the connection, which ends the daemon's
// request context.
func TestAskProgressAndCancel(t *testing.T) {
	d := startAskDaemon(t)
	d.set(func(ctx context.Context, p daemonapi.AskParams) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	s, logs := startSession(t, askOptions(t))
	s.initialize("2025-06-18")
	id, resp := s.request("tools/call", map[string]any{"name": "ask_human", "arguments": map[string]any{"question": "Q?", "timeout_s": 20},
		"_meta": map[string]any{"progressToken": 77}})
	var values []float64
	deadline := time.After(testwait.Hang)
	for len(values) < 3 {
		select {
		case n := <-s.notes:
			if n.Method == "notifications/progress" {
				tok, v := progressOf(n)
				if tok != "77" {
					t.Errorf("token %s", tok)
				}
				values = append(values, v)
			}
		case <-deadline:
			t.Fatalf("waiting for 3 progress notifications: only %d within %v", len(values), testwait.Hang)
		}
	}
	for i := 1; i < len(values); i++ {
		if values[i] <= values[i-1] {
			t.Errorf("progress does not rise: %v", values)
		}
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + itoa(id) + `}}`)
	testwait.Recv(t, d.closed, "the daemon's request to be cancelled")
	// A cancelled call is not answered (MCP): yaz-mcp drops its result
	// and says so in its log, after which nothing can come for it.
	waitUnanswered(t, logs)
	select {
	case m := <-resp:
		t.Errorf("the cancelled ask was answered: %s", m.Result)
	default:
	}
	if names := s.toolNames(); len(names) != 2 {
		t.Errorf("tools after cancel = %v", names)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
