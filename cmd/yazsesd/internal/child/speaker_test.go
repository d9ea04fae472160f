package child

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/tts"
)

// speakStart plays one start of `yaz-speak --serve` on the Speaker's
// hooks: the requests it reads, and its stdout to write events on.
type speakStart struct {
	requests *bufio.Scanner
	in       *os.File // the child's stdin (read end)
	out      *os.File // the child's stdout (write end)
}

func startSpeaker(t *testing.T, s *Speaker, restart int) *speakStart {
	t.Helper()
	in, err := s.openStdin()
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.openStdout()
	if err != nil {
		t.Fatal(err)
	}
	s.started(2000+restart, restart)
	return &speakStart{requests: bufio.NewScanner(in), in: in, out: out}
}

// request reads the next request the daemon sent.
func (c *speakStart) request(t *testing.T) tts.Request {
	t.Helper()
	if !c.requests.Scan() {
		t.Fatalf("no request: %v", c.requests.Err())
	}
	var r tts.Request
	if err := json.Unmarshal(c.requests.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func (c *speakStart) send(t *testing.T, line string) {
	t.Helper()
	if _, err := fmt.Fprintln(c.out, line); err != nil {
		t.Fatal(err)
	}
}

// events collects what a request's channel carries until it closes,
// bounded by testwait.Hang.
func events(t *testing.T, ch <-chan tts.Event) []string {
	t.Helper()
	timer := time.NewTimer(testwait.Hang)
	defer timer.Stop()
	var out []string
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, ev.Event)
		case <-timer.C:
			t.Fatalf("waiting for the request's channel to close: not within %v (events so far %q)", testwait.Hang, out)
		}
	}
}

// TestSpeaker: requests go out with ids of their own and events come
// back to the request they name, the final one closing its channel; lines
// that are no event or name no pending request are dropped; a speaker that
// is not up sends nothing (ErrNotRunning: proven silent); a child that
// dies closes every pending channel without a final event (whether it was
// heard is not known), and the events of an earlier start never reach a
// later one's requests.
func TestSpeaker(t *testing.T) {
	s := NewSpeaker(supervise.Spec{Name: "speak"}, slog.New(slog.DiscardHandler))
	if _, _, err := s.Speak("before any start"); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Speak before a start = %v, want ErrNotRunning", err)
	}
	c := startSpeaker(t, s, 0)
	testwait.Closed(t, s.Up(), "the speaker to be up")

	idA, a, err := s.Speak("first")
	if err != nil {
		t.Fatal(err)
	}
	idB, b, err := s.Speak("second")
	if err != nil {
		t.Fatal(err)
	}
	if ra, rb := c.request(t), c.request(t); ra.ID != idA || ra.Text != "first" || rb.ID != idB || rb.Text != "second" || idA == idB {
		t.Fatalf("requests %+v, %+v; want first as %s, second as %s", ra, rb, idA, idB)
	}
	c.send(t, `{"broken`)
	c.send(t, `{"id":"nobody","event":"done","audible":true}`)
	c.send(t, fmt.Sprintf(`{"id":%q,"event":"started","audible":true}`, idB))
	c.send(t, fmt.Sprintf(`{"id":%q,"event":"started","audible":true}`, idA))
	c.send(t, fmt.Sprintf(`{"id":%q,"event":"done","audible":true}`, idA))
	if got := events(t, a); fmt.Sprint(got) != "[started done]" {
		t.Errorf("first request's events %q, want started then done", got)
	}

	c.out.Close() // the child dies while the second plays
	if got := events(t, b); fmt.Sprint(got) != "[started]" {
		t.Errorf("second request's events %q, want started and then the channel closed", got)
	}
	c.in.Close()
	if _, _, err := s.Speak("to a dead speaker"); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Speak after the child died = %v, want ErrNotRunning", err)
	}

	// A restart: a request pending at the start is failed, and the old
	// start's late event goes nowhere.
	c2 := startSpeaker(t, s, 1)
	idC, ch, err := s.Speak("third")
	if err != nil {
		t.Fatal(err)
	}
	if r := c2.request(t); r.ID != idC {
		t.Fatalf("request %+v, want %s", r, idC)
	}
	c3 := startSpeaker(t, s, 2) // restarted again before it answered
	c2.send(t, fmt.Sprintf(`{"id":%q,"event":"done","audible":true}`, idC))
	if got := events(t, ch); len(got) != 0 {
		t.Errorf("a request of an earlier start got %q, want its channel closed without events", got)
	}
	for _, st := range []*speakStart{c2, c3} {
		st.out.Close()
		st.in.Close()
	}
	s.Close()
}
