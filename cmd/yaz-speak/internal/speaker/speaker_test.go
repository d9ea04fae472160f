package speaker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/tts"
	"go.uber.org/goleak"
)

// fakePlayer plays by calling its play function; the default hands the
// samples over at once, calling started first.
type fakePlayer struct {
	mu    sync.Mutex
	calls [][]int16
	play  func(ctx context.Context, samples []int16, started func()) (int, error)
	// playOut, when set, replaces play and also gets played.
	playOut func(ctx context.Context, samples []int16, started, played func()) (int, error)
}

func (p *fakePlayer) Play(ctx context.Context, samples []int16, started, played func()) (int, error) {
	p.mu.Lock()
	p.calls = append(p.calls, samples)
	p.mu.Unlock()
	if p.playOut != nil {
		return p.playOut(ctx, samples, started, played)
	}
	if p.play != nil {
		return p.play(ctx, samples, started)
	}
	started()
	return len(samples), nil
}

// fakeSynth returns one sample per rune of the text, or fails for texts
// that start with "FAIL".
type fakeSynth struct {
	mu    sync.Mutex
	texts []string
}

func (f *fakeSynth) synth(ctx context.Context, text string) ([]int16, error) {
	f.mu.Lock()
	f.texts = append(f.texts, text)
	f.mu.Unlock()
	if strings.HasPrefix(text, "FAIL") {
		return nil, errors.New("synthesis broke")
	}
	if strings.HasPrefix(text, "SILENT") {
		return nil, nil
	}
	return make([]int16, len([]rune(text))), nil
}

func newServer(p Player, s *fakeSynth) *Server {
	return &Server{
		Synthesize: s.synth,
		Player:     p,
		Log:        slog.New(slog.DiscardHandler),
	}
}

// serve runs srv over input and returns the events it wrote.
func serve(t *testing.T, srv *Server, input string) []tts.Event {
	t.Helper()
	var out strings.Builder
	if err := srv.Serve(testwait.Context(t), strings.NewReader(input), &out); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	return parseEvents(t, out.String())
}

func parseEvents(t *testing.T, s string) []tts.Event {
	t.Helper()
	var evs []tts.Event
	for line := range strings.Lines(s) {
		if !strings.HasSuffix(line, "\n") {
			t.Errorf("event line %q does not end in a newline", line)
		}
		var ev tts.Event
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("event line %q: %v", line, err)
		}
		if strings.Contains(strings.TrimSuffix(line, "\n"), "\n") || strings.Contains(line, ": ") {
			t.Errorf("event line %q is not compact", line)
		}
		evs = append(evs, ev)
	}
	return evs
}

func ev(id, event string, audible bool) tts.Event {
	return tts.Event{ID: id, Event: event, Audible: audible}
}

func TestServeOrder(t *testing.T) {
	p, s := &fakePlayer{}, &fakeSynth{}
	got := serve(t, newServer(p, s), `{"id":"a","text":"hello"}`+"\n"+`{"id":"b","text":"world!"}`+"\r\n")
	want := []tts.Event{
		ev("a", tts.EventStarted, true), ev("a", tts.EventDone, true),
		ev("b", tts.EventStarted, true), ev("b", tts.EventDone, true),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"hello", "world!"}, s.texts); diff != "" {
		t.Errorf("synthesized texts (-want +got):\n%s", diff)
	}
	if len(p.calls) != 2 || len(p.calls[0]) != 5 || len(p.calls[1]) != 6 {
		t.Errorf("player got %d calls, want the two syntheses", len(p.calls))
	}
}

