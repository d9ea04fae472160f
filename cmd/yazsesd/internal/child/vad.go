package child

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/cmd/yazsesd/internal/vadlink"
)

// VAD is the daemon's end of `yaz-decode --vad-stream` (Silero VAD's
// probabilities): frames on its stdin, one line per answer on its stdout,
// carried by a vadlink.Link made afresh on every start. Link returns the
// current one, or nil while the child is down or its Link has failed: the
// caller then decides with the energy detector (vadlink.NewEnergy), never
// waiting for a restart.
type VAD struct {
	end

	mu   sync.Mutex
	ctx  context.Context // Run's: every Link ends with it
	w    *os.File        // the child's stdin of the next start, our end
	r    *os.File        // its stdout, our end
	link *vadlink.Link   // the current start's, nil until it is ready
	upCh chan struct{}   // closed once a start's Link is ready
}

// NewVAD returns the end of the detector child run as spec (its Stdin,
// Stdout and Ready are the VAD's).
func NewVAD(spec supervise.Spec, log *slog.Logger) *VAD {
	v := &VAD{upCh: make(chan struct{}), ctx: context.Background()}
	spec.Stdin, spec.Stdout, spec.Ready = v.openStdin, v.openStdout, true
	v.init(spec, log)
	v.OnStart(v.started)
	return v
}

// Run supervises the child until ctx ends; every Link ends with ctx.
func (v *VAD) Run(ctx context.Context) error {
	v.mu.Lock()
	v.ctx = ctx
	v.mu.Unlock()
	return v.end.Run(ctx)
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
// of this start become a Link. The Link ends when the child does (its
// stdout ends) or when Run's context does, closing both pipes.
func (v *VAD) started(pid, restart int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.w == nil || v.r == nil {
		return
	}
	l := vadlink.New(v.ctx, v.w, v.r)
	v.w, v.r = nil, nil
	if v.link != nil {
		v.link.Close()
	}
	v.link = l
	select {
	case <-v.upCh:
	default:
		close(v.upCh)
	}
	go func() { // owned by l: returns when l's goroutines have
		<-l.Done()
		v.mu.Lock()
		if v.link == l {
			v.link = nil
			v.upCh = make(chan struct{})
		}
		v.mu.Unlock()
	}()
}

// Link returns the Link of the running child, or nil while there is none
// (starting, restarting, down) or it has failed.
func (v *VAD) Link() *vadlink.Link {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.link == nil || v.link.Err() != nil {
		return nil
	}
	return v.link
}

// Up returns a channel closed once the current start's Link is ready; a
// Link that ends makes a new one.
func (v *VAD) Up() <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.upCh
}
