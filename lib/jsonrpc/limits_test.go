package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
)

// logRecords is a slog handler that keeps every record with its attributes.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecords) WithGroup(string) slog.Handler      { return l }

// matching returns the records whose message contains substr, and the sum
// of their "count" attributes (a record without one counts 1).
func (l *logRecords) matching(substr string) (lines int, total int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.recs {
		if !strings.Contains(r.Message, substr) {
			continue
		}
		lines++
		n := int64(1)
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "count" {
				n = a.Value.Int64()
			}
			return true
		})
		total += n
	}
	return lines, total
}

// serveStoppable is serve with an explicit stop, which waits for Serve to
// return (so that everything the server logs at its end is logged).
func serveStoppable(t *testing.T, s *Server) (path string, stop func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := testwait.Recv(t, done, "Serve to return after its cancel"); err != nil {
				t.Errorf("Serve = %v, want nil", err)
			}
		})
	}
	t.Cleanup(stop)
	return path, stop
}

// waitClosed reads c until the server closes it, within limit (an error
// after it). It returns the responses that came before the end.
func (c *rawConn) waitClosed(limit time.Duration) ([]*Response, error) {
	c.t.Helper()
	var got []*Response
	c.conn.SetReadDeadline(time.Now().Add(limit))
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return got, err
			}
			return got, nil // closed by the server
		}
		var resp Response
		if err := json.Unmarshal(line, &resp); err != nil {
			return got, err
		}
		got = append(got, &resp)
	}
}

// TestIdleConnectionClosed: a connection that never sends anything is
// closed once IdleTimeout has passed.
func TestIdleConnectionClosed(t *testing.T) {
	s := testServer(t, nil)
	s.IdleTimeout = 200 * time.Millisecond
	c := dialRaw(t, serve(t, s))
	got, err := c.waitClosed(testwait.Hang)
	if err != nil {
		t.Fatalf("waiting for the idle connection to be closed (IdleTimeout %v): %v", s.IdleTimeout, err)
	}
	if len(got) != 0 {
		t.Errorf("idle connection got %d responses before its end, want none", len(got))
	}
}