func TestServeFailures(t *testing.T) {
	errDevice := errors.New("device gone")
	tests := []struct {
		name string
		play func(ctx context.Context, samples []int16, started func()) (int, error)
		text string
		want []tts.Event
	}{
		{
			name: "synthesis fails",
			text: "FAIL please",
			want: []tts.Event{ev("x", tts.EventFailed, false)},
		},
		{
			name: "synthesis gives no audio",
			text: "SILENT",
			want: []tts.Event{ev("x", tts.EventFailed, false)},
		},
		{
			name: "device fails to open",
			play: func(context.Context, []int16, func()) (int, error) { return 0, errDevice },
			text: "hi",
			want: []tts.Event{ev("x", tts.EventFailed, false)},
		},
		{
			name: "device fails after start",
			play: func(_ context.Context, s []int16, started func()) (int, error) {
				started()
				return len(s) / 2, errDevice
			},
			text: "hello there",
			want: []tts.Event{ev("x", tts.EventStarted, true), ev("x", tts.EventFailed, true)},
		},
		{
			name: "samples handed over without started",
			play: func(_ context.Context, s []int16, _ func()) (int, error) { return 1, errDevice },
			text: "hi",
			want: []tts.Event{ev("x", tts.EventStarted, true), ev("x", tts.EventFailed, true)},
		},
		{
			name: "success without started is still started first",
			play: func(_ context.Context, s []int16, _ func()) (int, error) { return len(s), nil },
			text: "hi",
			want: []tts.Event{ev("x", tts.EventStarted, true), ev("x", tts.EventDone, true)},
		},
		{
			name: "nothing played and no error",
			play: func(context.Context, []int16, func()) (int, error) { return 0, nil },
			text: "hi",
			want: []tts.Event{ev("x", tts.EventFailed, false)},
		},
		{
			name: "started called twice",
			play: func(_ context.Context, s []int16, started func()) (int, error) {
				started()
				started()
				return len(s), nil
			},
			text: "hi",
			want: []tts.Event{ev("x", tts.EventStarted, true), ev("x", tts.EventDone, true)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Only the first request meets the failure; a good request after
			// it shows the server keeps going.
			p := &fakePlayer{}
			if tt.play != nil {
				calls := 0
				p.play = func(ctx context.Context, s []int16, started func()) (int, error) {
					calls++
					if calls == 1 {
						return tt.play(ctx, s, started)
					}
					started()
					return len(s), nil
				}
			}
			req, _ := json.Marshal(tts.Request{ID: "x", Text: tt.text})
			got := serve(t, newServer(p, &fakeSynth{}), string(req)+"\n"+`{"id":"next","text":"ok"}`+"\n")
			want := append(slices.Clone(tt.want), ev("next", tts.EventStarted, true), ev("next", tts.EventDone, true))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServeMalformed(t *testing.T) {
	tests := []struct {
		line string
		id   string
	}{
		{`not json`, ""},
		{`{"id":"a","text":`, ""},
		{`{"id":"b","text":5}`, "b"},
		{`{"id":7,"text":"hi"}`, ""},
		{`{"text":"hi"}`, ""},
		{`{"id":"c"}`, "c"},
		{`{"id":"d","text":null}`, "d"},
		{`["id","text"]`, ""},
		{`{"id":"e","text":"\u0001\u0002 \n"}`, "e"},
		{`{"id":"f","text":"` + strings.Repeat("a", tts.MaxLineBytes) + `"}`, ""},
		{"\xff\xfe", ""},
	}
	for _, tt := range tests {
		name := tt.line
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			p, s := &fakePlayer{}, &fakeSynth{}
			got := serve(t, newServer(p, s), tt.line+"\n\n  \n"+`{"id":"ok","text":"fine"}`+"\n")
			want := []tts.Event{
				ev(tt.id, tts.EventFailed, false),
				ev("ok", tts.EventStarted, true), ev("ok", tts.EventDone, true),
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"fine"}, s.texts); diff != "" {
				t.Errorf("synthesized (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServeSanitizesAndCaps(t *testing.T) {
	s := &fakeSynth{}
	srv := newServer(&fakePlayer{}, s)
	srv.MaxText = 8
	serve(t, srv, `{"id":"a","text":"\u202eab\u0007c\ndef ghij"}`+"\n"+`{"id":"b","text":"-v --hlp"}`)
	if diff := cmp.Diff([]string{"abc def", "-v --hlp"}, s.texts); diff != "" {
		t.Errorf("synthesized (-want +got):\n%s", diff)
	}
}

// TestServeStartedFromAnotherGoroutine has the player call started from its
// own goroutine and return at once, the way a device callback may: started
// always comes before done (run with -race).
func TestServeStartedFromAnotherGoroutine(t *testing.T) {
	p := &fakePlayer{play: func(_ context.Context, s []int16, started func()) (int, error) {
		var wg sync.WaitGroup
		wg.Go(started)
		wg.Wait()
		return len(s), nil
	}}
	var in strings.Builder
	var want []tts.Event
	for range 200 {
		in.WriteString(`{"id":"r","text":"x"}` + "\n")
		want = append(want, ev("r", tts.EventStarted, true), ev("r", tts.EventDone, true))
	}
	got := serve(t, newServer(p, &fakeSynth{}), in.String())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestServeDoneBeforeClose: a player that has played the audio out but is
// still closing its device (PulseAudio takes up to a second or two) gets
// "done" out at once, before Play returns: the daemon listens for the
// answer from "done" on and must not wait for the close.
func TestServeDoneBeforeClose(t *testing.T) {
	closing, release := make(chan struct{}, 1), make(chan struct{})
	p := &fakePlayer{playOut: func(_ context.Context, s []int16, started, played func()) (int, error) {
		started()
		played()
		closing <- struct{}{}
		<-release // the device is closing
		return len(s), nil
	}}
	in, events, result := startServe(t, testwait.Context(t), newServer(p, &fakeSynth{}))
	io.WriteString(in, `{"id":"a","text":"words"}`+"\n")
	testwait.Recv(t, closing, "the player to close its device for a")
	if got := events.next(); got != ev("a", tts.EventStarted, true) {
		t.Fatalf("event = %+v, want a started", got)
	}
	if got := events.next(); got != ev("a", tts.EventDone, true) {
		t.Fatalf("event while the device closes = %+v, want a done", got)
	}
	close(release)
	io.WriteString(in, `{"id":"b","text":"more"}`+"\n")
	testwait.Recv(t, closing, "the player to close its device for b")
	if got := events.next(); got != ev("b", tts.EventStarted, true) {
		t.Fatalf("event = %+v, want b started (and nothing more for a)", got)
	}
	if got := events.next(); got != ev("b", tts.EventDone, true) {
		t.Fatalf("event = %+v, want b done", got)
	}
	in.Close()
	if err := testwait.Recv(t, result, "Serve to return at EOF"); err != nil {
		t.Errorf("Serve at EOF = %v, want nil", err)
	}
}

// TestServePlayedEvents: every way a player can report played gives
// exactly one started and one done, in that order, and an error after
// played (only the close failed) adds no failed event.
func TestServePlayedEvents(t *testing.T) {
	errClose := errors.New("close failed")
	tests := []struct {
		name string
		play func(ctx context.Context, s []int16, started, played func()) (int, error)
	}{
		{"started then played", func(_ context.Context, s []int16, started, played func()) (int, error) {
			started()
			played()
			return len(s), nil
		}},
		{"played without started", func(_ context.Context, s []int16, _, played func()) (int, error) {
			played()
			return len(s), nil
		}},
		{"played twice, from another goroutine", func(_ context.Context, s []int16, started, played func()) (int, error) {
			var wg sync.WaitGroup
			wg.Go(started)
			wg.Wait()
			wg.Go(played)
			wg.Go(played)
			wg.Wait()
			return len(s), nil
		}},
		{"error after played", func(_ context.Context, s []int16, started, played func()) (int, error) {
			started()
			played()
			return len(s), errClose
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &fakePlayer{playOut: tt.play}
			got := serve(t, newServer(p, &fakeSynth{}), `{"id":"a","text":"hi"}`+"\n"+`{"id":"b","text":"ok"}`+"\n")
			want := []tts.Event{
				ev("a", tts.EventStarted, true), ev("a", tts.EventDone, true),
				ev("b", tts.EventStarted, true), ev("b", tts.EventDone, true),
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// blockingPlayer starts, then plays until ctx ends or release is closed.
func blockingPlayer(playing chan<- struct{}, release <-chan struct{}) *fakePlayer {
	return &fakePlayer{play: func(ctx context.Context, s []int16, started func()) (int, error) {
		started()
		playing <- struct{}{}
		select {
		case <-ctx.Done():
			return 1, ctx.Err()
		case <-release:
			return len(s), nil
		}
	}}
}

// eventReader reads events from a pipe as they come.
type eventReader struct {
	t     *testing.T
	lines <-chan string
	err   *error // the scanner's error, set before lines is closed
}

// next returns the next event; after testwait.Hang it fails the test.
func (r *eventReader) next() tts.Event {
	r.t.Helper()
	select {
	case line, ok := <-r.lines:
		if !ok {
			r.t.Fatalf("no more events: %v", *r.err)
		}
		return parseEvents(r.t, line+"\n")[0]
	case <-time.After(testwait.Hang):
		r.t.Fatalf("waiting for the next event: nothing within %v", testwait.Hang)
	}
	return tts.Event{}
}

func startServe(t *testing.T, ctx context.Context, srv *Server) (in *io.PipeWriter, events *eventReader, result <-chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		err := srv.Serve(ctx, inR, outW)
		outW.Close()
		errc <- err
	}()
	lines, stop := make(chan string), make(chan struct{})
	var scanErr error
	var scanning sync.WaitGroup
	scanning.Go(func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-stop:
				return
			}
		}
		scanErr = sc.Err()
	})
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
		close(stop)
		testwait.Group(t, &scanning, "the event reader to end")
	})
	return inW, &eventReader{t: t, lines: lines, err: &scanErr}, errc
}

func TestServeSkip(t *testing.T) {
	playing, release := make(chan struct{}, 1), make(chan struct{})
	skip := make(chan struct{}, 1)
	srv := newServer(blockingPlayer(playing, release), &fakeSynth{})
	srv.Skip = skip
	skip <- struct{}{} // a skip while idle is dropped
	in, events, result := startServe(t, testwait.Context(t), srv)

	io.WriteString(in, `{"id":"a","text":"long"}`+"\n")
	testwait.Recv(t, playing, "a to play")
	if got := events.next(); got != ev("a", tts.EventStarted, true) {
		t.Fatalf("event = %+v, want a started", got)
	}
	skip <- struct{}{}
	if got := events.next(); got != ev("a", tts.EventFailed, true) {
		t.Fatalf("event after skip = %+v, want a failed audible", got)
	}

	io.WriteString(in, `{"id":"b","text":"next"}`+"\n")
	testwait.Recv(t, playing, "b to play")
	close(release)
	if got := events.next(); got != ev("b", tts.EventStarted, true) {
		t.Fatalf("event = %+v, want b started", got)
	}
	if got := events.next(); got != ev("b", tts.EventDone, true) {
		t.Fatalf("event = %+v, want b done", got)
	}
	in.Close()
	if err := testwait.Recv(t, result, "Serve to return at EOF"); err != nil {
		t.Errorf("Serve at EOF = %v, want nil", err)
	}
}

// TestServeEOFFinishesUtterance closes stdin while a request plays: the
// utterance still ends with done, then Serve returns nil. In a synctest
// bubble, so that "Serve has not returned" is checked once everything
// that could happen after the EOF has.
func TestServeEOFFinishesUtterance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		playing, release := make(chan struct{}, 1), make(chan struct{})
		srv := newServer(blockingPlayer(playing, release), &fakeSynth{})
		in, events, result := startServe(t, testwait.Context(t), srv)
		io.WriteString(in, `{"id":"a","text":"words"}`+"\n")
		testwait.Recv(t, playing, "a to play")
		in.Close()
		if got := events.next(); got != ev("a", tts.EventStarted, true) {
			t.Fatalf("event = %+v, want a started", got)
		}
		synctest.Wait() // all that the EOF leads to has happened
		select {
		case err := <-result:
			t.Fatalf("Serve returned %v before the utterance ended", err)
		default:
		}
		close(release)
		if got := events.next(); got != ev("a", tts.EventDone, true) {
			t.Fatalf("event = %+v, want a done", got)
		}
		if err := testwait.Recv(t, result, "Serve to return at EOF"); err != nil {
			t.Errorf("Serve at EOF = %v, want nil", err)
		}
	})
}

// TestServeCancel cancels the server's context mid-utterance: playback stops,
// a failed audible event goes out, and Serve returns the context's error.
func TestServeCancel(t *testing.T) {
	playing := make(chan struct{}, 1)
	srv := newServer(blockingPlayer(playing, nil), &fakeSynth{})
	ctx, cancel := context.WithCancel(testwait.Context(t))
	in, events, result := startServe(t, ctx, srv)
	io.WriteString(in, `{"id":"a","text":"words"}`+"\n")
	testwait.Recv(t, playing, "a to play")
	if got := events.next(); got != ev("a", tts.EventStarted, true) {
		t.Fatalf("event = %+v, want a started", got)
	}
	cancel()
	if got := events.next(); got != ev("a", tts.EventFailed, true) {
		t.Fatalf("event = %+v, want a failed audible", got)
	}
	if err := testwait.Recv(t, result, "Serve to return after its cancel"); !errors.Is(err, context.Canceled) {
		t.Errorf("Serve after cancel = %v, want context.Canceled", err)
	}
}

// TestServeCancelIdle cancels while Serve waits for a request on a stdin that
// never ends.
func TestServeCancelIdle(t *testing.T) {
	ctx, cancel := context.WithCancel(testwait.Context(t))
	_, _, result := startServe(t, ctx, newServer(&fakePlayer{}, &fakeSynth{}))
	cancel()
	if err := testwait.Recv(t, result, "Serve to return after its cancel"); !errors.Is(err, context.Canceled) {
		t.Errorf("Serve after cancel = %v, want context.Canceled", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestServeWriteError(t *testing.T) {
	srv := newServer(&fakePlayer{}, &fakeSynth{})
	err := srv.Serve(t.Context(), strings.NewReader(`{"id":"a","text":"x"}`+"\n"+`{"id":"b","text":"y"}`+"\n"), failWriter{})
	if err == nil || !strings.Contains(err.Error(), "write event") {
		t.Errorf("Serve with a broken stdout = %v, want a write error", err)
	}
}

func TestLines(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want []Line
	}{
		{"", 10, nil},
		{"a\nb\r\n\nc", 10, []Line{{Data: []byte("a")}, {Data: []byte("b")}, {Data: []byte{}}, {Data: []byte("c")}}},
		{"short\n" + strings.Repeat("x", 11) + "\nok\n", 10, []Line{{Data: []byte("short")}, {TooLong: true}, {Data: []byte("ok")}}},
		{strings.Repeat("y", 200000) + "\nafter", 100, []Line{{TooLong: true}, {Data: []byte("after")}}},
		{strings.Repeat("z", 10) + "\r\n", 10, []Line{{Data: []byte(strings.Repeat("z", 10))}}},
	}
	for _, tt := range tests {
		ch, errf := Lines(t.Context(), strings.NewReader(tt.in), tt.max)
		var got []Line
		for l := range ch {
			got = append(got, l)
		}
		if err := errf(); err != nil {
			t.Errorf("Lines(%.20q) error: %v", tt.in, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Lines(%.20q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestServeCues: a cue request plays a generated tone (never espeak-ng):
// 80 ms, 880 Hz for the start and 660 Hz for the end, faded in and out,
// with the events of any request; an unknown cue fails unheard.
func TestServeCues(t *testing.T) {
	p, s := &fakePlayer{}, &fakeSynth{}
	got := serve(t, newServer(p, s), `{"id":"c1","cue":"start"}`+"\n"+`{"id":"c2","text":"","cue":"end"}`+"\n"+`{"id":"c3","cue":"bell"}`+"\n")
	started := func(id string) tts.Event {
		return tts.Event{ID: id, Event: tts.EventStarted, Audible: true, AudioMs: CueLength}
	}
	want := []tts.Event{
		started("c1"), ev("c1", tts.EventDone, true),
		started("c2"), ev("c2", tts.EventDone, true),
		ev("c3", tts.EventFailed, false),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if len(s.texts) != 0 {
		t.Errorf("a cue went to the synthesizer: %q", s.texts)
	}
	if len(p.calls) != 2 {
		t.Fatalf("player got %d calls, want the two cues", len(p.calls))
	}
	for i, hz := range []int{CueStartHz, CueEndHz} {
		c := p.calls[i]
		if len(c) != CueLength*16 {
			t.Errorf("cue %d: %d samples, want %d", i, len(c), CueLength*16)
		}
		crossings, peak := 0, 0
		for j := range c {
			if j > 0 && (c[j-1] < 0) != (c[j] < 0) {
				crossings++
			}
			peak = max(peak, abs(int(c[j])))
		}
		// Two crossings a period.
		if want := 2 * hz * CueLength / 1000; crossings < want-2 || crossings > want+2 {
			t.Errorf("cue %d: %d sign changes, want about %d (%d Hz)", i, crossings, want, hz)
		}
		if peak < 8000 || peak > 12000 {
			t.Errorf("cue %d: peak %d, want about a third of full scale", i, peak)
		}
		if first, last := abs(int(c[0])), abs(int(c[len(c)-1])); first > 100 || last > 100 {
			t.Errorf("cue %d starts at %d and ends at %d: not faded", i, first, last)
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
