package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/yazses/yazses/internal/testwait"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// serve runs s on a fresh unix socket until the test ends and returns the
// socket path. Cleanup requires Serve to return (every connection and
// handler finished) within testwait.Hang.
func serve(t *testing.T, s *Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := testwait.Recv(t, done, "Serve to return after its cancel"); err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
	})
	return path
}

// testServer has a few methods used across tests; count counts the calls
// that reached the "count" handler.
func testServer(t *testing.T, count *atomic.Int64) *Server {
	s := NewServer(slog.New(slog.DiscardHandler))
	s.Handle("ping", func(ctx context.Context, params json.RawMessage) (any, error) {
		return "pong", nil
	})
	s.Handle("echo", func(ctx context.Context, params json.RawMessage) (any, error) {
		return params, nil
	})
	s.Handle("count", func(ctx context.Context, params json.RawMessage) (any, error) {
		if count != nil {
			count.Add(1)
		}
		return nil, nil
	})
	return s
}

type rawConn struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dialRaw(t *testing.T, path string) *rawConn {
	t.Helper()
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawConn{t: t, conn: conn, r: bufio.NewReader(conn)}
}

func (c *rawConn) send(line string) {
	c.t.Helper()
	c.conn.SetWriteDeadline(time.Now().Add(testwait.Hang))
	if _, err := io.WriteString(c.conn, line+"\n"); err != nil {
		c.t.Fatalf("write %q: %v", line, err)
	}
}

// recv reads one response line within d (testwait.Hang for one that must
// come; a short d only to see that nothing more comes).
func (c *rawConn) recv(d time.Duration) (*Response, error) {
	c.conn.SetReadDeadline(time.Now().Add(d))
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		return nil, err
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return nil, fmt.Errorf("response %q: %w", line, err)
	}
	return &resp, nil
}

func TestRoundTrip(t *testing.T) {
	s := testServer(t, nil)
	release := make(chan struct{})
	// A long-running method (HandleConcurrent), as ask_human is.
	s.HandleConcurrent("slow", func(ctx context.Context, params json.RawMessage) (any, error) {
		select {
		case <-release:
			return "slow done", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	type sum struct{ A, B int }
	s.Handle("add", func(ctx context.Context, params json.RawMessage) (any, error) {
		var p sum
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, Errorf(InvalidParams, "want {A, B}")
		}
		return map[string]int{"sum": p.A + p.B}, nil
	})
	path := serve(t, s)
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(conn)
	defer c.Close()
	ctx := testwait.Context(t)

	var got map[string]int
	if err := c.Call(ctx, "add", sum{A: 2, B: 40}, &got); err != nil {
		t.Fatalf("Call(add) = %v", err)
	}
	if diff := cmp.Diff(map[string]int{"sum": 42}, got); diff != "" {
		t.Errorf("add result (-want +got):\n%s", diff)
	}

	// A slow long-running call does not hold up later calls on the same
	// connection, and each answer reaches its own caller.
	slowErr := make(chan error, 1)
	var slowResult string
	go func() { slowErr <- c.Call(ctx, "slow", nil, &slowResult) }()
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out sum
			if err := c.Call(ctx, "echo", sum{A: i, B: -i}, &out); err != nil {
				t.Errorf("Call(echo %d) = %v", i, err)
				return
			}
			if out != (sum{A: i, B: -i}) {
				t.Errorf("Call(echo %d) = %+v, want its own params back", i, out)
			}
		}()
	}
	testwait.Group(t, &wg, "the 50 echo calls beside the slow one")
	select {
	case err := <-slowErr:
		t.Fatalf("slow call returned early: %v", err)
	default:
	}
	close(release)
	if err := testwait.Recv(t, slowErr, "the slow call's answer once released"); err != nil || slowResult != "slow done" {
		t.Errorf("Call(slow) = %q, %v; want %q, nil", slowResult, err, "slow done")
	}

	var rpcErr *Error
	if err := c.Call(ctx, "add", []int{1}, nil); !errors.As(err, &rpcErr) || rpcErr.Code != InvalidParams {
		t.Errorf("Call(add, bad params) = %v, want code %d", err, InvalidParams)
	}
	if err := c.Call(ctx, "nope", nil, nil); !errors.As(err, &rpcErr) || rpcErr.Code != MethodNotFound {
		t.Errorf("Call(nope) = %v, want code %d", err, MethodNotFound)
	}
}

