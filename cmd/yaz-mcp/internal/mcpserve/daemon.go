package mcpserve

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/yazses/yazses/lib/daemonapi"
)

// daemonNotes remembers, per consequence ("decoding locally", "ask_human
// unavailable"), the last reason logged for not using the daemon, so each
// cause is logged once and not on every call.
type daemonNotes struct {
	mu   sync.Mutex
	last map[string]string
}

// dialDaemon dials the daemon. When that fails it logs why, once per cause
// and consequence: at INFO when no daemon was found (with what was looked
// for and why it was refused), at WARN when one was found and refused (a
// folder or server of another user). The cause names the runtime folder,
// never a question, an answer, a transcript or an audio path.
func (s *Server) dialDaemon(ctx context.Context, consequence string) (*daemonapi.Client, error) {
	c, err := daemonapi.Dial(ctx)
	s.notes.mu.Lock()
	defer s.notes.mu.Unlock()
	if err == nil {
		delete(s.notes.last, consequence) // a later loss is logged again
		return c, nil
	}
	cause := err.Error()
	if s.notes.last[consequence] == cause {
		return nil, err
	}
	if s.notes.last == nil {
		s.notes.last = map[string]string{}
	}
	s.notes.last[consequence] = cause
	level, msg := slog.LevelInfo, "no daemon found: "+consequence
	if !errors.Is(err, daemonapi.ErrNotRunning) {
		level, msg = slog.LevelWarn, "daemon refused: "+consequence
	}
	s.log.Log(ctx, level, msg, "cause", cause)
	return nil, err
}
