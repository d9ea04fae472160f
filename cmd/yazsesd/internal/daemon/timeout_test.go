package daemon

import (
	"errors"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
	"github.com/yazses/yazses/lib/safesocket"
)

// TestAskTimeoutTooShort: a timeout_s too short for any answer (the label
// and a word spoken, the guard pause and the shortest answer: 3.5 s with
// the default settings) is refused as invalid params naming the minimum,
// before anything is reserved; the minimum itself is taken. (1 s was
// taken, the question spoken and charged, and the call ended no_answer.)
func TestAskTimeoutTooShort(t *testing.T) {
	cfg := holdConfig()
	cfg.MCP.AskHuman = false // a call taken is refused disabled: nothing is spoken
	run := startDaemon(t, cfg)
	ctx := testwait.Context(t)
	conn, err := safesocket.Dial(ctx, run)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c := daemonapi.NewClient(conn)
	defer c.Close()
	least := daemonapi.AskTimingOf(cfg).MinTimeoutS()
	if least != 4 {
		t.Fatalf("MinTimeoutS with the defaults = %d, want 4", least)
	}
	for _, timeoutS := range []int{1, 2, least - 1} {
		r, err := c.AskHuman(ctx, daemonapi.AskParams{Question: "Ship it?", TimeoutS: timeoutS})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.InvalidParams || !strings.Contains(rpcErr.Message, "at least 4 seconds") {
			t.Errorf("ask_human with timeout_s %d = %+v, %v; want invalid params naming 4 seconds", timeoutS, r, err)
		}
	}
	for _, timeoutS := range []int{0, least} {
		r, err := c.AskHuman(ctx, daemonapi.AskParams{Question: "Ship it?", TimeoutS: timeoutS})
		if err != nil || r.Result != daemonapi.Refused || r.Reason != daemonapi.ReasonDisabled {
			t.Errorf("ask_human with timeout_s %d = %+v, %v; want taken (refused disabled: questions are off)", timeoutS, r, err)
		}
	}
}