func TestRawLines(t *testing.T) {
	const sentinel = `{"jsonrpc":"2.0","id":"sentinel","method":"ping"}`
	errResp := func(id string, code int) *Response {
		if id == "" {
			id = "null"
		}
		return &Response{JSONRPC: Version, ID: json.RawMessage(id), Error: &Error{Code: code}}
	}
	tests := []struct {
		name  string
		line  string
		want  *Response // nil: no response at all
		count int64     // calls that must reach the count handler
	}{
		{"malformed", `{"jsonrpc":"2.0","id":1,"method":`, errResp("", ParseError), 0},
		{"garbage", `hello`, errResp("", ParseError), 0},
		{"invalid utf8 outside string", "\xff", errResp("", ParseError), 0},
		{"number line", `42`, errResp("", InvalidRequest), 0},
		{"null line", `null`, errResp("", InvalidRequest), 0},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"count"}]`, errResp("", InvalidRequest), 0},
		{"empty batch", `[]`, errResp("", InvalidRequest), 0},
		{"unknown method", `{"jsonrpc":"2.0","id":7,"method":"nope"}`, errResp("7", MethodNotFound), 0},
		{"id object", `{"jsonrpc":"2.0","id":{"a":1},"method":"count"}`, errResp("", InvalidRequest), 0},
		{"id array", `{"jsonrpc":"2.0","id":[1],"method":"count"}`, errResp("", InvalidRequest), 0},
		{"id true", `{"jsonrpc":"2.0","id":true,"method":"count"}`, errResp("", InvalidRequest), 0},
		{"id false", `{"jsonrpc":"2.0","id":false,"method":"count"}`, errResp("", InvalidRequest), 0},
		{"id null", `{"jsonrpc":"2.0","id":null,"method":"count"}`, errResp("", InvalidRequest), 0},
		{"id bad utf8", "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"count\"}", errResp("", InvalidRequest), 0},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"count"}`, errResp("1", InvalidRequest), 0},
		{"no version", `{"id":"x","method":"count"}`, errResp(`"x"`, InvalidRequest), 0},
		{"no method", `{"jsonrpc":"2.0","id":1}`, errResp("1", InvalidRequest), 0},
		{"method number", `{"jsonrpc":"2.0","id":1,"method":5}`, errResp("1", InvalidRequest), 0},
		{"scalar params", `{"jsonrpc":"2.0","id":1,"method":"count","params":3}`, errResp("1", InvalidRequest), 0},
		{"invalid notification", `{"jsonrpc":"2.0","method":"count","params":"x"}`, errResp("", InvalidRequest), 0},
		{"notification", `{"jsonrpc":"2.0","method":"count"}`, nil, 1},
		{"notification null params", `{"jsonrpc":"2.0","method":"count","params":null}`, nil, 1},
		{"unknown notification", `{"jsonrpc":"2.0","method":"nope"}`, nil, 0},
		{"blank line", `   `, nil, 0},
		{"string id", `{"jsonrpc":"2.0","id":"abc","method":"count"}`,
			&Response{JSONRPC: Version, ID: json.RawMessage(`"abc"`), Result: json.RawMessage(`null`)}, 1},
		{"big number id", `{"jsonrpc":"2.0","id":-12345678901234567890,"method":"count"}`,
			&Response{JSONRPC: Version, ID: json.RawMessage(`-12345678901234567890`), Result: json.RawMessage(`null`)}, 1},
		{"crlf", "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"count\"}\r",
			&Response{JSONRPC: Version, ID: json.RawMessage(`2`), Result: json.RawMessage(`null`)}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var count atomic.Int64
			c := dialRaw(t, serve(t, testServer(t, &count)))
			c.send(tt.line)
			c.send(sentinel)
			var got []*Response
			sawSentinel := false
			for !sawSentinel || (tt.want != nil && len(got) == 0) {
				resp, err := c.recv(testwait.Hang)
				if err != nil {
					t.Fatalf("read response: %v (so far %d responses)", err, len(got))
				}
				if string(resp.ID) == `"sentinel"` {
					sawSentinel = true
					continue
				}
				got = append(got, resp)
			}
			// Anything still coming is a response that should not exist.
			if resp, err := c.recv(100 * time.Millisecond); err == nil {
				got = append(got, resp)
			}
			var want []*Response
			if tt.want != nil {
				want = []*Response{tt.want}
			}
			ignoreMessage := cmp.Comparer(func(a, b *Error) bool {
				return (a == nil) == (b == nil) && (a == nil || a.Code == b.Code)
			})
			if diff := cmp.Diff(want, got, ignoreMessage); diff != "" {
				t.Errorf("responses to %q (-want +got):\n%s", tt.line, diff)
			}
			if n := count.Load(); n != tt.count {
				t.Errorf("count handler ran %d times, want %d", n, tt.count)
			}
		})
	}
}

