package child

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

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

// TestMicQuiet: a quieted listener gets silence of the same length while
// its cue plays, and the microphone's audio again once the cue is played
// out; the bound ends the quiet too.
func TestMicQuiet(t *testing.T) {
	dir := t.TempDir()
	go1, go2 := filepath.Join(dir, "1"), filepath.Join(dir, "2")
	for _, p := range []string{go1, go2} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// 1600 samples of 257 (bytes 0x01 0x01) after each go.
	script := fmt.Sprintf(`eval "printf '\\n' >&$YAZ_READY_FD"; read x < %s; head -c 3200 /dev/zero | tr '\0' '\1'; read x < %s; head -c 3200 /dev/zero | tr '\0' '\1'; exec sleep 60`, go1, go2)
	m := NewMic(supervise.Spec{Name: "capture", Argv: []string{"sh", "-c", script}}, false, 0, slog.New(slog.DiscardHandler))
	runMic(t, m)
	l := m.Listen(false)
	defer m.Unlisten(l)
	cue := make(chan tts.Event, 3)
	m.Quiet(l, cue, 0, time.Hour)
	cue <- tts.Event{Event: tts.EventStarted}

	read := func(what string) []int16 {
		var got []int16
		for len(got) < 1600 {
			s := testwait.Recv(t, l.Audio(), what)
			if s == nil {
				t.Fatalf("%s: the stream ended", what)
			}
			got = append(got, s...)
		}
		return got
	}
	if err := os.WriteFile(go1, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := read("audio while the cue plays"); slices.ContainsFunc(got, func(v int16) bool { return v != 0 }) {
		t.Errorf("audio while the cue plays is not silence")
	}
	cue <- tts.Event{Event: tts.EventDone}
	close(cue)
	if err := os.WriteFile(go2, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := read("audio after the cue"); slices.ContainsFunc(got, func(v int16) bool { return v != 257 }) {
		t.Errorf("audio after the cue was changed")
	}

	now := time.Now()
	bounded := &Listener{quiet: true, sound: make(chan tts.Event), quietEnd: now}
	if bounded.quieted(now.Add(time.Millisecond)) {
		t.Errorf("a listener past its quiet's bound is still quieted")
	}
	played := make(chan tts.Event)
	close(played)
	after := &Listener{quiet: true, sound: played, quietAfter: time.Second, quietEnd: now.Add(time.Hour)}
	if !after.quieted(now) || !after.quieted(now.Add(999*time.Millisecond)) || after.quieted(now.Add(time.Second)) {
		t.Errorf("a listener whose cue was played out is not quieted for exactly its after")
	}
}
