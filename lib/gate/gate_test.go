package gate

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
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
	return func() { <-done }
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
	ctx := context.Background()

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
	for range 50 {
		wg.Go(func() {
			_, err := c.Reserve(context.Background())
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
	wg.Wait()
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
			var ctx context.Context
			var cancel context.CancelFunc
			if mode == "deadline" {
				ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
			} else {
				ctx, cancel = context.WithCancel(context.Background())
				time.AfterFunc(50*time.Millisecond, cancel)
			}
			defer cancel()
			start := time.Now()
			_, err := c.Reserve(ctx)
			wantErr := context.DeadlineExceeded
			if mode == "cancel" {
				wantErr = context.Canceled
			}
			if !errors.Is(err, wantErr) {
				t.Fatalf("Reserve() error = %v, want %v", err, wantErr)
			}
			if el := time.Since(start); el > 2*time.Second {
				t.Errorf("Reserve() took %v to give up", el)
			}
			close(release)
			tok, err := c.Reserve(context.Background())
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
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Reserve(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Reserve(cancelled) = %v, want Canceled", err)
	}
	if _, err := c.Reserve(context.Background()); err != nil {
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
			if _, err := c.Reserve(context.Background()); !errors.Is(err, ErrBroken) {
				t.Fatalf("Reserve() = %v, want %v", err, ErrBroken)
			}
			if _, err := c.Status(context.Background()); !errors.Is(err, ErrBroken) {
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
	ctx := context.Background()
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
		if got := <-lines; got != w {
			t.Errorf("request %d = %s, want %s", i, got, w)
		}
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
