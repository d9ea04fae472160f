package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
)

// event is what the test streams send.
type event struct {
	N int    `json:"n"`
	S string `json:"s,omitempty"`
}

// streamServer has the stream method "watch": each stream sends an event
// for every number on next (shared by all streams), ends with an error for
// a negative one (the number is its code), with a result when next is closed, and when its context
// ends. started and ended (the handler's return, or send's error) report
// each stream's life.
func streamServer(t *testing.T) (s *Server, next chan int, started chan struct{}, ended chan error) {
	s = testServer(t, nil)
	next = make(chan int)
	started = make(chan struct{}, 100)
	ended = make(chan error, 100)
	s.HandleStream("watch", func(ctx context.Context, params json.RawMessage, send func(any) error) (err error) {
		defer func() { ended <- err }()
		started <- struct{}{}
		if err := send(event{N: 0, S: "hello"}); err != nil {
			return err
		}
		for {
			select {
			case <-ctx.Done():
				return nil
			case n, ok := <-next:
				switch {
				case !ok:
					return nil
				case n < 0:
					return Errorf(n, "stream failed")
				}
				if err := send(event{N: n}); err != nil {
					return err
				}
			}
		}
	})
	return s, next, started, ended
}

// recvMsg reads one line of any kind within d.
func (c *rawConn) recvMsg(d time.Duration) (*message, error) {
	c.conn.SetReadDeadline(time.Now().Add(d))
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		return nil, err
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, fmt.Errorf("line %q: %w", line, err)
	}
	return &m, nil
}

// put hands n to the streams' handler; after testwait.Hang it fails, as
// no stream is there to take it.
func put(t *testing.T, next chan<- int, n int) {
	t.Helper()
	select {
	case next <- n:
	case <-time.After(testwait.Hang):
		t.Fatalf("waiting for a stream to take %d: none within %v", n, testwait.Hang)
	}
}

// wantEvent reads a line and wants the notification of event n.
func (c *rawConn) wantEvent(n int) {
	c.t.Helper()
	m, err := c.recvMsg(testwait.Hang)
	if err != nil {
		c.t.Fatalf("waiting for event %d: %v", n, err)
	}
	var ev event
	if m.Method != "watch" || m.ID != nil || json.Unmarshal(m.Params, &ev) != nil || ev.N != n {
		c.t.Fatalf("got %+v (params %s), want the notification of event %d", m, m.Params, n)
	}
}

