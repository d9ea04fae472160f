package mcpserve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
)

// message is any JSON-RPC message from the server.
type message struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// toolResult is the result of tools/call.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

func (r toolResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// session is an in-process MCP client of one Server, over pipes. It keeps
// stdin open until close, as a real client must (mcp-go cancels running
// calls when stdin ends).
type session struct {
	t      *testing.T
	in     *io.PipeWriter
	out    *io.PipeReader
	mu     sync.Mutex
	waits  map[string]chan message
	nulls  chan message
	notes  chan message
	all    strings.Builder // every line the server wrote
	served chan error
	nextID int
	// meta, once modern has set it, goes as _meta into every request's
	// params: a 2026-07-28 client says its version with each request.
	meta map[string]any
}

// startSession serves a session; the server's log is returned as a
// testwait.Buffer, safe for the logger's concurrent use, that a test can
// wait on.
func startSession(t *testing.T, opt Options) (*session, *testwait.Buffer) {
	t.Helper()
	logs := &testwait.Buffer{}
	opt.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := New(opt)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{t: t, in: inW, out: outR, waits: map[string]chan message{},
		nulls: make(chan message, 100), notes: make(chan message, 1000), served: make(chan error, 1)}
	go func() {
		err := srv.Serve(context.Background(), inR, outW)
		inR.Close()
		outW.Close()
		s.served <- err
	}()
	go s.readLoop()
	t.Cleanup(s.close)
	return s, logs
}

func (s *session) readLoop() {
	sc := bufio.NewScanner(s.out)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m message
		line := sc.Text()
		s.mu.Lock()
		s.all.WriteString(line + "\n")
		s.mu.Unlock()
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			s.t.Errorf("server wrote a line that is not JSON: %q", line)
			continue
		}
		switch {
		case m.Method != "":
			s.notes <- m
		case len(m.ID) == 0 || string(m.ID) == "null":
			s.nulls <- m
		default:
			s.mu.Lock()
			ch := s.waits[string(m.ID)]
			s.mu.Unlock()
			if ch == nil {
				s.t.Errorf("response to an unknown id %s", m.ID)
				continue
			}
			ch <- m
		}
	}
}

func (s *session) close() {
	s.in.Close()
	select {
	case err := <-s.served:
		if err != nil {
			s.t.Errorf("Serve = %v", err)
		}
	case <-time.After(testwait.Hang):
		s.t.Errorf("waiting for Serve to end after stdin closed: not within %v", testwait.Hang)
	}
	s.out.Close()
	s.served <- nil // a second close finds it done
}

// send writes one raw line.
func (s *session) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("write stdin: %v", err)
	}
}

// request sends a request and returns a channel for its response.
func (s *session) request(method string, params any) (id int, resp chan message) {
	s.t.Helper()
	s.mu.Lock()
	s.nextID++
	id = s.nextID
	resp = make(chan message, 1)
	s.waits[strconv.Itoa(id)] = resp
	meta := s.meta
	s.mu.Unlock()
	if meta != nil {
		params = withMeta(params, meta)
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		s.t.Fatal(err)
	}
	s.send(string(b))
	return id, resp
}

// wait returns the response on resp; after testwait.Hang it fails, naming
// what it waited for.
func (s *session) wait(resp chan message, what string) message {
	s.t.Helper()
	return testwait.Recv(s.t, resp, what)
}

func (s *session) call(method string, params any) message {
	s.t.Helper()
	_, resp := s.request(method, params)
	return s.wait(resp, "the response to "+method)
}

func (s *session) initialize(version string) {
	s.t.Helper()
	m := s.call("initialize", map[string]any{"protocolVersion": version, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "test", "version": "1"}})
	if m.Error != nil {
		s.t.Fatalf("initialize: %s", m.Error.Message)
	}
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	json.Unmarshal(m.Result, &r)
	if r.ProtocolVersion != version {
		s.t.Fatalf("negotiated %q, want %q", r.ProtocolVersion, version)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// modern makes the session a client of protocol 2026-07-28: no
// initialize; every request carries its version, identity and
// capabilities in _meta.
func (s *session) modern() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.meta = modernMeta()
}

// modernMeta is the _meta of a 2026-07-28 request.
func modernMeta() map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
}

// withMeta returns params (nil or a map) with meta's keys added to its
// _meta.
func withMeta(params any, meta map[string]any) any {
	p := map[string]any{}
	if m, ok := params.(map[string]any); ok {
		for k, v := range m {
			p[k] = v
		}
	}
	all := map[string]any{}
	if m, ok := p["_meta"].(map[string]any); ok {
		for k, v := range m {
			all[k] = v
		}
	}
	for k, v := range meta {
		all[k] = v
	}
	p["_meta"] = all
	return p
}

// tool calls a tool and returns its result; a protocol error fails.
func (s *session) tool(name string, args map[string]any) toolResult {
	s.t.Helper()
	return s.toolResult(s.call("tools/call", map[string]any{"name": name, "arguments": args}))
}

func (s *session) toolResult(m message) toolResult {
	s.t.Helper()
	if m.Error != nil {
		s.t.Fatalf("tools/call: protocol error %d %s", m.Error.Code, m.Error.Message)
	}
	var r toolResult
	if err := json.Unmarshal(m.Result, &r); err != nil {
		s.t.Fatalf("tools/call result: %v", err)
	}
	return r
}

func (s *session) toolNames() []string {
	s.t.Helper()
	m := s.call("tools/list", map[string]any{})
	if m.Error != nil {
		s.t.Fatalf("tools/list: %s", m.Error.Message)
	}
	var r struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	json.Unmarshal(m.Result, &r)
	var names []string
	for _, tl := range r.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// output is everything the server wrote so far.
func (s *session) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.all.String()
}

// wantError checks a tool error result with code.
func wantError(t *testing.T, r toolResult, code Code) {
	t.Helper()
	if !r.IsError {
		t.Fatalf("result %q is not an error, want %s", r.text(), code)
	}
	if !strings.HasPrefix(r.text(), string(code)+": ") {
		t.Fatalf("error %q, want code %s", r.text(), code)
	}
	if len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
		t.Errorf("error result carries structured content %s", r.StructuredContent)
	}
}

func progressOf(m message) (token string, value float64) {
	var p struct {
		Token    any     `json:"progressToken"`
		Progress float64 `json:"progress"`
	}
	json.Unmarshal(m.Params, &p)
	return fmt.Sprint(p.Token), p.Progress
}
