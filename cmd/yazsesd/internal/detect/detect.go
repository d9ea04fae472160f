// Package detect is where the daemon's voice-detector decisions come from
// (was anything said in a hold, where an answer ends, when a tail or a
// toggled hold is over): a vadlink.Use of the Silero child
// (children.vad, `yaz-decode vad-stream`) when [vad] chose it at start,
// else of the energy detector in process. While the child is down
// (starting, restarting, left down with vad_model_missing or
// vad_model_invalid), or busy with another use (a hold while an answer is
// still being listened to), a use gets an energy Link of its own: no
// decision waits for a restart.
//
// A Use is both a hold's detector (hold.Detector) and a question's
// (question.Detection).
package detect

import (
	"context"
	"log/slog"
	"os"

	"github.com/yazses/yazses/cmd/yazsesd/internal/vadlink"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/vadspan"
)

// Engines, as Use.Engine names them.
const (
	Silero = "silero"
	Energy = "energy"
)

// UseChild reports whether [vad] selects the Silero child: engine
// "silero", or "auto" with a file at vad.model (a broken file is then the
// child's vad_model_invalid, reported like the decoder's causes).
func UseChild(v config.VAD) bool {
	switch v.Engine {
	case config.VADEnergy:
		return false
	case config.VADSilero:
		return true
	}
	_, err := os.Stat(v.Model)
	return err == nil
}

// Child is the Silero detector child (mic.VAD).
type Child interface {
	// Link is the current start's Link; nil while the child is down or
	// its Link failed.
	Link() *vadlink.Link
	// Restart restarts the child.
	Restart()
}

// Source begins uses of the detector. Make it with New.
type Source struct {
	child Child // nil: the energy detector only
	log   *slog.Logger
}

// New returns a Source over child, nil for none (the energy detector
// only).
func New(child Child, log *slog.Logger) *Source {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Source{child: child, log: log}
}

// Begin begins a use with p on the child's Link when it is up and free,
// else on an energy Link of its own that ends with ctx. nil only when
// ctx has ended (the daemon stops).
func (s *Source) Begin(ctx context.Context, p vadspan.Params) *Use {
	if s.child != nil {
		if l := s.child.Link(); l != nil {
			if u, err := l.Start(p); err == nil {
				return &Use{u: u, engine: Silero, link: l, s: s}
			}
		}
	}
	return s.BeginEnergy(ctx, p)
}

// BeginEnergy begins a use with p on a new energy Link that ends with ctx;
// nil when ctx has ended.
func (s *Source) BeginEnergy(ctx context.Context, p vadspan.Params) *Use {
	l := vadlink.NewEnergy(ctx)
	u, err := l.Start(p)
	if err != nil {
		l.Close()
		return nil
	}
	return &Use{u: u, engine: Energy, own: l, s: s}
}

// Use is one use of the detector.
type Use struct {
	u      *vadlink.Use
	engine string
	own    *vadlink.Link // the energy Link made for this use, or nil
	link   *vadlink.Link // the child's Link the use is on, or nil
	s      *Source
}

// Engine names the detector: Silero or Energy.
func (u *Use) Engine() string { return u.engine }

// Energy reports the in-process energy detector (it has no fallback).
func (u *Use) Energy() bool { return u.own != nil }

// Feed sends audio; it never blocks: a detector that fell behind fails
// the use (a Failed event).
func (u *Use) Feed(samples []int16) { _ = u.u.Feed(samples) }

// Events carries the use's events; it closes after Ended or Failed.
func (u *Use) Events() <-chan vadlink.Event { return u.u.Events() }

// State is the detector's state as of its last answer.
func (u *Use) State() vadlink.State { return u.u.State() }

// Wait returns the state once the windows up to pos are answered (see
// vadlink.Use.Wait).
func (u *Use) Wait(ctx context.Context, pos int64) (vadlink.State, error) {
	return u.u.Wait(ctx, pos)
}

// End ends the audio: the last answers and an Ended event follow.
func (u *Use) End() { _ = u.u.End() }

// Release closes the use (its events are dropped from now on) and the
// energy Link made for it.
func (u *Use) Release() {
	u.u.Close()
	if u.own != nil {
		u.own.Close()
	}
}

// Restart restarts the Silero child when it still runs this use's Link,
// which did not answer in time (stopped, or looping): the next use gets a
// child that answers, and meanwhile the energy detector. It does nothing
// for an energy use, or once the child has been restarted since.
func (u *Use) Restart() {
	if u.link == nil || u.s.child == nil || u.s.child.Link() != u.link {
		return
	}
	u.s.log.Warn("the voice detector child did not answer: it is restarted")
	u.s.child.Restart()
}
