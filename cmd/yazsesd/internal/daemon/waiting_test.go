package daemon

import (
	"context"
	"sync"
	"testing"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/safesocket"
)

// TestWaitingQuestionsCountedOnce: questions that wait for a hold to end
// are counted in one place, which watch streams and status reads: at each
// step (none, one, two waiting, the hold ended) status says what the
// latest watch event says, and the count goes back to 0 once the hold
// has ended.
func TestWaitingQuestionsCountedOnce(t *testing.T) {
	cfg := holdConfig()
	cfg.MCP.AskHuman = true
	run := startDaemon(t, cfg)
	ctx := testwait.Context(t)
	dial := func() *daemonapi.Client {
		conn, err := safesocket.Dial(ctx, run)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		c := daemonapi.NewClient(conn)
		t.Cleanup(func() { c.Close() })
		return c
	}
	main := dial()

	// The watch stream, its events in order.
	events := make(chan daemonapi.WatchEvent, 64)
	watchCtx, stopWatch := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	watcher := dial()
	go func() {
		defer wg.Done()
		watcher.Watch(watchCtx, func(ev daemonapi.WatchEvent) error {
			select {
			case events <- ev:
				return nil
			case <-watchCtx.Done():
				return watchCtx.Err()
			}
		})
	}()
	defer func() { stopWatch(); testwait.Group(t, &wg, "the watch stream and the questions to end") }()
	// until reads the stream until an event has waiting questions, and
	// checks that status counts as many then.
	until := func(waiting int, what string) {
		t.Helper()
		for {
			ev := testwait.Recv(t, events, what)
			if ev.Waiting != waiting {
				continue
			}
			st, err := main.Status(ctx)
			if err != nil {
				t.Fatalf("status: %v", err)
			}
			if st.Waiting != waiting {
				t.Errorf("%s: watch says %d questions wait, status %d", what, ev.Waiting, st.Waiting)
			}
			return
		}
	}
	until(0, "the first watch event")

	if h, err := main.Hold(ctx, daemonapi.MethodHoldStart); err != nil || h.Hold != daemonapi.HoldHolding {
		t.Fatalf("hold.start = %+v, %v; want holding", h, err)
	}
	askCtx, stopAsks := context.WithCancel(ctx)
	defer stopAsks()
	for i := range 2 {
		c := dial()
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.AskHuman(askCtx, daemonapi.AskParams{Question: "Which one?", TimeoutS: 60})
		}()
		until(i+1, "a question waiting for the hold")
	}
	if h, err := main.Hold(ctx, daemonapi.MethodHoldCancel); err != nil || h.Hold != daemonapi.HoldIdle {
		t.Fatalf("hold.cancel = %+v, %v; want idle", h, err)
	}
	until(0, "the questions to stop waiting once the hold ended")
	stopAsks()
}
