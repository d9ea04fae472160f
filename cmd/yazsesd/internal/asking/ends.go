package asking

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/child"
	"github.com/yazses/yazses/cmd/yazsesd/internal/detect"
	"github.com/yazses/yazses/cmd/yazsesd/internal/livestate"
	"github.com/yazses/yazses/cmd/yazsesd/internal/mic"
	"github.com/yazses/yazses/cmd/yazsesd/internal/question"
	"github.com/yazses/yazses/cmd/yazsesd/internal/turn"
	"github.com/yazses/yazses/lib/gate"
	"github.com/yazses/yazses/lib/tts"
	"github.com/yazses/yazses/lib/vadspan"
)

// The child ends (packages child, mic, detect) as the interfaces of a
// question (package question).

// Waits of the adapters.
const (
	gateWait    = 5 * time.Second // longest wait for a (re)starting gate
	speakerWait = 5 * time.Second // and for a (re)starting speaker
)

// askGate is the gate child (question.Gate); a reservation reads the
// budget on the watch stream again.
type askGate struct {
	g    *child.Gate
	live *livestate.State
}

func (g askGate) Reserve(ctx context.Context) (string, error) {
	var tok string
	err := g.g.Do(ctx, gateWait, true, func(c *gate.Client) error {
		var err error
		tok, err = c.Reserve(ctx)
		return err
	})
	if err == nil {
		g.live.RefreshBudget()
	}
	return tok, err
}

func (g askGate) Commit(ctx context.Context, tok string) error {
	return g.g.Do(ctx, gateWait, false, func(c *gate.Client) error { return c.Commit(ctx, tok) })
}

func (g askGate) Release(ctx context.Context, tok string) error {
	return g.g.Do(ctx, gateWait, false, func(c *gate.Client) error { return c.Release(ctx, tok) })
}

// askSpeaker is the speaker child (question.Speaker).
type askSpeaker struct{ s *child.Speaker }

// Ready waits (up to speakerWait) for a speaker that is starting or
// restarting; one left down (crash loop, exited, stopped) is not waited
// for.
func (s askSpeaker) Ready(ctx context.Context) bool {
	up, down := s.s.Up(), s.s.Down()
	select {
	case <-up:
		return true
	default:
	}
	t := time.NewTimer(speakerWait)
	defer t.Stop()
	select {
	case <-up:
		return true
	case <-down:
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

func (s askSpeaker) Speak(text string) (<-chan tts.Event, error) {
	_, events, err := s.s.Speak(text)
	return events, err
}

func (s askSpeaker) Skip() { s.s.Skip() }

// askMic is the capture child (question.Mic).
type askMic struct{ m *mic.Mic }

func (m askMic) Listen() (<-chan []int16, func()) {
	l := m.m.Listen(false) // only what is said from now on
	return l.Audio(), func() { m.m.Unlisten(l) }
}

// askDetector begins the answer's detector uses (question.Detector),
// ending with the daemon (life).
type askDetector struct {
	src  *detect.Source
	life context.Context
}

func (a askDetector) Begin(p vadspan.Params) question.Detection {
	if u := a.src.Begin(a.life, p); u != nil {
		return u
	}
	return nil
}

func (a askDetector) BeginEnergy(p vadspan.Params) question.Detection {
	if u := a.src.BeginEnergy(a.life, p); u != nil {
		return u
	}
	return nil
}

// askDecoder is the resident decoder (question.Decoder).
type askDecoder struct{ d *child.Decoder }

func (a askDecoder) Decode(ctx context.Context, samples []int16) (string, error) {
	r, err := a.d.Decode(ctx, turn.Answer, samples, nil)
	if errors.Is(err, child.ErrLost) {
		return "", fmt.Errorf("%w: %w", question.ErrLost, err)
	}
	return r.Text, err
}

func (a askDecoder) WaitUp(ctx context.Context) error { return a.d.WaitUp(ctx) }