func dialClient(t *testing.T, path string) *Client {
	t.Helper()
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(conn)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestStreamWire: the events are notifications of the called method, in
// order, and the call's response comes last; a handler's error ends the
// stream as the call's error.
func TestStreamWire(t *testing.T) {
	s, next, started, _ := streamServer(t)
	c := dialRaw(t, serve(t, s))
	c.send(`{"jsonrpc":"2.0","id":"w","method":"watch"}`)
	wait(t, started, "the stream")
	c.wantEvent(0)
	for n := 1; n <= 3; n++ {
		put(t, next, n)
		c.wantEvent(n)
	}
	put(t, next, InvalidParams)
	m, err := c.recvMsg(testwait.Hang)
	if err != nil || m.Method != "" || string(m.ID) != `"w"` || m.Error == nil || m.Error.Code != InvalidParams {
		t.Fatalf("end of the stream = %+v, %v; want the call's error response", m, err)
	}
	// The connection serves on.
	c.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if resp, err := c.recv(testwait.Hang); err != nil || string(resp.Result) != `"pong"` {
		t.Fatalf("ping after the stream = %+v, %v", resp, err)
	}
}

// TestClientStream: Client.Stream passes each event in order, returns nil
// when the server ends the stream with a result, and the server's error
// when it ends it with one; plain calls on the same client go on meanwhile.
func TestClientStream(t *testing.T) {
	s, next, started, _ := streamServer(t)
	c := dialClient(t, serve(t, s))
	got := make(chan event, 100)
	done := make(chan error, 1)
	go func() {
		done <- c.Stream(testwait.Context(t), "watch", nil, func(p json.RawMessage) error {
			var ev event
			if err := json.Unmarshal(p, &ev); err != nil {
				return err
			}
			got <- ev
			return nil
		})
	}()
	wait(t, started, "the stream")
	var pong string
	if err := c.Call(testwait.Context(t), "ping", nil, &pong); err != nil || pong != "pong" {
		t.Errorf("ping during the stream = %q, %v", pong, err)
	}
	if err := c.Stream(testwait.Context(t), "watch", nil, func(json.RawMessage) error { return nil }); !errors.Is(err, ErrStreamBusy) {
		t.Errorf("a second Stream on the client = %v, want ErrStreamBusy", err)
	}
	for n := 1; n <= 20; n++ {
		put(t, next, n)
	}
	close(next)
	if err := testwait.Recv(t, done, "Stream to return once the server ended it"); err != nil {
		t.Errorf("Stream = %v, want nil (ended with a result)", err)
	}
	close(got)
	want := 0
	for ev := range got {
		if ev.N != want {
			t.Fatalf("event %d, want %d: out of order or lost", ev.N, want)
		}
		want++
	}
	if want != 21 {
		t.Errorf("got %d events, want 21", want)
	}

	s2, next2, started2, _ := streamServer(t)
	c2 := dialClient(t, serve(t, s2))
	go func() {
		done <- c2.Stream(testwait.Context(t), "watch", nil, func(json.RawMessage) error { return nil })
	}()
	wait(t, started2, "the second stream")
	put(t, next2, -7)
	var rpcErr *Error
	if err := testwait.Recv(t, done, "the second Stream to return with the handler's error"); !errors.As(err, &rpcErr) || rpcErr.Code != -7 {
		t.Errorf("Stream ended by a handler error = %v, want the server's error code -7", err)
	}
}

// TestStreamOutlivesIdleTimeout: a stream is a request in flight: its
// connection is not closed by the idle clock that closes a quiet
// connection opened at the same time.
func TestStreamOutlivesIdleTimeout(t *testing.T) {
	s, next, started, _ := streamServer(t)
	s.IdleTimeout = 100 * time.Millisecond
	path := serve(t, s)
	quiet := dialRaw(t, path)
	c := dialRaw(t, path)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"watch"}`)
	wait(t, started, "the stream")
	c.wantEvent(0)
	if _, err := quiet.waitClosed(testwait.Hang); err != nil {
		t.Fatalf("the quiet connection was not closed by the idle clock: %v", err)
	}
	// Twice more, to be well past IdleTimeout since the stream began.
	for range 2 {
		again := dialRaw(t, path)
		if _, err := again.waitClosed(testwait.Hang); err != nil {
			t.Fatalf("a quiet connection was not closed by the idle clock: %v", err)
		}
	}
	put(t, next, 1)
	c.wantEvent(1)
}

// TestStreamKeptWhenFull: with every slot taken (a stream and an idle
// connection), newcomers are refused and the stream goes on.
func TestStreamKeptWhenFull(t *testing.T) {
	s, next, started, _ := streamServer(t)
	s.MaxConns = 2
	s.LogEvery = time.Hour
	path := serve(t, s)
	c := dialRaw(t, path)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"watch"}`)
	wait(t, started, "the stream")
	c.wantEvent(0)
	idle := dialRaw(t, path)
	idle.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if resp, err := idle.recv(testwait.Hang); err != nil || string(resp.Result) != `"pong"` {
		t.Fatalf("the second connection: %+v, %v; want pong", resp, err)
	}
	for i := range 3 {
		got, err := dialRaw(t, path).waitClosed(testwait.Hang)
		if err != nil || len(got) != 1 || got[0].Error == nil || got[0].Error.Code != ServerBusy {
			t.Fatalf("connection %d beyond the limit: %+v, %v; want one ServerBusy notice and the end", i, got, err)
		}
	}
	put(t, next, 1)
	c.wantEvent(1)
}

