package serve

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/decodetest"
)

// stuckWarmer is a model whose warm-up never ends on its own, or fails.
type stuckWarmer struct {
	decodetest.Recognizer
	err error // nil: wait for the context
}

func (w *stuckWarmer) WarmUp(ctx context.Context, threads int) (time.Duration, error) {
	if w.err != nil {
		return 0, w.err
	}
	<-ctx.Done()
	return warmUpLimit, ctx.Err()
}

// TestWarmUpBounded: a warm-up that does not end is stopped at
// warmUpLimit, and one that fails is a WARN line; either way serve goes
// on to say it is ready (the first utterance pays instead).
func TestWarmUpBounded(t *testing.T) {
	for _, w := range []*stuckWarmer{{}, {err: errors.New("whisper_full failed")}} {
		synctest.Test(t, func(t *testing.T) {
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			start := time.Now()
			newConfig().warmUp(context.Background(), log, w)
			if w.err == nil && time.Since(start) != warmUpLimit {
				t.Errorf("the warm-up ended after %v, want %v", time.Since(start), warmUpLimit)
			}
			if !strings.Contains(logs.String(), "level=WARN msg=\"warm-up failed") {
				t.Errorf("log %q: want a WARN line", logs.String())
			}
		})
	}
}
