package child

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/tts"
)

// TestSpeakerCue: a cue goes out only while the speaker has nothing in
// hand: over a question being spoken it is not sent (ErrBusy), and once
// the question is done it is.
func TestSpeakerCue(t *testing.T) {
	s := NewSpeaker(supervise.Spec{Name: "speak"}, slog.New(slog.DiscardHandler))
	c := startSpeaker(t, s, 0)
	defer func() {
		c.out.Close()
		c.in.Close()
		s.goroutines.Wait()
	}()
	testwait.Closed(t, s.Up(), "the speaker to be up")

	id, q, err := s.Speak("a question")
	if err != nil {
		t.Fatal(err)
	}
	c.request(t)
	if _, err := s.Cue(tts.CueStart); !errors.Is(err, ErrBusy) {
		t.Errorf("Cue while a question is spoken = %v, want ErrBusy", err)
	}
	c.send(t, fmt.Sprintf(`{"id":%q,"event":"started","audible":true}`, id))
	c.send(t, fmt.Sprintf(`{"id":%q,"event":"done","audible":true}`, id))
	events(t, q)

	cue, err := s.Cue(tts.CueEnd)
	if err != nil {
		t.Fatalf("Cue with the speaker idle: %v", err)
	}
	r := c.request(t)
	if r.Cue != tts.CueEnd || r.Text != "" {
		t.Errorf("request %+v, want the end cue without text", r)
	}
	if _, err := s.Cue(tts.CueStart); !errors.Is(err, ErrBusy) {
		t.Errorf("Cue while a cue plays = %v, want ErrBusy", err)
	}
	c.send(t, fmt.Sprintf(`{"id":%q,"event":"done","audible":true}`, r.ID))
	if got := events(t, cue); fmt.Sprint(got) != "[done]" {
		t.Errorf("cue events %q, want done", got)
	}
}