func TestHandlerErrors(t *testing.T) {
	s := testServer(t, nil)
	const secret = "/home/someone/private transcript words"
	s.Handle("rpcerr", func(ctx context.Context, params json.RawMessage) (any, error) {
		return nil, fmt.Errorf("wrapped: %w", &Error{Code: 42, Message: "told", Data: map[string]int{"retry_after_s": 9}})
	})
	s.Handle("plain", func(ctx context.Context, params json.RawMessage) (any, error) {
		return nil, errors.New(secret)
	})
	s.Handle("panic", func(ctx context.Context, params json.RawMessage) (any, error) {
		panic(secret)
	})
	s.Handle("unmarshalable", func(ctx context.Context, params json.RawMessage) (any, error) {
		return make(chan int), nil
	})
	s.Handle("typednil", func(ctx context.Context, params json.RawMessage) (any, error) {
		var e *Error
		return nil, e
	})
	c := dialRaw(t, serve(t, s))
	tests := []struct {
		method string
		want   *Error
	}{
		{"rpcerr", &Error{Code: 42, Message: "told", Data: map[string]any{"retry_after_s": 9.0}}},
		{"plain", &Error{Code: InternalError, Message: "internal error"}},
		{"panic", &Error{Code: InternalError, Message: "internal error"}},
		{"unmarshalable", &Error{Code: InternalError, Message: "internal error"}},
		{"typednil", &Error{Code: InternalError, Message: "internal error"}},
	}
	for i, tt := range tests {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q}`, i, tt.method))
		c.conn.SetReadDeadline(time.Now().Add(testwait.Hang))
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("%s: reading its answer: %v", tt.method, err)
		}
		if strings.Contains(string(line), "private") {
			t.Errorf("%s: response %q leaks the handler's error text", tt.method, line)
		}
		var resp Response
		if err := json.Unmarshal(line, &resp); err != nil {
			t.Fatalf("%s: %v", tt.method, err)
		}
		if string(resp.ID) != fmt.Sprint(i) || resp.Result != nil {
			t.Errorf("%s: response %q, want id %d and no result", tt.method, line, i)
		}
		if diff := cmp.Diff(tt.want, resp.Error); diff != "" {
			t.Errorf("%s: error (-want +got):\n%s", tt.method, diff)
		}
	}
	// The connection survived all of it.
	c.send(`{"jsonrpc":"2.0","id":"last","method":"ping"}`)
	if resp, err := c.recv(testwait.Hang); err != nil || string(resp.Result) != `"pong"` {
		t.Errorf("ping after errors = %+v, %v; want pong", resp, err)
	}
}

func TestMalformedKeepsServing(t *testing.T) {
	c := dialRaw(t, serve(t, testServer(t, nil)))
	for i := range 3 {
		c.send(`{"jsonrpc":"2.0","id":1,"method":"ping"`) // missing brace
		resp, err := c.recv(testwait.Hang)
		if err != nil || resp.Error == nil || resp.Error.Code != ParseError || string(resp.ID) != "null" {
			t.Fatalf("round %d: malformed line got %+v, %v; want ParseError with null id", i, resp, err)
		}
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i))
		resp, err = c.recv(testwait.Hang)
		if err != nil || string(resp.Result) != `"pong"` || string(resp.ID) != fmt.Sprint(i) {
			t.Fatalf("round %d: next line got %+v, %v; want pong", i, resp, err)
		}
	}
}

func TestLongLine(t *testing.T) {
	path := serve(t, testServer(t, nil))
	other := dialRaw(t, path)
	big := dialRaw(t, path)

	// The 10 MB line is written in the background: the server must answer
	// and hang up long before it has all been sent (the write's deadline
	// is only a guard: it fails with the hang-up, not a timeout).
	wrote := make(chan error, 1)
	go func() {
		line := `{"jsonrpc":"2.0","id":1,"method":"echo","params":["` + strings.Repeat("a", 10<<20) + `"]}` + "\n"
		big.conn.SetWriteDeadline(time.Now().Add(testwait.Hang))
		_, err := io.WriteString(big.conn, line)
		wrote <- err
	}()
	resp, err := big.recv(testwait.Hang)
	if err != nil || resp.Error == nil || resp.Error.Code != InvalidRequest {
		t.Fatalf("10 MB line got %+v, %v; want an InvalidRequest error", resp, err)
	}
	if _, err := big.recv(testwait.Hang); err == nil {
		t.Errorf("connection still open after a too long line")
	}
	var ne net.Error
	if err := testwait.Recv(t, wrote, "the write of the 10 MB line to end"); err == nil {
		t.Errorf("writing the 10 MB line succeeded: the server read all of it")
	} else if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("writing the 10 MB line: %v, want it cut off by the server's hang-up", err)
	}

	other.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if resp, err := other.recv(testwait.Hang); err != nil || string(resp.Result) != `"pong"` {
		t.Errorf("other connection: got %+v, %v; want pong", resp, err)
	}
	// Just under the limit is fine.
	s := strings.Repeat("b", DefaultMaxLineBytes-100)
	other.send(`{"jsonrpc":"2.0","id":2,"method":"echo","params":["` + s + `"]}`)
	if resp, err := other.recv(testwait.Hang); err != nil || len(resp.Result) != len(s)+4 {
		t.Errorf("line just under the limit: got %v, want its echo", err)
	}
}

// TestHalfWrittenRequest: a client that stops halfway through a line and
// hangs up ends ServeConn at once, without running anything.
func TestHalfWrittenRequest(t *testing.T) {
	var count atomic.Int64
	s := testServer(t, &count)
	client, server := socketPair(t)
	done := make(chan error, 1)
	go func() { done <- s.ServeConn(context.Background(), server) }()
	if _, err := io.WriteString(client, `{"jsonrpc":"2.0","id":1,"method":"count","par`); err != nil {
		t.Fatal(err)
	}
	client.Close()
	if err := testwait.Recv(t, done, "ServeConn to return after the client hung up"); err != nil {
		t.Errorf("ServeConn = %v, want nil", err)
	}
	if n := count.Load(); n != 0 {
		t.Errorf("handler ran %d times for a half-written request", n)
	}
}

func socketPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// logWatch is a slog handler that reports each record's message.
type logWatch struct{ msgs chan string }

func (w logWatch) Enabled(context.Context, slog.Level) bool { return true }
func (w logWatch) Handle(_ context.Context, r slog.Record) error {
	select {
	case w.msgs <- r.Message:
	default:
	}
	return nil
}
func (w logWatch) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w logWatch) WithGroup(string) slog.Handler      { return w }

