package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/internal/testwait"
)

func TestReplyWire(t *testing.T) {
	tests := []struct {
		name string
		r    Reply
		want string
	}{
		{"granted", Reply{OK: true, Token: "T"}, `{"ok":true,"token":"T"}`},
		{"done", Reply{OK: true}, `{"ok":true}`},
		{"status", Reply{OK: true, Status: &Status{PerHour: 3, Used: 0, NextFreeS: 0}}, `{"ok":true,"per_hour":3,"used":0,"next_free_s":0}`},
		{"exhausted", Reply{Reason: ReasonBudgetExhausted, RetryAfterS: 42}, `{"ok":false,"reason":"budget_exhausted","retry_after_s":42}`},
		{"disabled", Reply{Reason: ReasonDisabled}, `{"ok":false,"reason":"disabled","retry_after_s":0}`},
		{"with id", Reply{OK: true, ID: 7}, `{"ok":true,"id":7}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.r)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("Marshal = %s, want %s", b, tt.want)
			}
			var back Reply
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.r, back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSeconds(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want int
	}{
		{-time.Second, 0}, {0, 0}, {time.Nanosecond, 1}, {time.Second, 1},
		{time.Second + time.Millisecond, 2}, {time.Hour, 3600},
	}
	for _, tt := range tests {
		if got := Seconds(tt.d); got != tt.want {
			t.Errorf("Seconds(%v) = %d, want %d", tt.d, got, tt.want)
		}
	}
}

func TestParseRequest(t *testing.T) {
	tests := []struct {
		line string
		want Request
		ok   bool
	}{
		{`{"op":"reserve"}`, Request{Op: OpReserve}, true},
		{`{"op":"status","id":3}`, Request{Op: OpStatus, ID: 3}, true},
		{`{"op":"commit","token":"abc"}`, Request{Op: OpCommit, Token: "abc"}, true},
		{` {"op":"release","token":"abc"} `, Request{Op: OpRelease, Token: "abc"}, true},
		{`{"op":"commit"}`, Request{}, false},
		{`{"op":"release","token":""}`, Request{}, false},
		{`{"op":"reserve","token":"abc"}`, Request{}, false},
		{`{"op":"grant"}`, Request{}, false},
		{`{"op":"reserve","slots":5}`, Request{}, false},
		{`{"op":"reserve"}{"op":"reserve"}`, Request{}, false},
		{`{"op":"reserve"`, Request{}, false},
		{`{"op":"reserve","id":-1}`, Request{}, false},
		{`null`, Request{}, false},
		{`[]`, Request{}, false},
		{`"reserve"`, Request{}, false},
		{"\xff\xfe", Request{}, false},
		{``, Request{}, false},
	}
	for _, tt := range tests {
		got, err := ParseRequest([]byte(tt.line))
		if (err == nil) != tt.ok {
			t.Errorf("ParseRequest(%q) error = %v, want ok=%v", tt.line, err, tt.ok)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseRequest(%q) = %+v, want %+v", tt.line, got, tt.want)
		}
	}
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", MaxLine+10)
	in := "a\r\n\n" + long + "\nb\n" + strings.Repeat("y", MaxLine-1) + "\ntail"
	l := NewLineReader(strings.NewReader(in))
	type res struct {
		line string
		err  error
	}
	want := []res{{"a", nil}, {"", nil}, {"", ErrLineTooLong}, {"b", nil}, {strings.Repeat("y", MaxLine-1), nil}, {"", io.EOF}}
	for i, w := range want {
		b, err := l.ReadLine()
		if string(b) != w.line || !errors.Is(err, w.err) {
			t.Fatalf("ReadLine #%d = %.20q, %v; want %.20q, %v", i, b, err, w.line, w.err)
		}
	}
}

// flakyReader fails once in the middle of a line, like a read deadline.
type flakyReader struct {
	parts []string
}

var errFlaky = errors.New("deadline")

func (r *flakyReader) Read(p []byte) (int, error) {
	if len(r.parts) == 0 {
		return 0, io.EOF
	}
	s := r.parts[0]
	r.parts = r.parts[1:]
	if s == "" {
		return 0, errFlaky
	}
	return copy(p, s), nil
}

func TestLineReaderKeepsPartialLine(t *testing.T) {
	l := NewLineReader(&flakyReader{parts: []string{`{"ok":tr`, "", "ue}\n"}})
	if _, err := l.ReadLine(); !errors.Is(err, errFlaky) {
		t.Fatalf("first ReadLine error = %v, want %v", err, errFlaky)
	}
	b, err := l.ReadLine()
	if err != nil || string(b) != `{"ok":true}` {
		t.Fatalf("ReadLine after the error = %q, %v; want the whole line", b, err)
	}
}

// socketpair returns both ends of an AF_UNIX stream socketpair as net.Conns,
// the way yazsesd and yaz-gate hold them.
func socketpair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]net.Conn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
		t.Cleanup(func() { c.Close() })
	}
	return conns[0], conns[1]
}

// fakeGate answers requests with handle, echoing ids, until EOF. Returns
// when the server goroutine is done.
func fakeGate(t *testing.T, conn net.Conn, handle func(Request) Reply) (wait func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		l := NewLineReader(conn)
		for {
			b, err := l.ReadLine()
			if err != nil {
				return
			}
			req, err := ParseRequest(b)
			var r Reply
			if err != nil {
				r = Reply{Reason: ReasonBadRequest}
			} else {
				r = handle(req)
				r.ID = req.ID
			}
			out, _ := json.Marshal(r)
			if _, err := conn.Write(append(out, '\n')); err != nil {
				return
			}
		}
	}()
	return func() { testwait.Closed(t, done, "the fake gate to end") }
}

// counter is a trivial budget of n slots for the fake gate.
type counter struct {
	mu     sync.Mutex
	left   int
	tokens map[string]bool
	n      int
}

func (c *counter) handle(req Request) Reply {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch req.Op {
	case OpReserve:
		if c.left == 0 {
			return Reply{Reason: ReasonBudgetExhausted, RetryAfterS: 60}
		}
		c.left--
		c.n++
		tok := "tok" + strings.Repeat("x", c.n)
		c.tokens[tok] = true
		return Reply{OK: true, Token: tok}
	case OpCommit, OpRelease:
		if !c.tokens[req.Token] {
			return Reply{Reason: ReasonUnknownToken}
		}
		delete(c.tokens, req.Token)
		return Reply{OK: true}
	default:
		return Reply{OK: true, Status: &Status{PerHour: 3, Used: c.n, NextFreeS: 60}}
	}
}

func TestClient(t *testing.T) {
	cc, sc := socketpair(t)
	wait := fakeGate(t, sc, (&counter{left: 1, tokens: map[string]bool{}}).handle)
	c := NewClient(cc)
	ctx := testwait.Context(t)

	tok, err := c.Reserve(ctx)
	if err != nil || tok == "" {
		t.Fatalf("Reserve() = %q, %v; want a token", tok, err)
	}
	_, err = c.Reserve(ctx)
	var ref *Refused
	if !errors.As(err, &ref) || ref.Reason != ReasonBudgetExhausted || ref.RetryAfter != time.Minute {
		t.Fatalf("second Reserve() error = %v, want budget_exhausted retry 1m", err)
	}
	if err := c.Commit(ctx, tok); err != nil {
		t.Fatalf("Commit() = %v", err)
	}
	if err := c.Release(ctx, tok); !errors.As(err, &ref) || ref.Reason != ReasonUnknownToken {
		t.Fatalf("Release(committed) = %v, want unknown_token", err)
	}
	st, err := c.Status(ctx)
	if want := (Status{PerHour: 3, Used: 1, NextFreeS: 60}); err != nil || st != want {
		t.Fatalf("Status() = %+v, %v; want %+v", st, err, want)
	}
	if st.NextFree() != time.Minute {
		t.Errorf("NextFree() = %v, want 1m", st.NextFree())
	}
	c.Close()
	wait()
}

// TestClientConcurrent: 50 goroutines through one Client against 3 slots.
func TestClientConcurrent(t *testing.T) {
	cc, sc := socketpair(t)
	fakeGate(t, sc, (&counter{left: 3, tokens: map[string]bool{}}).handle)
	c := NewClient(cc)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var granted, refused int
	ctx := testwait.Context(t)
	for range 50 {
		wg.Go(func() {
			_, err := c.Reserve(ctx)
			mu.Lock()
			defer mu.Unlock()
			var ref *Refused
			switch {
			case err == nil:
				granted++
			case errors.As(err, &ref):
				refused++
			default:
				t.Errorf("Reserve() = %v", err)
			}
		})
	}
	testwait.Group(t, &wg, "the 50 reserves")
	if granted != 3 || refused != 47 {
		t.Errorf("granted %d, refused %d; want 3, 47", granted, refused)
	}
}

// TestClientDeadline: a gate that answers late makes the call fail with the
// context's error; the late reply is skipped and the next call gets its own.
func TestClientDeadline(t *testing.T) {
	for _, mode := range []string{"deadline", "cancel"} {
		t.Run(mode, func(t *testing.T) {
			cc, sc := socketpair(t)
			release := make(chan struct{})
			first := true
			fakeGate(t, sc, func(req Request) Reply {
				if first {
					first = false
					<-release
					return Reply{OK: true, Token: "late"}
				}
				return Reply{OK: true, Token: "fresh"}
			})
			c := NewClient(cc)
			// bound only guards the test: the call must give up at its own
			// context's end, which comes long before.
			bound := testwait.Context(t)
			var ctx context.Context
			var cancel context.CancelFunc
			if mode == "deadline" {
				ctx, cancel = context.WithTimeout(bound, 50*time.Millisecond)
			} else {
				ctx, cancel = context.WithCancel(bound)
				time.AfterFunc(50*time.Millisecond, cancel)
			}
			defer cancel()
			_, err := c.Reserve(ctx)
			wantErr := context.DeadlineExceeded
			if mode == "cancel" {
				wantErr = context.Canceled
			}
			if !errors.Is(err, wantErr) {
				t.Fatalf("Reserve() error = %v, want %v", err, wantErr)
			}
			if bound.Err() != nil {
				t.Errorf("Reserve() gave up only at the test's bound (%v), not at its own context's end", testwait.Hang)
			}
			close(release)
			tok, err := c.Reserve(testwait.Context(t))
			if err != nil || tok != "fresh" {
				t.Fatalf("Reserve() after the abandoned one = %q, %v; want fresh", tok, err)
			}
		})
	}
}

func TestClientCancelledBeforeSend(t *testing.T) {
	cc, sc := socketpair(t)
	var calls int
	var mu sync.Mutex
	fakeGate(t, sc, func(Request) Reply { mu.Lock(); calls++; mu.Unlock(); return Reply{OK: true, Token: "t"} })
	c := NewClient(cc)
	ctx, cancel := context.WithCancel(testwait.Context(t))
	cancel()
	if _, err := c.Reserve(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Reserve(cancelled) = %v, want Canceled", err)
	}
	if _, err := c.Reserve(testwait.Context(t)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Errorf("gate saw %d requests, want 1 (the cancelled reserve must not be sent)", calls)
	}
}

func TestClientBroken(t *testing.T) {
	tests := []struct {
		name  string
		serve func(conn net.Conn)
	}{
		{"garbage", func(conn net.Conn) {
			NewLineReader(conn).ReadLine()
			conn.Write([]byte("not json\n"))
		}},
		{"wrong id", func(conn net.Conn) {
			NewLineReader(conn).ReadLine()
			conn.Write([]byte(`{"ok":true,"token":"t","id":99}` + "\n"))
		}},
		{"no token", func(conn net.Conn) {
			NewLineReader(conn).ReadLine()
			conn.Write([]byte(`{"ok":true,"id":1}` + "\n"))
		}},
		{"gone", func(conn net.Conn) {
			NewLineReader(conn).ReadLine()
			conn.Close()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc, sc := socketpair(t)
			go tt.serve(sc)
			c := NewClient(cc)
			if _, err := c.Reserve(testwait.Context(t)); !errors.Is(err, ErrBroken) {
				t.Fatalf("Reserve() = %v, want %v", err, ErrBroken)
			}
			if _, err := c.Status(testwait.Context(t)); !errors.Is(err, ErrBroken) {
				t.Fatalf("Status() after a break = %v, want %v", err, ErrBroken)
			}
		})
	}
}

// TestRequestWire: the client's requests are exactly the contract's lines.
func TestRequestWire(t *testing.T) {
	cc, sc := socketpair(t)
	c := NewClient(cc)
	lines := make(chan string, 4)
	go func() {
		l := NewLineReader(sc)
		for {
			b, err := l.ReadLine()
			if err != nil {
				return
			}
			lines <- string(b)
			req, _ := ParseRequest(b)
			out, _ := json.Marshal(Reply{OK: true, Token: "t", Status: &Status{}, ID: req.ID})
			sc.Write(append(out, '\n'))
		}
	}()
	ctx := testwait.Context(t)
	c.Reserve(ctx)
	c.Commit(ctx, "t1")
	c.Release(ctx, "t2")
	c.Status(ctx)
	want := []string{
		`{"op":"reserve","id":1}`,
		`{"op":"commit","token":"t1","id":2}`,
		`{"op":"release","token":"t2","id":3}`,
		`{"op":"status","id":4}`,
	}
	for i, w := range want {
		if got := testwait.Recv(t, lines, fmt.Sprintf("request %d on the wire", i)); got != w {
			t.Errorf("request %d = %s, want %s", i, got, w)
		}
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// heldGate reads requests and answers them only when told: each request
// read is sent on got; an answer sent on answer is written as the reply to
// the oldest request not yet answered (its id filled in).
type heldGate struct {
	got    chan Request
	answer chan Reply
}

func newHeldGate(t *testing.T, conn net.Conn) *heldGate {
	t.Helper()
	g := &heldGate{got: make(chan Request, 100), answer: make(chan Reply)}
	reqs := make(chan Request, 100)
	go func() {
		l := NewLineReader(conn)
		for {
			b, err := l.ReadLine()
			if err != nil {
				close(reqs)
				return
			}
			req, err := ParseRequest(b)
			if err != nil {
				t.Errorf("bad request line %q", b)
			}
			g.got <- req
			reqs <- req
		}
	}()
	go func() {
		for r := range g.answer {
			req, ok := <-reqs
			if !ok {
				return
			}
			r.ID = req.ID
			out, _ := json.Marshal(r)
			if _, err := conn.Write(append(out, '\n')); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { close(g.answer) })
	return g
}

func (g *heldGate) next(t *testing.T) Request {
	t.Helper()
	select {
	case r := <-g.got:
		return r
	case <-time.After(testwait.Hang):
		t.Fatalf("waiting for the gate to get a request: none within %v", testwait.Hang)
		return Request{}
	}
}

type result struct {
	tok string
	err error
}

func reserveAsync(c *Client, ctx context.Context) <-chan result {
	ch := make(chan result, 1)
	go func() {
		tok, err := c.Reserve(ctx)
		ch <- result{tok, err}
	}()
	return ch
}

func wait[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	return testwait.Recv(t, ch, "the call's result")
}

// TestClientOneAtATime: a call waits while an earlier one is on the wire
// (the gate sees one request at a time), and each caller gets the reply to
// its own request.
func TestClientOneAtATime(t *testing.T) {
	cc, sc := socketpair(t)
	g := newHeldGate(t, sc)
	c := NewClient(cc)
	defer c.Close()
	const n = 5
	var results [n]<-chan result
	for i := range n {
		results[i] = reserveAsync(c, testwait.Context(t))
	}
	var seen []uint64
	for range n {
		req := g.next(t)
		seen = append(seen, req.ID)
		select {
		case extra := <-g.got:
			t.Fatalf("the gate got request %d while %d was unanswered", extra.ID, req.ID)
		default:
		}
		g.answer <- Reply{OK: true, Token: fmt.Sprintf("t%d", req.ID)}
	}
	if want := []uint64{1, 2, 3, 4, 5}; !slices.Equal(seen, want) {
		t.Errorf("the gate got requests %v, want %v", seen, want)
	}
	toks := map[string]bool{}
	for i := range n {
		r := wait(t, results[i])
		if r.err != nil || toks[r.tok] {
			t.Errorf("caller %d: Reserve() = %q, %v; want a token of its own", i, r.tok, r.err)
		}
		toks[r.tok] = true
	}
}

// TestClientCancelWhileWaiting: a call given up while an earlier one is on
// the wire returns at once and is never sent; the earlier call and a later
// one get their own replies.
func TestClientCancelWhileWaiting(t *testing.T) {
	cc, sc := socketpair(t)
	g := newHeldGate(t, sc)
	c := NewClient(cc)
	defer c.Close()
	first := reserveAsync(c, testwait.Context(t))
	g.next(t)
	ctx, cancel := context.WithCancel(testwait.Context(t))
	middle := reserveAsync(c, ctx)
	cancel()
	if r := wait(t, middle); !errors.Is(r.err, context.Canceled) || r.tok != "" {
		t.Fatalf("cancelled Reserve() = %q, %v; want Canceled", r.tok, r.err)
	}
	last := reserveAsync(c, testwait.Context(t))
	g.answer <- Reply{OK: true, Token: "first"}
	if r := wait(t, first); r.err != nil || r.tok != "first" {
		t.Errorf("first Reserve() = %q, %v; want first", r.tok, r.err)
	}
	if req := g.next(t); req.ID != 2 {
		t.Errorf("the gate's second request has id %d, want 2 (the cancelled call unsent)", req.ID)
	}
	g.answer <- Reply{OK: true, Token: "last"}
	if r := wait(t, last); r.err != nil || r.tok != "last" {
		t.Errorf("last Reserve() = %q, %v; want last", r.tok, r.err)
	}
}

// TestClientAbandonedOnTheWire: of calls given up after their request was
// written, the late replies are dropped in order and the next call gets
// its own.
func TestClientAbandonedOnTheWire(t *testing.T) {
	cc, sc := socketpair(t)
	g := newHeldGate(t, sc)
	c := NewClient(cc)
	defer c.Close()
	for range 2 {
		ctx, cancel := context.WithCancel(testwait.Context(t))
		ch := reserveAsync(c, ctx)
		g.next(t)
		cancel()
		if r := wait(t, ch); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("Reserve() = %q, %v; want Canceled", r.tok, r.err)
		}
	}
	next := reserveAsync(c, testwait.Context(t))
	g.answer <- Reply{OK: true, Token: "late1"}
	g.answer <- Reply{OK: true, Token: "late2"}
	if req := g.next(t); req.ID != 3 {
		t.Errorf("the gate's third request has id %d, want 3", req.ID)
	}
	g.answer <- Reply{OK: true, Token: "next"}
	if r := wait(t, next); r.err != nil || r.tok != "next" {
		t.Errorf("Reserve() after two late replies = %q, %v; want next", r.tok, r.err)
	}
}

// TestClientAbandonedBeforeSend: a call given up while it waits for an
// earlier call's write is never sent.
func TestClientAbandonedBeforeSend(t *testing.T) {
	cc, sc := net.Pipe() // a write waits until the other end reads
	defer sc.Close()
	c := NewClient(cc)
	defer c.Close()
	first := reserveAsync(c, testwait.Context(t))
	// The first call holds the turn once its write has begun: the first
	// byte read proves it, and the rest of the write waits for a reader,
	// so the second call below waits for the turn until its deadline.
	var firstByte [1]byte
	sc.SetDeadline(time.Now().Add(testwait.Hang)) // for every read and write of the gate's end below
	if _, err := io.ReadFull(sc, firstByte[:]); err != nil {
		t.Fatalf("waiting for the first call's write: %v", err)
	}
	ctx, cancel := context.WithTimeout(testwait.Context(t), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Reserve(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Reserve() = %v, want DeadlineExceeded", err)
	}
	third := reserveAsync(c, testwait.Context(t))
	l := NewLineReader(io.MultiReader(strings.NewReader(string(firstByte[:])), sc))
	var ids []uint64
	for range 2 {
		b, err := l.ReadLine()
		if err != nil {
			t.Fatal(err)
		}
		req, err := ParseRequest(b)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, req.ID)
		out, _ := json.Marshal(Reply{OK: true, Token: fmt.Sprint("t", req.ID), ID: req.ID})
		sc.Write(append(out, '\n'))
	}
	if want := []uint64{1, 2}; !slices.Equal(ids, want) {
		t.Errorf("the gate got requests %v, want %v (the abandoned call unsent)", ids, want)
	}
	if r := wait(t, first); r.tok != "t1" {
		t.Errorf("first Reserve() = %q, %v; want t1", r.tok, r.err)
	}
	if r := wait(t, third); r.tok != "t2" {
		t.Errorf("third Reserve() = %q, %v; want t2", r.tok, r.err)
	}
}

// TestClientManyCallers: many goroutines with mixed calls on one Client;
// each reply is the one to the caller's own request.
func TestClientManyCallers(t *testing.T) {
	cc, sc := socketpair(t)
	// The gate accepts the commit of an even token and refuses an odd one.
	fakeGate(t, sc, func(req Request) Reply {
		switch req.Op {
		case OpCommit:
			var k int
			fmt.Sscan(req.Token, &k)
			if k%2 == 0 {
				return Reply{OK: true}
			}
			return Reply{Reason: ReasonUnknownToken}
		case OpStatus:
			return Reply{OK: true, Status: &Status{Used: int(req.ID)}}
		}
		return Reply{Reason: ReasonBadRequest}
	})
	c := NewClient(cc)
	defer c.Close()
	var wg sync.WaitGroup
	ctx := testwait.Context(t)
	for i := range 2000 {
		wg.Go(func() {
			if i%3 == 0 {
				if _, err := c.Status(ctx); err != nil {
					t.Errorf("Status() = %v", err)
				}
				return
			}
			err := c.Commit(ctx, fmt.Sprint(i))
			var ref *Refused
			switch {
			case i%2 == 0 && err != nil:
				t.Errorf("Commit(%d) = %v, want ok", i, err)
			case i%2 == 1 && (!errors.As(err, &ref) || ref.Reason != ReasonUnknownToken):
				t.Errorf("Commit(%d) = %v, want unknown_token", i, err)
			}
		})
	}
	testwait.Group(t, &wg, "the 2000 calls")
}

// TestClientBrokenFailsPending: when the gate goes away with a request on
// the wire and more waiting, every pending call fails with ErrBroken, and
// so does any later call.
func TestClientBrokenFailsPending(t *testing.T) {
	cc, sc := socketpair(t)
	g := newHeldGate(t, sc)
	c := NewClient(cc)
	results := make(chan result, 5)
	for range 5 {
		go func() {
			tok, err := c.Reserve(testwait.Context(t))
			results <- result{tok, err}
		}()
	}
	g.next(t)
	g.answer <- Reply{OK: true, Token: "t0"}
	if r := wait(t, results); r.tok != "t0" {
		t.Fatalf("first Reserve() = %q, %v; want t0", r.tok, r.err)
	}
	g.next(t) // the next call is on the wire, three wait
	sc.Close()
	for i := range 4 {
		if r := wait(t, results); !errors.Is(r.err, ErrBroken) {
			t.Errorf("pending Reserve() %d = %q, %v; want ErrBroken", i+1, r.tok, r.err)
		}
	}
	if _, err := c.Status(testwait.Context(t)); !errors.Is(err, ErrBroken) {
		t.Errorf("Status() after the break = %v, want ErrBroken", err)
	}
}

// TestClientClose: Close fails the pending calls with ErrBroken and stops
// the Client's goroutines (TestMain checks for leaks).
func TestClientClose(t *testing.T) {
	cc, sc := socketpair(t)
	g := newHeldGate(t, sc)
	c := NewClient(cc)
	pending := reserveAsync(c, testwait.Context(t))
	g.next(t)
	c.Close()
	if r := wait(t, pending); !errors.Is(r.err, ErrBroken) {
		t.Errorf("pending Reserve() after Close = %v, want ErrBroken", r.err)
	}
	if _, err := c.Reserve(testwait.Context(t)); !errors.Is(err, ErrBroken) {
		t.Errorf("Reserve() after Close = %v, want ErrBroken", err)
	}
	c.Close() // twice is fine
}

// TestClientOutOfStep: a reply that answers another request than the
// oldest one on the wire, or none, breaks the Client.
func TestClientOutOfStep(t *testing.T) {
	for _, tt := range []struct{ name, reply string }{
		{"out of order", `{"ok":true,"token":"t","id":2}`},
		{"unasked", `{"ok":true,"token":"t","id":1}` + "\n" + `{"ok":true,"token":"t","id":2}`},
		{"no id", `{"ok":false,"reason":"bad_request","retry_after_s":0}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cc, sc := socketpair(t)
			c := NewClient(cc)
			defer c.Close()
			go func() {
				NewLineReader(sc).ReadLine()
				sc.Write([]byte(tt.reply + "\n"))
			}()
			tok, err := c.Reserve(testwait.Context(t))
			if tt.name == "unasked" {
				if err != nil {
					t.Fatalf("Reserve() = %v", err)
				}
				// The second reply answers nothing: the next call, which
				// reads it, finds the Client broken (the Client reads only
				// within a call, so one call is the event; no polling).
				_, err = c.Status(testwait.Context(t))
			}
			if !errors.Is(err, ErrBroken) {
				t.Fatalf("Reserve() = %q, %v; want ErrBroken", tok, err)
			}
		})
	}
}

func TestLineReaderHasLine(t *testing.T) {
	cc, sc := socketpair(t)
	l := NewLineReader(sc)
	cc.Write([]byte("a\nb\nc"))
	if b, err := l.ReadLine(); err != nil || string(b) != "a" {
		t.Fatalf("ReadLine() = %q, %v", b, err)
	}
	if !l.HasLine() {
		t.Error("HasLine() = false with \"b\\n\" buffered")
	}
	l.ReadLine()
	if l.HasLine() {
		t.Error("HasLine() = true with only \"c\" buffered")
	}
}

// TestClientWriteInterrupted: a call whose context ends while its own
// write waits (the gate is not reading) returns the context's error; the
// request was not sent, and the next call is answered as usual.
func TestClientWriteInterrupted(t *testing.T) {
	for _, mode := range []string{"deadline", "cancel"} {
		t.Run(mode, func(t *testing.T) {
			cc, sc := net.Pipe() // a write waits until the other end reads
			defer sc.Close()
			c := NewClient(cc)
			defer c.Close()
			var ctx context.Context
			var cancel context.CancelFunc
			want := context.DeadlineExceeded
			if mode == "deadline" {
				ctx, cancel = context.WithTimeout(testwait.Context(t), 30*time.Millisecond)
			} else {
				ctx, cancel = context.WithCancel(testwait.Context(t))
				time.AfterFunc(30*time.Millisecond, cancel)
				want = context.Canceled
			}
			defer cancel()
			if _, err := c.Reserve(ctx); !errors.Is(err, want) {
				t.Fatalf("Reserve() = %v, want %v", err, want)
			}
			next := reserveAsync(c, testwait.Context(t))
			sc.SetDeadline(time.Now().Add(testwait.Hang))
			b, err := NewLineReader(sc).ReadLine()
			if err != nil {
				t.Fatalf("waiting for request 2 on the wire: %v", err)
			}
			req, err := ParseRequest(b)
			if err != nil || req.ID != 2 {
				t.Fatalf("the gate got %q, want only request 2 (1 never sent)", b)
			}
			sc.Write([]byte(`{"ok":true,"token":"t2","id":2}` + "\n"))
			if r := wait(t, next); r.err != nil || r.tok != "t2" {
				t.Errorf("next Reserve() = %q, %v; want t2", r.tok, r.err)
			}
		})
	}
}
