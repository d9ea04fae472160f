package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/dictation"
	"github.com/yazses/yazses/cmd/yazsesd/internal/hold"
	"github.com/yazses/yazses/cmd/yazsesd/internal/mic"
	"github.com/yazses/yazses/cmd/yazsesd/internal/turn"
	"github.com/yazses/yazses/lib/frame"
)

// The child ends (packages child and mic) as the interfaces of a hold
// (package hold) and a file (package transcribe); a question's are
// package asking's. The voice detector's uses (package detect) are a
// hold's detector as they are.

// micAudio is a hold's listener on the microphone (hold.Audio).
type micAudio struct {
	m *mic.Mic
	l *mic.Listener
}

func (a micAudio) Blocks() <-chan []int16  { return a.l.Audio() }
func (a micAudio) Failed() <-chan struct{} { return a.l.Failed() }
func (a micAudio) Restart()                { a.m.Restart() }
func (a micAudio) Stop()                   { a.m.Unlisten(a.l) }

// tailEnergy begins the energy detector for a tail the hold's own
// detector can no longer decide; nil when the daemon stops.
func (d *Daemon) tailEnergy() hold.Detector {
	if u := d.detect.BeginEnergy(d.life, dictation.TailParams(d.config())); u != nil {
		return u
	}
	return nil
}

// holdDecoder is the resident decoder at the hold's priority, with
// dictation.prompt (hold.Decoder). Its decodes end also when the decoder
// is down for good (dictation.ErrDecodeEnded), and holdStopWait after
// the daemon was told to stop (dictation.ErrShutdown): holdDecodeCtx.
type holdDecoder struct {
	d      *Daemon
	prompt *string
}

func (h holdDecoder) Decode(ctx context.Context, samples []int16, said string) (string, error) {
	dctx, cancel := h.d.holdDecodeCtx(ctx)
	defer cancel(nil)
	r, err := h.d.decode.DecodeAfter(dctx, turn.Hold, samples, h.prompt, said)
	switch {
	case err == nil || dctx.Err() == nil:
	case errors.Is(context.Cause(dctx), errStopDeadline):
		err = fmt.Errorf("%w: %w", dictation.ErrShutdown, err)
	default:
		err = fmt.Errorf("%w: %w", dictation.ErrDecodeEnded, err)
	}
	return r.Text, err
}

// errStopDeadline ends a hold's decode holdStopWait after the stop.
var errStopDeadline = errors.New("the daemon's stop gave the decoding no more time")

// holdDecodeCtx is parent, ended also when the decoder child is down for
// good (exit 125, a crash loop) and, once the daemon is stopping,
// holdStopWait after the stop (cause errStopDeadline): a hold that was
// released when the stop came is decoded if it can be in that time.
func (d *Daemon) holdDecodeCtx(parent context.Context) (context.Context, context.CancelCauseFunc) {
	dctx, cancel := context.WithCancelCause(parent)
	go func() { // ends with dctx, which the caller cancels
		for {
			d.state.mu.Lock()
			closing, stopAt, changed := d.state.closing, d.state.stopAt, d.state.changed.C()
			d.state.mu.Unlock()
			var deadline <-chan time.Time
			if closing {
				t := time.NewTimer(time.Until(stopAt.Add(holdStopWait)))
				defer t.Stop()
				deadline, changed = t.C, nil
			}
			select {
			case <-dctx.Done():
				return
			case <-d.decode.Down():
				cancel(nil)
				return
			case <-deadline:
				cancel(errStopDeadline)
				return
			case <-changed:
			}
		}
	}()
	return dctx, cancel
}

// fileDecoder is the resident decoder at file priority
// (transcribe.Decoder). Its decodes end also when the decoder is down for
// good or the daemon stops (decodeCtx), so a file fails at once with
// CodeUnavailable instead of holding its turn for a decoder that will not
// come up.
type fileDecoder struct{ d *Daemon }

func (f fileDecoder) Decode(ctx context.Context, samples []int16) (frame.Result, error) {
	dctx, cancel := f.d.decodeCtx(ctx)
	defer cancel()
	return f.d.decode.Decode(dctx, turn.File, samples, nil)
}

func (f fileDecoder) WaitUp(ctx context.Context) error {
	dctx, cancel := f.d.decodeCtx(ctx)
	defer cancel()
	return f.d.decode.WaitUp(dctx)
}

// decodeCtx is parent, ended also when the daemon stops or when the
// decoder child is down for good (exit 125, a crash loop): a hold or a transcribe then fails at once with the
// decoder's cause instead of waiting for a decoder that will not come up,
// holding the decoder's turn meanwhile.
func (d *Daemon) decodeCtx(parent context.Context) (context.Context, context.CancelFunc) {
	dctx, cancel := context.WithCancel(parent)
	go func() { // ends with dctx, which the caller cancels
		for {
			d.state.mu.Lock()
			closing, changed := d.state.closing, d.state.changed.C()
			d.state.mu.Unlock()
			if closing {
				cancel()
				return
			}
			select {
			case <-dctx.Done():
				return
			case <-d.decode.Down():
				cancel()
				return
			case <-changed:
			}
		}
	}()
	return dctx, cancel
}
