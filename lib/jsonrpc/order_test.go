package jsonrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
)

// toggleServer has a "toggle" method shaped like yazsesd's hold.toggle: it
// looks at the state, takes a while to act on it (a microphone opens, a
// hold is decoded), then sets the other state and returns it. Two toggles
// that run at once both see the same state.
func toggleServer(t *testing.T) *Server {
	t.Helper()
	s := testServer(t, nil)
	var mu sync.Mutex
	holding := false
	s.Handle("toggle", func(ctx context.Context, params json.RawMessage) (any, error) {
		mu.Lock()
		was := holding
		mu.Unlock()
		// The work between looking and acting: the window in which a toggle
		// run at once with this one would see the same state. It is what
		// the tests below look through, not a wait for anything.
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		holding = !was
		if holding {
			return "holding", nil
		}
		return "idle", nil
	})
	return s
}

// TestPipelinedRequestsInOrder: five toggles in one write are applied one
// after the other in the order they were sent, and answered in that order
// (they used to run at once: holding ×3, idle ×2).
func TestPipelinedRequestsInOrder(t *testing.T) {
	c := dialRaw(t, serve(t, toggleServer(t)))
	var b strings.Builder
	for id := 1; id <= 5; id++ {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"toggle"}`+"\n", id)
	}
	c.conn.SetWriteDeadline(time.Now().Add(testwait.Hang))
	if _, err := io.WriteString(c.conn, b.String()); err != nil {
		t.Fatal(err)
	}
	want := []string{"holding", "idle", "holding", "idle", "holding"}
	var got []string
	for i := range want {
		resp, err := c.recv(testwait.Hang)
		if err != nil {
			t.Fatalf("answer %d of 5 (after %q): %v", i+1, got, err)
		}
		var state string
		if resp.Error != nil || json.Unmarshal(resp.Result, &state) != nil {
			t.Fatalf("answer %d: %+v", i+1, resp)
		}
		got = append(got, fmt.Sprintf("%s:%s", resp.ID, state))
	}
	for i, w := range want {
		if got[i] != fmt.Sprintf("%d:%s", i+1, w) {
			t.Fatalf("answers %q, want ids 1-5 in order with %q", got, want)
		}
	}
}

// TestConcurrentMethodDoesNotBlock: a long-running call (HandleConcurrent)
// does not hold up the ordered calls read after it on its connection, and
// a stream does not either.
func TestConcurrentMethodDoesNotBlock(t *testing.T) {
	s := toggleServer(t)
	release := make(chan struct{})
	s.HandleConcurrent("ask", func(ctx context.Context, params json.RawMessage) (any, error) {
		select {
		case <-release:
			return "answered", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	s.HandleStream("watch", func(ctx context.Context, params json.RawMessage, send func(any) error) error {
		<-ctx.Done()
		return nil
	})
	c := dialRaw(t, serve(t, s))
	c.send(`{"jsonrpc":"2.0","id":1,"method":"ask"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"watch"}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"toggle"}` + "\n" +
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	for _, want := range []string{"3", "4"} {
		resp, err := c.recv(testwait.Hang)
		if err != nil {
			t.Fatalf("waiting for the answer to id %s while a long call and a stream run: %v", want, err)
		}
		if string(resp.ID) != want {
			t.Fatalf("answer id %s, want %s", resp.ID, want)
		}
	}
	close(release)
	resp, err := c.recv(testwait.Hang)
	if err != nil || string(resp.ID) != "1" || string(resp.Result) != `"answered"` {
		t.Fatalf("the long call's answer = %+v, %v", resp, err)
	}
}

// TestOrderedAfterFailure: an ordered call that fails (an error, a method
// that is not there, a panic) still lets the next one run.
func TestOrderedAfterFailure(t *testing.T) {
	s := toggleServer(t)
	s.Handle("boom", func(ctx context.Context, params json.RawMessage) (any, error) { panic("boom") })
	c := dialRaw(t, serve(t, s))
	c.send(`{"jsonrpc":"2.0","id":1,"method":"boom"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"nope"}` + "\n" +
		`{"jsonrpc":"2.0","method":"toggle"}` + "\n" +
		`{"jsonrpc":"2.0","id":4,"method":"toggle"}`)
	for _, want := range []string{`1 error`, `2 error`, `4 "idle"`} {
		resp, err := c.recv(testwait.Hang)
		if err != nil {
			t.Fatalf("waiting for %s: %v", want, err)
		}
		got := string(resp.ID) + " " + string(resp.Result)
		if resp.Error != nil {
			got = string(resp.ID) + " error"
		}
		if got != want {
			t.Fatalf("answer %q, want %q", got, want)
		}
	}
}
