package notify_test

import (
	"context"

	"github.com/yazses/yazses/cmd/yazsesd/internal/notify"
)

func ExampleNotifier() {
	n := notify.New(notify.Options{Enabled: true, PerMinute: 6})
	defer n.Wait()
	// The daemon's Notify(kind) hook:
	if m, ok := notify.ByKind("no_target"); ok {
		n.Post(context.Background(), m)
	}
	// A new fixed sentence: string constants only.
	n.Post(context.Background(), notify.Text(notify.AppName, "Decoder restarted."))
}