func TestClientNeverReads(t *testing.T) {
	watch := logWatch{msgs: make(chan string, 100)}
	s := testServer(t, nil)
	s.logger = slog.New(watch)
	s.WriteTimeout = 300 * time.Millisecond
	const size = 2 << 20
	s.Handle("big", func(ctx context.Context, params json.RawMessage) (any, error) {
		return strings.Repeat("x", size), nil
	})
	path := serve(t, s)
	stalled := dialRaw(t, path)
	stalled.send(`{"jsonrpc":"2.0","id":1,"method":"big"}`)

	// While that write is stuck, other connections are served: pings go
	// on, one after the other, until the server has dropped the stalled
	// client (bounded: testwait.Context).
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(conn)
	defer c.Close()
	ctx := testwait.Context(t)
	pings := 0
	for dropped := false; !dropped; {
		var got string
		if err := c.Call(ctx, "ping", nil, &got); err != nil || got != "pong" {
			t.Fatalf("ping %d while waiting for the stalled client to be dropped = %q, %v", pings, got, err)
		}
		pings++
		select {
		case m := <-watch.msgs:
			dropped = strings.Contains(m, "dropping connection")
		default:
		}
	}
	// Reading now drains what was buffered, then hits the end: the reply
	// was cut off, never completed.
	stalled.conn.SetReadDeadline(time.Now().Add(testwait.Hang))
	n, err := io.Copy(io.Discard, stalled.r)
	if n >= size {
		t.Errorf("read %d bytes from a dropped connection, want a cut-off reply", n)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("reading the dropped connection timed out: it is still open")
	}
	if err := c.Call(ctx, "ping", nil, nil); err != nil {
		t.Errorf("ping after the drop = %v", err)
	}
}

