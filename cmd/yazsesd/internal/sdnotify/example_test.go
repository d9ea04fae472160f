package sdnotify_test

import "github.com/yazses/yazses/cmd/yazsesd/internal/sdnotify"

func ExampleNotifier() {
	n := sdnotify.FromEnv(true) // children do not inherit NOTIFY_SOCKET
	_ = n.Notify(sdnotify.Ready, sdnotify.Status("ready"))
	// on SIGHUP:
	_ = n.Notify(sdnotify.Reloading())
	_ = n.Notify(sdnotify.Ready)
	// on shutdown:
	_ = n.Notify(sdnotify.Stopping)
}
