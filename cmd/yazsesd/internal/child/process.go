package child

import (
	"log/slog"

	"github.com/yazses/yazses/cmd/yazsesd/internal/mic"
	"github.com/yazses/yazses/cmd/yazsesd/internal/proc"
	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/lib/bcast"
)

// process is proc.Process under the names the ends of this package use:
// init sets it up, goroutines are its Goroutines, changed its Changes.
type process struct {
	proc.Process
	goroutines *proc.Group
	changed    *bcast.Signal
}

func (p *process) init(spec supervise.Spec, log *slog.Logger) {
	p.Init(spec, log)
	p.goroutines, p.changed = &p.Goroutines, p.Changes()
}

// level is proc.Level with the condition readable as on, as the ends of
// this package read it (under the lock they guard it with).
type level struct {
	proc.Level
	on bool
}

func (l *level) set(on bool) {
	l.Set(on)
	l.on = on
}

// Listener is mic.Listener, under the name daemon/hold.go still gives it
// (the microphone's end moved to package mic).
type Listener = mic.Listener
