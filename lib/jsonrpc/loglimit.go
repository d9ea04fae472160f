package jsonrpc

import (
	"log/slog"
	"sync"
	"time"
)

// logLimiter turns a burst of like events into few WARN lines: the first
// event of a burst is logged at once with count 1, then one line per
// interval carries the count of the events in it, and close logs what is
// left. A flood of refused connections therefore costs one line per
// interval, not one per connection.
type logLimiter struct {
	log   *slog.Logger
	every time.Duration
	msg   string
	attrs []any

	mu      sync.Mutex
	pending int64
	timer   *time.Timer // non-nil while an interval runs
	closed  bool
}

func newLogLimiter(log *slog.Logger, every time.Duration, msg string, attrs ...any) *logLimiter {
	return &logLimiter{log: log, every: every, msg: msg, attrs: attrs}
}

// note records one event.
func (l *logLimiter) note() {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
	case l.every <= 0:
		l.emit(1)
	case l.timer == nil:
		l.emit(1)
		l.timer = time.AfterFunc(l.every, l.tick)
	default:
		l.pending++
	}
}

// tick ends an interval: it logs the events of the interval, if any, and
// starts another, or else ends the burst.
func (l *logLimiter) tick() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.timer == nil {
		return
	}
	if l.pending == 0 {
		l.timer = nil
		return
	}
	l.emit(l.pending)
	l.pending = 0
	l.timer.Reset(l.every)
}

// close logs the events not yet logged and stops the interval timer.
func (l *logLimiter) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	if l.pending > 0 {
		l.emit(l.pending)
		l.pending = 0
	}
}

// emit logs one line for n events; l.mu is held.
func (l *logLimiter) emit(n int64) {
	args := append(append([]any(nil), l.attrs...), "count", n)
	if l.every > 0 {
		args = append(args, "interval", l.every.String())
	}
	l.log.Warn(l.msg, args...)
}
