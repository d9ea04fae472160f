package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/child"
	"github.com/yazses/yazses/cmd/yazsesd/internal/hold"
	"github.com/yazses/yazses/cmd/yazsesd/internal/turn"
	"github.com/yazses/yazses/cmd/yazsesd/internal/vadlink"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/frame"
)

// The voice detector. The daemon's own decisions (was anything said in a
// hold, where an answer ends, when a tail or a toggled hold is over) read
// a vadlink.Use: of the Silero child (children.vad, `yaz-decode
// --vad-stream`) when [vad] chose it at start, else of the energy detector
// in process. While the child is down (starting, restarting, left down
// with vad_model_missing or vad_model_invalid), or busy with another use
// (a hold while an answer is still being listened to), a use gets an
// energy Link of its own: no decision waits for a restart.

// useSileroChild reports whether [vad] selects the Silero child: engine
// "silero", or "auto" with a file at vad.model (a broken file is then the
// child's vad_model_invalid, reported like the decoder's causes).
func useSileroChild(v config.VAD) bool {
	switch v.Engine {
	case config.VADEnergy:
		return false
	case config.VADSilero:
		return true
	}
	_, err := os.Stat(v.Model)
	return err == nil
}

// detUse is one use of the voice detector.
type detUse struct {
	*vadlink.Use
	engine string        // "silero" or "energy", for the debug log
	own    *vadlink.Link // the energy Link made for this use, or nil
	link   *vadlink.Link // the Silero child's Link the use is on, or nil
}

// beginDetect begins a use with p on the Silero child's Link when it is up
// and free, else on an energy Link of its own. nil only when the daemon is
// stopping.
func (d *Daemon) beginDetect(p vadlink.Params) *detUse {
	if d.vad != nil {
		if l := d.vad.Link(); l != nil {
			if u, err := l.Begin(p); err == nil {
				return &detUse{Use: u, engine: "silero", link: l}
			}
		}
	}
	return d.beginEnergy(p)
}

// beginEnergy begins a use with p on a new energy Link.
func (d *Daemon) beginEnergy(p vadlink.Params) *detUse {
	l := vadlink.NewEnergy(d.life)
	u, err := l.Begin(p)
	if err != nil {
		l.Close()
		return nil
	}
	return &detUse{Use: u, engine: "energy", own: l}
}

// restartSilent restarts the Silero child when it still runs the Link of
// use u, which it did not answer in time (stopped, or looping): the next
// use gets a child that answers, and meanwhile the energy detector.
func (d *Daemon) restartSilent(u *detUse) {
	if u.link == nil || d.vad == nil || d.vad.Link() != u.link {
		return // the energy detector, or the child has been restarted since
	}
	d.log.Warn("the voice detector child did not answer: it is restarted")
	d.vad.Restart()
}

// release closes the use (its events are dropped from now on) and the
// energy Link made for it.
func (u *detUse) release() {
	u.Close()
	if u.own != nil {
		u.own.Close()
	}
}

// The hold's ends (package hold's interfaces) over the child ends.

// micAudio is a hold's listener on the microphone (hold.Audio).
type micAudio struct {
	m *child.Mic
	l *child.Listener
}

func (a micAudio) Blocks() <-chan []int16 { return a.l.Audio() }
func (a micAudio) Stop()                  { a.m.Unlisten(a.l) }

// holdDetector is a hold's detector use (hold.Detector).
type holdDetector struct {
	d *Daemon
	u *detUse
}

func (h holdDetector) Engine() string               { return h.u.engine }
func (h holdDetector) Feed(s []int16)               { _ = h.u.Feed(s) } // a detector that fell behind fails the use
func (h holdDetector) Events() <-chan vadlink.Event { return h.u.Events() }
func (h holdDetector) End()                         { _ = h.u.End() }
func (h holdDetector) Release()                     { h.u.release() }
func (h holdDetector) Restart()                     { h.d.restartSilent(h.u) }
func (h holdDetector) Wait(ctx context.Context, pos int64) (vadlink.State, error) {
	return h.u.Wait(ctx, pos)
}

// tailEnergy begins the energy detector for a tail the hold's own
// detector can no longer decide; nil when the daemon stops.
func (d *Daemon) tailEnergy() hold.Detector {
	p := holdParams(d.config())
	p.Silences = []time.Duration{hold.TailQuiet}
	if u := d.beginEnergy(p); u != nil {
		return holdDetector{d, u}
	}
	return nil
}

// holdDecoder is the resident decoder at the hold's priority, with
// dictation.prompt (hold.Decoder). Its decodes end also when the decoder
// is down for good or the daemon stops (decodeCtx): errDecodeEnded.
type holdDecoder struct {
	d      *Daemon
	prompt *string
}

// errDecodeEnded marks a hold's decode whose context ended for the
// decoder's or the daemon's sake.
var errDecodeEnded = errors.New("the decoder is down or the daemon stops")

func (h holdDecoder) Decode(ctx context.Context, samples []int16, said string) (string, error) {
	dctx, cancel := h.d.decodeCtx(ctx)
	defer cancel()
	r, err := h.d.decode.DecodeAfter(dctx, turn.Hold, samples, h.prompt, said)
	if err != nil && dctx.Err() != nil {
		err = fmt.Errorf("%w: %w", errDecodeEnded, err)
	}
	return r.Text, err
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