// TestMaxStreams: MaxStreams streams run at once over all connections; one
// more is refused ServerBusy (its connection serves on), and a stream that
// ends frees its place. One stream runs per connection.
func TestMaxStreams(t *testing.T) {
	s, _, started, _ := streamServer(t)
	s.MaxStreams = 2
	path := serve(t, s)
	var streams []*rawConn
	for range 2 {
		c := dialRaw(t, path)
		c.send(`{"jsonrpc":"2.0","id":1,"method":"watch"}`)
		wait(t, started, "a stream")
		c.wantEvent(0)
		streams = append(streams, c)
	}
	if n := s.Streams(); n != 2 {
		t.Errorf("Streams() = %d, want 2", n)
	}
	// A second stream on a streaming connection.
	streams[0].send(`{"jsonrpc":"2.0","id":2,"method":"watch"}`)
	if resp, err := streams[0].recv(testwait.Hang); err != nil || string(resp.ID) != "2" || resp.Error == nil || resp.Error.Code != InvalidRequest {
		t.Errorf("a second stream on one connection = %+v, %v; want InvalidRequest", resp, err)
	}
	third := dialRaw(t, path)
	third.send(`{"jsonrpc":"2.0","id":3,"method":"watch"}`)
	resp, err := third.recv(testwait.Hang)
	if err != nil || string(resp.ID) != "3" || resp.Error == nil || resp.Error.Code != ServerBusy {
		t.Fatalf("a stream beyond MaxStreams = %+v, %v; want ServerBusy", resp, err)
	}
	third.send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	if resp, err := third.recv(testwait.Hang); err != nil || string(resp.Result) != `"pong"` {
		t.Fatalf("ping after a refused stream = %+v, %v", resp, err)
	}
	// The client ends a stream with a half close; its final answer comes
	// once its place is free.
	if err := streams[1].conn.(*net.UnixConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if m, err := streams[1].recvMsg(testwait.Hang); err != nil || string(m.ID) != "1" || m.Error != nil {
		t.Fatalf("the ended stream's answer = %+v, %v; want a result for id 1", m, err)
	}
	third.send(`{"jsonrpc":"2.0","id":5,"method":"watch"}`)
	wait(t, started, "the stream in the freed place")
	third.wantEvent(0)
}

// TestStreamSlowReaderDropped: a client that does not read its events is
// dropped after WriteTimeout: send fails, the handler returns, and other
// clients are served meanwhile.
func TestStreamSlowReaderDropped(t *testing.T) {
	s := testServer(t, nil)
	s.WriteTimeout = 200 * time.Millisecond
	ended := make(chan error, 1)
	var sent atomic.Int64
	big := strings.Repeat("x", 64<<10)
	s.HandleStream("flood", func(ctx context.Context, params json.RawMessage, send func(any) error) error {
		for {
			if err := send(event{N: int(sent.Add(1)), S: big}); err != nil {
				ended <- err
				return err
			}
		}
	})
	path := serve(t, s)
	c := dialRaw(t, path) // never reads
	c.send(`{"jsonrpc":"2.0","id":1,"method":"flood"}`)
	other := dialClient(t, path)
	var pong string
	if err := other.Call(testwait.Context(t), "ping", nil, &pong); err != nil || pong != "pong" {
		t.Errorf("ping while a stream floods another client = %q, %v", pong, err)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, errBroken) {
			t.Errorf("send = %v, want the broken connection", err)
		}
	case <-time.After(testwait.Hang):
		t.Fatalf("waiting for the stream of a client that never reads to end: not within %v (%d events sent)", testwait.Hang, sent.Load())
	}
	if _, err := c.waitClosed(testwait.Hang); err != nil {
		t.Errorf("the dropped client's connection: %v, want closed", err)
	}
}

// TestStreamEvents: an event must be a JSON object or array; anything else
// is refused by send and nothing is written.
func TestStreamEvents(t *testing.T) {
	s := testServer(t, nil)
	errs := make(chan error, 3)
	s.HandleStream("odd", func(ctx context.Context, params json.RawMessage, send func(any) error) error {
		errs <- send("a string")
		errs <- send(nil)
		errs <- send([]int{1})
		return nil
	})
	c := dialRaw(t, serve(t, s))
	c.send(`{"jsonrpc":"2.0","id":1,"method":"odd"}`)
	for i, wantErr := range []bool{true, true, false} {
		if err := testwait.Recv(t, errs, fmt.Sprintf("send %d's result", i)); (err != nil) != wantErr {
			t.Errorf("send %d = %v, want error %v", i, err, wantErr)
		}
	}
	m, err := c.recvMsg(testwait.Hang)
	if err != nil || m.Method != "odd" || string(m.Params) != "[1]" {
		t.Fatalf("first line = %+v, %v; want only the array event", m, err)
	}
	if m, err := c.recvMsg(testwait.Hang); err != nil || string(m.ID) != "1" || string(m.Result) != "null" {
		t.Fatalf("second line = %+v, %v; want the null result", m, err)
	}
}