// TestIdleDoesNotCutRunningRequest: a request that runs longer than
// IdleTimeout (ask_human waits for a person) keeps its connection; once it
// has answered, the connection is idle and is closed in its turn.
func TestIdleDoesNotCutRunningRequest(t *testing.T) {
	s := testServer(t, nil)
	s.IdleTimeout = 100 * time.Millisecond
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	s.Handle("slow", func(ctx context.Context, params json.RawMessage) (any, error) {
		started <- struct{}{}
		select {
		case <-release:
			return "slow done", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	path := serve(t, s)
	busy := dialRaw(t, path)
	busy.send(`{"jsonrpc":"2.0","id":1,"method":"slow"}`)
	wait(t, started, "the slow handler")
	// Two idle connections opened after the request started are closed one
	// after the other: by then the request has run for two idle periods.
	for i := range 2 {
		if _, err := dialRaw(t, path).waitClosed(testwait.Hang); err != nil {
			t.Fatalf("idle connection %d not closed: %v", i, err)
		}
	}
	close(release)
	resp, err := busy.recv(testwait.Hang)
	if err != nil || string(resp.Result) != `"slow done"` {
		t.Fatalf("slow request after %d idle periods = %+v, %v; want its result", 2, resp, err)
	}
	if _, err := busy.waitClosed(testwait.Hang); err != nil {
		t.Errorf("connection not closed once idle after its request: %v", err)
	}
}

// TestSlowloris: a client that sends a line one byte at a time, each byte
// well within IdleTimeout, is closed once LineTimeout has passed since the
// line began, before the line is complete, and the request never runs.
func TestSlowloris(t *testing.T) {
	var count atomic.Int64
	s := testServer(t, &count)
	s.IdleTimeout = time.Second
	s.LineTimeout = 300 * time.Millisecond
	c := dialRaw(t, serve(t, s))
	// The line is long enough that sending it whole at this pace takes
	// longer than testwait.Hang: only LineTimeout can end it in time,
	// however slow the machine.
	const pace = 50 * time.Millisecond
	pad := int(testwait.Hang/pace) + 1
	line := `{"jsonrpc":"2.0","id":1,"method":"count","params":{"pad":"` + strings.Repeat("x", pad) + `"}}` + "\n"
	closed := make(chan struct{})
	var written atomic.Int64
	go func() {
		for i := range len(line) {
			if _, err := c.conn.Write([]byte{line[i]}); err != nil {
				return
			}
			written.Add(1)
			// The pause is what is under test (a client slow on purpose,
			// each byte within IdleTimeout): no event stands for it.
			select {
			case <-closed:
				return
			case <-time.After(pace):
			}
		}
	}()
	got, err := c.waitClosed(testwait.Hang)
	close(closed)
	if err != nil {
		t.Fatalf("slow client not closed: %v", err)
	}
	if n := written.Load(); n >= int64(len(line)) {
		t.Errorf("the server read the whole line (%d bytes) before closing", n)
	}
	if n := count.Load(); n != 0 {
		t.Errorf("the half-sent request ran %d times", n)
	}
	for _, r := range got {
		if r.Error == nil || r.Error.Code != InvalidRequest {
			t.Errorf("slow client got %+v, want at most an InvalidRequest notice", r)
		}
	}
}

// TestFullServerRefusesNewcomer: when every slot is taken by connections
// that have nothing in flight, a new connection is told ServerBusy and
// closed (no connection is closed to make room: yazsesd's press and
// release have a socket of their own), and the ones already served are
// still served.
func TestFullServerRefusesNewcomer(t *testing.T) {
	s := testServer(t, nil)
	s.MaxConns = 4
	path := serve(t, s)
	var idle []*rawConn
	for i := range 4 {
		c := dialRaw(t, path)
		c.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		if resp, err := c.recv(testwait.Hang); err != nil || string(resp.Result) != `"pong"` {
			t.Fatalf("connection %d: %+v, %v; want pong", i, resp, err)
		}
		idle = append(idle, c)
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	cl := NewClient(conn)
	defer cl.Close()
	var rpcErr *Error
	if err := cl.Call(testwait.Context(t), "ping", nil, nil); !errors.As(err, &rpcErr) || rpcErr.Code != ServerBusy {
		t.Errorf("ping with every slot taken by idle connections = %v; want ServerBusy (%d)", err, ServerBusy)
	}
	for i, c := range idle {
		c.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
		if resp, err := c.recv(testwait.Hang); err != nil || string(resp.Result) != `"pong"` {
			t.Errorf("idle connection %d after the refusal: %+v, %v; want pong", i, resp, err)
		}
	}
}

// TestRefusalLogRateLimited: many refused connections make one log line
// per LogEvery, with their count, not one line each.
func TestRefusalLogRateLimited(t *testing.T) {
	logs := &logRecords{}
	s, started, _ := blockServer(t)
	s.logger = slog.New(logs)
	s.MaxConns = 1
	s.LogEvery = time.Hour
	path, stop := serveStoppable(t, s)
	dialRaw(t, path).send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
	wait(t, started, "the blocking request")
	const n = 50
	for i := range n {
		c := dialRaw(t, path)
		resp, err := c.recv(testwait.Hang)
		if err != nil || resp.Error == nil || resp.Error.Code != ServerBusy {
			t.Fatalf("connection %d: %+v, %v; want ServerBusy", i, resp, err)
		}
		c.conn.Close()
	}
	stop()
	lines, total := logs.matching("refused")
	if lines > 2 || total != n {
		t.Errorf("refusal log: %d lines counting %d; want at most 2 lines counting %d", lines, total, n)
	}
}

// TestLineTimeoutPerLine: LineTimeout bounds each line, not the
// connection: lines written whole, spaced so that together they take
// several LineTimeouts, are all served.
func TestLineTimeoutPerLine(t *testing.T) {
	s := testServer(t, nil)
	s.LineTimeout = 300 * time.Millisecond
	s.IdleTimeout = time.Second
	c := dialRaw(t, serve(t, s))
	for i := range 10 {
		c.send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":["` + strings.Repeat("z", 64<<10) + `"]}`)
		resp, err := c.recv(testwait.Hang)
		if err != nil || resp.Error != nil {
			t.Fatalf("line %d: %+v, %v", i, resp, err)
		}
		// Time passing between whole lines is what is under test (10
		// lines span several LineTimeouts): there is no event to wait for.
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLineClockPausedWhileServerWaits: while the in-flight cap stops the
// server from reading, a line it had begun to read is not the client's
// delay: its clock starts again when reading resumes.
func TestLineClockPausedWhileServerWaits(t *testing.T) {
	s, started, _ := blockServer(t)
	s.MaxInFlight = 1
	s.LineTimeout = 300 * time.Millisecond
	s.IdleTimeout = 300 * time.Millisecond
	release := make(chan struct{})
	s.Handle("hold", func(ctx context.Context, params json.RawMessage) (any, error) {
		started <- struct{}{}
		select {
		case <-release:
			return "held", nil
		case <-ctx.Done(): // the test failed before it let go
			return nil, ctx.Err()
		}
	})
	path := serve(t, s)
	c := dialRaw(t, path)
	// One write: a call that holds the only in-flight place, a second
	// call that must wait for it, and the first half of a third.
	io.WriteString(c.conn, `{"jsonrpc":"2.0","id":1,"method":"hold"}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n"+`{"jsonrpc":"2.0",`)
	wait(t, started, "the holding request")
	// An idle connection closed after the hold began: more than
	// LineTimeout has passed since the half line was read.
	if _, err := dialRaw(t, path).waitClosed(testwait.Hang); err != nil {
		t.Fatal(err)
	}
	if _, err := dialRaw(t, path).waitClosed(testwait.Hang); err != nil {
		t.Fatal(err)
	}
	close(release)
	io.WriteString(c.conn, `"id":3,"method":"ping"}`+"\n")
	ids := map[string]bool{}
	for range 3 {
		resp, err := c.recv(testwait.Hang)
		if err != nil {
			t.Fatalf("after %v: %v", ids, err)
		}
		if resp.Error != nil {
			t.Fatalf("response %s: error %+v", resp.ID, resp.Error)
		}
		ids[string(resp.ID)] = true
	}
}

// readAfterWrite is a connection whose reads wait until its first write
// has returned: the client's reader cannot see what the server said
// before the request was written.
type readAfterWrite struct {
	net.Conn
	wrote chan struct{}
	once  sync.Once
}

func (c *readAfterWrite) Read(p []byte) (int, error) {
	<-c.wrote
	return c.Conn.Read(p)
}

func (c *readAfterWrite) Write(p []byte) (int, error) {
	defer c.once.Do(func() { close(c.wrote) })
	return c.Conn.Write(p)
}

// TestRefusedCallSaysServerBusy: a Call whose request meets a connection
// the server already refused and closed (the write fails, EPIPE) says what
// the server said, server busy, not the write's error (`ctl last` on a
// full socket used to say "broken pipe").
func TestRefusedCallSaysServerBusy(t *testing.T) {
	client, server := socketPair(t)
	refuse(server) // the notice, then the close
	c := NewClient(&readAfterWrite{Conn: client, wrote: make(chan struct{})})
	defer c.Close()
	var rpcErr *Error
	if err := c.Call(testwait.Context(t), "ping", nil, nil); !errors.As(err, &rpcErr) || rpcErr.Code != ServerBusy {
		t.Errorf("call on a refused connection = %v; want server busy (%d)", err, ServerBusy)
	}
}

// closeBeforeWrite is a connection whose first write waits until the
// client has closed it, and whose reads wait until that write has begun:
// the client's reader sees the server's refusal and the end, and closes
// the connection, while a call is between its checks and its write.
type closeBeforeWrite struct {
	net.Conn
	writing, closed chan struct{}
	w, c            sync.Once
}

func (c *closeBeforeWrite) Read(p []byte) (int, error) {
	<-c.writing
	return c.Conn.Read(p)
}

func (c *closeBeforeWrite) Write(p []byte) (int, error) {
	c.w.Do(func() { close(c.writing) })
	<-c.closed
	return c.Conn.Write(p)
}

func (c *closeBeforeWrite) Close() error {
	err := c.Conn.Close()
	c.c.Do(func() { close(c.closed) })
	return err
}

// TestRefusedCallClosedUnderIt: the same refusal, when the client's reader
// has already closed the connection under the call's write (the write
// fails with "use of closed network connection"), still says server busy.
// CI saw this order once in TestFullServerRefusesNewcomer.
func TestRefusedCallClosedUnderIt(t *testing.T) {
	client, server := socketPair(t)
	refuse(server)
	c := NewClient(&closeBeforeWrite{Conn: client, writing: make(chan struct{}), closed: make(chan struct{})})
	defer c.Close()
	var rpcErr *Error
	if err := c.Call(testwait.Context(t), "ping", nil, nil); !errors.As(err, &rpcErr) || rpcErr.Code != ServerBusy {
		t.Errorf("call on a connection closed by its reader = %v; want server busy (%d)", err, ServerBusy)
	}
}