func TestManyIdleConnections(t *testing.T) {
	path := serve(t, testServer(t, nil))
	for i := range 200 {
		c := dialRaw(t, path)
		// One round trip proves the connection was accepted and holds a
		// slot; then it stays idle.
		c.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		if _, err := c.recv(testwait.Hang); err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(conn)
	defer c.Close()
	for i := range 10 {
		var got string
		if err := c.Call(testwait.Context(t), "ping", nil, &got); err != nil || got != "pong" {
			t.Fatalf("call %d on connection 201 = %q, %v", i, got, err)
		}
	}
}

// TestConnectionLimit: with every connection busy (a request in flight on
// each), one more is refused; a freed slot is used again.
func TestConnectionLimit(t *testing.T) {
	s, started, cancelled := blockServer(t)
	s.MaxConns = 2
	path := serve(t, s)
	var held []*rawConn
	for range 2 {
		c := dialRaw(t, path)
		c.send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
		wait(t, started, "a blocking request")
		held = append(held, c)
	}
	extra := dialRaw(t, path)
	resp, err := extra.recv(testwait.Hang)
	if err != nil || resp.Error == nil || resp.Error.Code != ServerBusy || string(resp.ID) != "null" {
		t.Fatalf("connection over the limit got %+v, %v; want ServerBusy", resp, err)
	}
	if _, err := extra.recv(testwait.Hang); err == nil {
		t.Error("connection over the limit was not closed")
	}

	// The client sees the busy error when it is refused.
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(conn)
	testwait.Closed(t, c.done, "the refused client's reader to see the hang-up") // it records why
	var rpcErr *Error
	if err := c.Call(testwait.Context(t), "ping", nil, nil); !errors.As(err, &rpcErr) || rpcErr.Code != ServerBusy {
		t.Errorf("Call over the limit = %v, want code %d", err, ServerBusy)
	}
	c.Close()

	// A freed slot is used again. The slot is freed once the closed
	// connection's handler has ended and its goroutine returned: after the
	// handler's end, each try is answered (refused until then, served
	// after), and the next one is made on that answer.
	held[0].conn.Close()
	wait(t, cancelled, "the closed connection's handler to end")
	deadline := time.Now().Add(testwait.Hang)
	for {
		c := dialRaw(t, path)
		// Not c.send: while the slot is still taken the server hangs up,
		// and the write may fail.
		io.WriteString(c.conn, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
		resp, err := c.recv(testwait.Hang)
		if err == nil && string(resp.Result) == `"pong"` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for a slot after closing a connection: none within %v (last try: %+v, %v)", testwait.Hang, resp, err)
		}
	}
}

// blockServer has a "block" method that reports its start and the end of
// its context: a long-running method (HandleConcurrent), as ask_human is.
func blockServer(t *testing.T) (s *Server, started, cancelled chan struct{}) {
	s = testServer(t, nil)
	started = make(chan struct{}, 10)
	cancelled = make(chan struct{}, 10)
	s.HandleConcurrent("block", func(ctx context.Context, params json.RawMessage) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return nil, ctx.Err()
	})
	return s, started, cancelled
}

// wait takes one report from ch; after testwait.Hang it fails, naming what.
func wait(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	testwait.Recv(t, ch, what)
}

func TestCancelOnConnClose(t *testing.T) {
	s, started, cancelled := blockServer(t)
	c := dialRaw(t, serve(t, s))
	c.send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
	c.send(`{"jsonrpc":"2.0","method":"block"}`) // a notification too
	wait(t, started, "handler start")
	wait(t, started, "notification handler start")
	c.conn.Close()
	wait(t, cancelled, "the handler's context to end")
	wait(t, cancelled, "the notification handler's context to end")
}

func TestCancelOnServerStop(t *testing.T) {
	s, started, cancelled := blockServer(t)
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	c := dialRaw(t, path)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
	wait(t, started, "handler start")
	cancel()
	wait(t, cancelled, "the handler's context to end")
	if err := testwait.Recv(t, done, "Serve to return after its cancel"); err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
	// The handler's own (error) reply may or may not make it out; after
	// that the connection must be closed.
	for i := 0; ; i++ {
		if _, err := c.recv(testwait.Hang); err != nil {
			break
		}
		if i > 0 {
			t.Fatal("connection still open after the server stopped")
		}
	}
	if _, err := net.Dial("unix", path); err == nil {
		t.Error("listener still accepting after the server stopped")
	}
}