// TestStreamNotification: a stream called as a notification does not run
// (nobody would read it).
func TestStreamNotification(t *testing.T) {
	s, _, started, _ := streamServer(t)
	path, stop := serveStoppable(t, s)
	c := dialRaw(t, path)
	c.send(`{"jsonrpc":"2.0","method":"watch"}`)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if resp, err := c.recv(testwait.Hang); err != nil || string(resp.Result) != `"pong"` {
		t.Fatalf("ping after a stream notification = %+v, %v; want pong and nothing before it", resp, err)
	}
	stop() // every handler has returned
	if len(started) != 0 {
		t.Errorf("a stream called as a notification ran")
	}
}

// TestStreamServerStop: stopping the server ends its streams (Serve waits
// for their handlers), and the client's Stream returns: with the stream's
// last answer or with the connection's end, whichever the client sees
// first.
func TestStreamServerStop(t *testing.T) {
	s, _, started, ended := streamServer(t)
	path, stop := serveStoppable(t, s)
	c := dialClient(t, path)
	done := make(chan error, 1)
	first := make(chan struct{}, 1)
	go func() {
		done <- c.Stream(testwait.Context(t), "watch", nil, func(json.RawMessage) error {
			select {
			case first <- struct{}{}:
			default:
			}
			return nil
		})
	}()
	wait(t, started, "the stream")
	// Its first event written: a stop before it made that write fail, and
	// the handler return the broken connection, not its context's end.
	testwait.Recv(t, first, "the stream's first event")
	stop()
	if err := testwait.Recv(t, ended, "the stream's handler to return"); err != nil {
		t.Errorf("handler = %v, want nil (its context ended)", err)
	}
	err := testwait.Recv(t, done, "the client's Stream to return after the server stopped")
	t.Logf("Stream after the server stopped: %v", err)
}

// TestClientStreamEnds: Stream returns ctx's error when ctx ends, and
// returns at once when each fails, also when each closes the client while
// the server floods it.
func TestClientStreamEnds(t *testing.T) {
	s := testServer(t, nil)
	s.HandleStream("flood", func(ctx context.Context, params json.RawMessage, send func(any) error) error {
		for n := 0; ; n++ {
			if err := send(event{N: n}); err != nil {
				return err
			}
		}
	})
	path := serve(t, s)

	ctx, cancel := context.WithCancel(testwait.Context(t))
	c := dialClient(t, path)
	err := c.Stream(ctx, "flood", nil, func(json.RawMessage) error { cancel(); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Stream with ctx cancelled = %v, want context.Canceled", err)
	}

	c2 := dialClient(t, path)
	stopErr := errors.New("enough")
	seen := 0
	err = c2.Stream(testwait.Context(t), "flood", nil, func(json.RawMessage) error {
		seen++
		if seen == 3 {
			c2.Close() // the reader may be waiting for this goroutine
			return stopErr
		}
		return nil
	})
	if !errors.Is(err, stopErr) {
		t.Errorf("Stream whose each failed = %v, want each's error", err)
	}
}

// levelWatch is a slog handler that reports each record's level and
// message.
type levelWatch struct{ recs chan slog.Record }

func (w levelWatch) Enabled(context.Context, slog.Level) bool { return true }
func (w levelWatch) Handle(_ context.Context, r slog.Record) error {
	select {
	case w.recs <- r:
	default:
	}
	return nil
}
func (w levelWatch) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w levelWatch) WithGroup(string) slog.Handler      { return w }

// TestStreamClientGoneIsQuiet: a client that goes away while its stream
// runs (`yazsesd ctl watch` ended with Ctrl-C, a status bar restarted) is a
// normal end: the stream's last answer cannot be written (broken pipe), and
// the server says so below INFO. (Every watch that ended logged an INFO
// "broken pipe".)
func TestStreamClientGoneIsQuiet(t *testing.T) {
	s, _, started, ended := streamServer(t)
	watch := levelWatch{recs: make(chan slog.Record, 100)}
	s.logger = slog.New(watch)
	c := dialRaw(t, serve(t, s))
	c.send(`{"jsonrpc":"2.0","id":1,"method":"watch"}`)
	wait(t, started, "the stream")
	c.wantEvent(0)
	c.conn.Close()
	if err := testwait.Recv(t, ended, "the stream to end once its client closed"); err != nil {
		t.Errorf("stream handler = %v, want nil", err)
	}
	for {
		r := testwait.Recv(t, watch.recs, "the server's record of the connection's end")
		if !strings.Contains(r.Message, "connection") {
			continue
		}
		if r.Level >= slog.LevelInfo {
			t.Errorf("a client gone is logged at %s: %q", r.Level, r.Message)
		}
		return
	}
}
