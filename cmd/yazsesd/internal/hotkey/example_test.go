package hotkey_test

import (
	"context"
	"log/slog"

	"github.com/yazses/yazses/cmd/yazsesd/internal/hotkey"
)

// The daemon starts the listener from the [hotkey] table and turns its
// actions into hold.start and hold.stop.
func ExampleListener() {
	l, err := hotkey.Open(hotkey.Options{Key: "KEY_RIGHTCTRL", Mode: hotkey.Hold, Device: ""})
	if err != nil {
		slog.Error("hotkey off", "err", err) // a PermissionError says how to get access
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_ = l.Run(ctx, func(a hotkey.Action) {
		switch a {
		case hotkey.Start:
			// hold.start
		case hotkey.Stop:
			// hold.stop
		}
	})
}