func TestClientCancelAndClose(t *testing.T) {
	s, started, cancelled := blockServer(t)
	conn, err := net.Dial("unix", serve(t, s))
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(conn)
	bound := testwait.Context(t)
	ctx, cancel := context.WithCancel(bound)
	errc := make(chan error, 1)
	go func() { errc <- c.Call(ctx, "block", nil, nil) }()
	wait(t, started, "handler start")
	cancel()
	// The handler answers only when the connection ends (below): the call
	// returns on its own cancel, not on an answer.
	if err := testwait.Recv(t, errc, "the cancelled Call to return"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Call = %v, want context.Canceled", err)
	}
	// The client still works after a cancelled call.
	var got string
	if err := c.Call(bound, "ping", nil, &got); err != nil || got != "pong" {
		t.Errorf("Call after cancel = %q, %v", got, err)
	}
	if err := c.Notify(bound, "block", nil); err != nil {
		t.Errorf("Notify = %v", err)
	}
	wait(t, started, "notified handler start")

	// Close fails a pending call, and every later one, with ErrClosed.
	go func() { errc <- c.Call(bound, "block", nil, nil) }()
	wait(t, started, "handler start")
	c.Close()
	if err := testwait.Recv(t, errc, "the pending Call to return after Close"); !errors.Is(err, ErrClosed) {
		t.Errorf("pending Call after Close = %v, want ErrClosed", err)
	}
	if err := c.Call(bound, "ping", nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after Close = %v, want ErrClosed", err)
	}
	// Closing the client ends the server side handlers.
	wait(t, cancelled, "first handler's context to end")
	wait(t, cancelled, "second handler's context to end")
	wait(t, cancelled, "third handler's context to end")
}

func TestClientServerGone(t *testing.T) {
	client, server := socketPair(t)
	c := NewClient(client)
	defer c.Close()
	go func() {
		r := bufio.NewReader(server)
		r.ReadBytes('\n')
		server.Close()
	}()
	if err := c.Call(testwait.Context(t), "ping", nil, nil); err == nil || errors.Is(err, ErrClosed) {
		t.Errorf("Call when the server hangs up = %v, want a read error", err)
	}
}

// TestHalfCloseCancelsAndAnswers: a client that shuts down its writing side
// cancels its running requests, as a close does, but still reads how each
// ended (an ask_human's final result says whether it was heard).
func TestHalfCloseCancelsAndAnswers(t *testing.T) {
	s := testServer(t, nil)
	started := make(chan struct{}, 1)
	s.Handle("wait", func(ctx context.Context, params json.RawMessage) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "ended: " + context.Cause(ctx).Error(), nil
	})
	c := dialRaw(t, serve(t, s))
	c.send(`{"jsonrpc":"2.0","id":7,"method":"wait"}`)
	wait(t, started, "handler start")
	if err := c.conn.(*net.UnixConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	resp, err := c.recv(testwait.Hang)
	if err != nil {
		t.Fatalf("after a half close: %v, want the request's final answer", err)
	}
	if string(resp.ID) != "7" || string(resp.Result) != `"ended: context canceled"` {
		t.Errorf("answer = id %s result %s, want id 7 and the cancelled handler's result", resp.ID, resp.Result)
	}
	if _, err := c.recv(testwait.Hang); !errors.Is(err, io.EOF) {
		t.Errorf("after the answer: %v, want EOF (the server closes)", err)
	}
}

// With AnswerOnStop, a server told to stop (Serve's context ends) stops
// reading each connection, cancels its requests in flight and still
// writes their answers before it closes the connection; Serve returns
// once it has. Without it the connection is closed at once
// (TestCancelOnServerStop).
func TestAnswerOnStop(t *testing.T) {
	s := testServer(t, nil)
	s.AnswerOnStop = true
	started := make(chan struct{}, 1)
	s.Handle("wait", func(ctx context.Context, params json.RawMessage) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "ended: " + context.Cause(ctx).Error(), nil
	})
	path, stop := serveStoppable(t, s)
	c := dialRaw(t, path)
	c.send(`{"jsonrpc":"2.0","id":7,"method":"wait"}`)
	wait(t, started, "handler start")
	stop() // Serve returns once the answer is written
	resp, err := c.recv(testwait.Hang)
	if err != nil {
		t.Fatalf("after the server's stop: %v, want the request's answer", err)
	}
	if string(resp.ID) != "7" || string(resp.Result) != `"ended: context canceled"` {
		t.Errorf("answer = id %s result %s, want id 7 and the cancelled handler's result", resp.ID, resp.Result)
	}
	if _, err := c.recv(testwait.Hang); !errors.Is(err, io.EOF) {
		t.Errorf("after the answer: %v, want EOF (the server closes)", err)
	}
}
