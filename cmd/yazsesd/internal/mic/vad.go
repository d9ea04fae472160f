package mic

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/yazses/yazses/cmd/yazsesd/internal/proc"
	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/cmd/yazsesd/internal/vadlink"
)

// VAD is the daemon's end of `yaz-decode vad-stream` (Silero VAD's
// probabilities): frames on its stdin, one line per answer on its stdout,
// carried by a vadlink.Link made afresh on every start. Link returns the
// current one, or nil while the child is down or its Link has failed: the
// caller then decides with the energy detector (vadlink.NewEnergy), never
// waiting for a restart.
type VAD struct {
	proc.Process

	mu   sync.Mutex
	w    *os.File      // the child's stdin of the next start, our end
	r    *os.File      // its stdout, our end
	link *vadlink.Link // the current start's, nil until it is ready
	up   proc.Level    // link is ready and has not failed (as of the last look)
}

// NewVAD returns the end of the detector child run as spec (its Stdin,
// Stdout and Ready are the VAD's).
func NewVAD(spec supervise.Spec, log *slog.Logger) *VAD {
	v := &VAD{}
	spec.Stdin, spec.Stdout, spec.Ready = v.openStdin, v.openStdout, true
	v.Init(spec, log)
	v.OnStart(v.started)
	return v
}

// Run supervises the child until ctx ends. A Link lives as long as its
// start: it ends when the child does (its stdout ends), at the next start,
// or, at the latest, when Run returns.
func (v *VAD) Run(ctx context.Context) error {
	defer v.closeLink()
	return v.Process.Run(ctx)
}

func (v *VAD) closeLink() {
	v.mu.Lock()
	l := v.link
	v.link = nil
	v.up.Set(false)
	v.mu.Unlock()
	if l != nil {
		l.Close()
	}
}

func (v *VAD) openStdin() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("vad stdin: %w", err)
	}
	v.mu.Lock()
	if v.w != nil { // a start that never became ready
		v.w.Close()
	}
	v.w = w
	v.mu.Unlock()
	return r, nil
}

func (v *VAD) openStdout() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("vad stdout: %w", err)
	}
	v.mu.Lock()
	if v.r != nil {
		v.r.Close()
	}
	v.r = r
	v.mu.Unlock()
	return w, nil
}

// started is the supervisor's start hook: the model is loaded; the pipes
// of this start become a Link, which owns them. The Link ends when the
// child does (its stdout ends); the one of an earlier start is closed.
func (v *VAD) started(pid, restart int) {
	v.mu.Lock()
	if v.w == nil || v.r == nil {
		v.mu.Unlock()
		return
	}
	// The Link's life is bounded by this end (the next start, Run's
	// return), not by a context: Run's is not the hook's to keep.
	l := vadlink.New(context.Background(), v.w, v.r)
	v.w, v.r = nil, nil
	old := v.link
	v.link = l
	v.up.Set(true)
	v.mu.Unlock()
	if old != nil {
		old.Close()
	}
}

// Link returns the Link of the running child, or nil while there is none
// (starting, restarting, down) or it has failed.
func (v *VAD) Link() *vadlink.Link {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.liveLocked() {
		return nil
	}
	return v.link
}

// liveLocked reports whether the current Link is ready and has not
// failed, and keeps up to date with it.
func (v *VAD) liveLocked() bool {
	live := v.link != nil && v.link.Err() == nil
	v.up.Set(live)
	return live
}

// Up returns a channel closed once the current start's Link is ready; a
// Link that ends makes a new one.
func (v *VAD) Up() <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.liveLocked()
	return v.up.C()
}
