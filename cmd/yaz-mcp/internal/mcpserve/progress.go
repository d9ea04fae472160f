package mcpserve

import (
	"context"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// progress sends notifications/progress for one call, if the client gave a
// progress token; otherwise it does nothing. Values only ever rise, as the
// specification requires. Messages are fixed words, never content.
type progress struct {
	ctx   context.Context
	srv   *server.MCPServer
	token mcp.ProgressToken
	mu    sync.Mutex
	last  float64
	sent  bool
}

func newProgress(ctx context.Context, req mcp.CallToolRequest) *progress {
	p := &progress{ctx: ctx, srv: server.ServerFromContext(ctx)}
	if req.Params.Meta != nil {
		p.token = req.Params.Meta.ProgressToken
	}
	return p
}

// on reports whether the client asked for progress.
func (p *progress) on() bool { return p.token != nil && p.srv != nil }

// send sends value (of total, when total > 0) with a fixed message.
func (p *progress) send(value, total float64, message string) {
	if !p.on() || p.ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sent && value <= p.last {
		return
	}
	p.last, p.sent = value, true
	params := map[string]any{"progressToken": p.token, "progress": value, "message": message}
	if total > 0 {
		params["total"] = total
	}
	_ = p.srv.SendNotificationToClient(p.ctx, "notifications/progress", params)
}

// heartbeat sends the elapsed seconds (of total, when total > 0) every
// interval until stop is called; it returns stop.
func (p *progress) heartbeat(every time.Duration, total float64, message string) (stop func()) {
	if !p.on() {
		return func() {}
	}
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		p.send(0, total, message)
		for {
			select {
			case <-t.C:
				v := time.Since(start).Seconds()
				if total > 0 && v > total {
					v = total
				}
				p.send(v, total, message)
			case <-done:
				return
			case <-p.ctx.Done():
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}
