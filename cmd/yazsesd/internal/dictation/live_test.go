package dictation

import (
	"context"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/yazses/yazses/cmd/yazsesd/internal/hold"
	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/typewire"
)

// window is a typing route as live text meets it: it records what
// arrived, and answers each text with the next scripted outcome (typed
// when none is left). A scripted partial delivers its Arrived characters
// first; gate, when set, holds each text until the test lets it go.
type window struct {
	mu       sync.Mutex
	arrived  strings.Builder
	texts    []string
	outcomes []typewire.Event
	// focus names the focused window at each text (an x11 route); the
	// last one stays; none: a route that names no window.
	focus   []string
	gate    chan struct{}
	started chan struct{}
	pieces  []daemonapi.WatchPieces
	notes   []string
	events  []audit.Event
}

func (w *window) Type(ctx context.Context, text string) (string, error) {
	if w.started != nil {
		w.started <- struct{}{}
	}
	if w.gate != nil {
		<-w.gate
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.texts = append(w.texts, text)
	ev := typewire.Event{Outcome: typewire.OutcomeTyped}
	if len(w.outcomes) > 0 {
		ev, w.outcomes = w.outcomes[0], w.outcomes[1:]
	}
	if len(w.focus) > 0 {
		focused := w.focus[min(len(w.texts), len(w.focus))-1]
		tg := typewire.TargetOf(ctx)
		if tg != nil && tg.Want != "" && tg.Want != focused {
			ev = typewire.Event{Outcome: typewire.OutcomeFailed, Cause: typewire.CauseFocusMoved} // as yaz-type --serve answers
		} else if tg != nil {
			tg.Got = focused
		}
	}
	switch ev.Outcome {
	case typewire.OutcomeTyped, typewire.OutcomePasted:
		w.arrived.WriteString(text)
	case typewire.OutcomePartial:
		w.arrived.WriteString(string([]rune(text)[:ev.Arrived]))
	}
	ev.Chars = utf8.RuneCountInString(text)
	return "x11", ev.Err()
}

func (w *window) Audit(e audit.Event) { w.mu.Lock(); w.events = append(w.events, e); w.mu.Unlock() }
func (w *window) Notify(kind string)  { w.mu.Lock(); w.notes = append(w.notes, kind); w.mu.Unlock() }
func (w *window) Typing()             {}
func (w *window) Pieces(p daemonapi.WatchPieces) {
	w.mu.Lock()
	w.pieces = append(w.pieces, p)
	w.mu.Unlock()
}
func (w *window) got() string { w.mu.Lock(); defer w.mu.Unlock(); return w.arrived.String() }

// TestLive: the pieces decided while the key is held are typed in order,
// each shaped on its own and followed by one space; the rest follows at
// the end with the separator; what arrived is the hold's text (`last`)
// and the separator, and no byte below 0x20 or DEL ever goes out. A piece
// that does not arrive whole stops the typing: nothing more is typed, the
// whole text is kept, and the outcome counts what arrived.
func TestLive(t *testing.T) {
	reps := []config.Replacement{{From: "full stop", To: "."}, {From: "yaz says", To: "YazSes"}}
	partial := func(n int) typewire.Event {
		return typewire.Event{Outcome: typewire.OutcomePartial, Cause: typewire.CauseFocusMoved, Arrived: n}
	}
	for _, tc := range []struct {
		name     string
		end      hold.Outcome // the hold's; "": decoded
		pieces   []string     // raw, as the hold hands them out
		rest     string       // raw
		outcomes []typewire.Event
		focus    []string
		sep      string
		// want: what arrived, the text kept, the outcome, arrived count,
		// cause, notifications, the watch stream's last pieces state.
		arrived, last, outcome string
		count                  int
		cause                  string
		notes                  []string
		watch                  daemonapi.WatchPieces
	}{
		{name: "pieces then the rest", pieces: []string{"And so my fellow Americans,", "ask not full stop"}, rest: "what your country",
			sep: " ", arrived: "And so my fellow Americans, ask not . what your country ", last: "And so my fellow Americans, ask not . what your country",
			outcome: "typed", watch: daemonapi.WatchPieces{Decided: 2, Typed: 2}},
		{name: "a rule across two pieces is not applied", pieces: []string{"hello yaz", "says hi"},
			sep: " ", arrived: "hello yaz says hi ", last: "hello yaz says hi", outcome: "typed", watch: daemonapi.WatchPieces{Decided: 2, Typed: 2}},
		{name: "control bytes never go out", pieces: []string{"one\ttwo\x7f\x08", "three\nfour\x1b[2J"}, rest: "five\r\n",
			sep: "", arrived: "one two three four[2J five", last: "one two three four[2J five", outcome: "typed", watch: daemonapi.WatchPieces{Decided: 2, Typed: 2}},
		{name: "no rest: the space after the last piece", pieces: []string{"alpha", "beta"},
			sep: " ", arrived: "alpha beta ", last: "alpha beta", outcome: "typed", watch: daemonapi.WatchPieces{Decided: 2, Typed: 2}},
		{name: "the focus moves during the second piece", pieces: []string{"alpha", "beta gamma", "delta"}, rest: "epsilon",
			outcomes: []typewire.Event{{Outcome: typewire.OutcomeTyped}, partial(3)},
			sep:      " ", arrived: "alpha bet", last: "alpha beta gamma delta epsilon", outcome: "partial", count: 9, cause: typewire.CauseFocusMoved,
			notes: []string{"typing_failed"}, watch: daemonapi.WatchPieces{Decided: 3, Typed: 1, Stopped: true}},
		{name: "pieces typed, the hold too short in the end", end: hold.TooShort, pieces: []string{"alpha"},
			sep: " ", arrived: "alpha ", last: "alpha", outcome: "typed", watch: daemonapi.WatchPieces{Decided: 1, Typed: 1}},
		{name: "the focus moves between two pieces", pieces: []string{"alpha", "beta", "gamma"}, rest: "delta",
			focus: []string{"1", "2", "1"}, // back in time for the third: still nothing more
			sep:   " ", arrived: "alpha ", last: "alpha beta gamma delta", outcome: "partial", count: 6, cause: typewire.CauseFocusMoved,
			notes: []string{"typing_failed"}, watch: daemonapi.WatchPieces{Decided: 3, Typed: 1, Stopped: true}},
		{name: "the focus moves before the rest", pieces: []string{"alpha", "beta"}, rest: "gamma",
			focus: []string{"1", "1", "2"},
			sep:   " ", arrived: "alpha beta ", last: "alpha beta gamma", outcome: "partial", count: 11, cause: typewire.CauseFocusMoved,
			notes: []string{"typing_failed"}, watch: daemonapi.WatchPieces{Decided: 2, Typed: 2}},
		{name: "no window has the focus at the second piece", pieces: []string{"alpha", "beta"}, rest: "gamma",
			outcomes: []typewire.Event{{Outcome: typewire.OutcomeTyped}, {Outcome: typewire.OutcomeNoTarget}},
			sep:      " ", arrived: "alpha ", last: "alpha beta gamma", outcome: "partial", count: 6, cause: typewire.CauseFocusMoved,
			notes: []string{"typing_failed"}, watch: daemonapi.WatchPieces{Decided: 2, Typed: 1, Stopped: true}},
		{name: "the rest finds no window", pieces: []string{"alpha"}, rest: "beta",
			outcomes: []typewire.Event{{Outcome: typewire.OutcomeTyped}, {Outcome: typewire.OutcomeNoTarget}},
			sep:      " ", arrived: "alpha ", last: "alpha beta", outcome: "partial", count: 6, cause: typewire.CauseFocusMoved,
			notes: []string{"typing_failed"}, watch: daemonapi.WatchPieces{Decided: 1, Typed: 1}},
		{name: "nothing arrives: no window at the first piece", pieces: []string{"alpha", "beta"}, rest: "gamma",
			outcomes: []typewire.Event{{Outcome: typewire.OutcomeNoTarget}},
			sep:      " ", arrived: "", last: "alpha beta gamma", outcome: "kept",
			notes: []string{"no_target"}, watch: daemonapi.WatchPieces{Decided: 2, Stopped: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &window{outcomes: tc.outcomes, focus: tc.focus}
			env := Env{Typer: w, Replace: reps, Separator: tc.sep, Report: w, Decoder: &record{}}
			l := StartLive(context.Background(), env)
			for _, p := range tc.pieces {
				l.Piece(p)
			}
			lv := l.Close()
			env.Live = &lv
			end := tc.end
			if end == "" {
				end = hold.Decoded
			}
			res, last := Finish(context.Background(), env, hold.Result{Why: hold.Released, Outcome: end,
				Pieces: tc.pieces, Rest: tc.rest, Text: strings.Join(append(append([]string(nil), tc.pieces...), tc.rest), " ")})
			if got := w.got(); got != tc.arrived {
				t.Errorf("arrived %q, want %q", got, tc.arrived)
			}
			if last != tc.last {
				t.Errorf("last %q, want %q", last, tc.last)
			}
			if res.Outcome == "typed" && w.got() != Separated(last, tc.sep) && !strings.HasSuffix(w.got(), " ") {
				t.Errorf("arrived %q is not last and the separator", w.got())
			}
			for _, b := range []byte(w.got()) {
				if b < 0x20 || b == 0x7f {
					t.Errorf("byte %#x arrived", b)
				}
			}
			if res.Outcome != tc.outcome || res.Arrived != tc.count || res.Cause != tc.cause || res.Chars != utf8.RuneCountInString(tc.last) {
				t.Errorf("result %+v; want %s, arrived %d, cause %q, chars %d", res, tc.outcome, tc.count, tc.cause, utf8.RuneCountInString(tc.last))
			}
			if diff := cmp.Diff(tc.notes, w.notes); diff != "" {
				t.Errorf("notifications (-want +got):\n%s", diff)
			}
			if n := len(w.pieces); n == 0 || w.pieces[n-1] != tc.watch {
				t.Errorf("watch pieces %+v; want last %+v", w.pieces, tc.watch)
			}
			if len(w.events) != 1 || w.events[0].Kind != "dictation."+tc.outcome {
				t.Errorf("audit %+v; want one dictation.%s", w.events, tc.outcome)
			}
		})
	}
}

// TestLiveCancel: a cancel stops what is not typed yet; the piece being
// typed is finished, and what was typed stays.
func TestLiveCancel(t *testing.T) {
	w := &window{gate: make(chan struct{}), started: make(chan struct{})}
	l := StartLive(context.Background(), Env{Typer: w, Report: w})
	l.Piece("alpha")
	<-w.started // the first piece is being typed
	l.Piece("beta")
	l.Piece("gamma")
	l.stop(true)         // the cancel, while the first piece is typed
	w.gate <- struct{}{} // the first piece ends
	lv := l.Cancel()
	if got := w.got(); got != "alpha " {
		t.Errorf("arrived %q, want only the piece being typed at the cancel", got)
	}
	if lv.Typed != 1 || lv.Arrived != 6 || len(lv.Texts) != 3 {
		t.Errorf("report %+v; want 1 typed, 6 arrived, 3 texts", lv)
	}
}

// The live typing's goroutine ends with Close or Cancel.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// preeditWindow is a window whose route shows a preedit (IBus): a text
// typed takes the preedit's place, as the typing child does.
type preeditWindow struct {
	*window
	pmu       sync.Mutex
	ops       []string // "preedit TEXT" and "type TEXT", in order
	shown     string   // the preedit shown now
	fail      bool     // answers every preedit no_preedit
	preedited chan string
}

func (p *preeditWindow) Preedits() bool { return true }
func (p *preeditWindow) Preedit(_ context.Context, text string) error {
	p.pmu.Lock()
	defer p.pmu.Unlock()
	p.ops = append(p.ops, "preedit "+text)
	if p.fail {
		return typewire.Event{Outcome: typewire.OutcomeFailed, Cause: typewire.CauseNoPreedit}.Err()
	}
	p.shown = text
	p.preedited <- text
	return nil
}
func (p *preeditWindow) Type(ctx context.Context, text string) (string, error) {
	used, err := p.window.Type(ctx, text)
	p.pmu.Lock()
	p.ops = append(p.ops, "type "+text)
	p.shown = ""
	p.pmu.Unlock()
	return used, err
}
func (p *preeditWindow) state() ([]string, string) {
	p.pmu.Lock()
	defer p.pmu.Unlock()
	return append([]string(nil), p.ops...), p.shown
}

// TestLivePreedit: a guess at the piece being spoken shows as the
// preedit, shaped as a piece is; the piece takes its place; the release
// (Clear) takes a preedit still shown away, and so does a cancel; no
// preedit is ever left shown, nothing of one arrives as text, and a route
// that shows none is asked once in a hold.
func TestLivePreedit(t *testing.T) {
	reps := []config.Replacement{{From: "full stop", To: "."}}
	newWindow := func() *preeditWindow {
		return &preeditWindow{window: &window{}, preedited: make(chan string, 16)}
	}
	t.Run("guess, piece, guess, release", func(t *testing.T) {
		w := newWindow()
		l := StartLive(context.Background(), Env{Typer: w, Report: w, Replace: reps})
		l.Tentative("ask not full stop")
		if got := <-w.preedited; got != "ask not ." {
			t.Errorf("preedit %q, want the guess shaped: %q", got, "ask not .")
		}
		l.Piece("ask not full stop what")
		l.Tentative("your country")
		<-w.preedited
		l.Clear()
		if got := <-w.preedited; got != "" {
			t.Errorf("at the release the preedit shows %q, want it taken away", got)
		}
		l.Close()
		ops, shown := w.state()
		want := []string{"preedit ask not .", "type ask not . what ", "preedit your country", "preedit "}
		if diff := cmp.Diff(want, ops); diff != "" {
			t.Errorf("ops (-want +got):\n%s", diff)
		}
		if shown != "" || w.got() != "ask not . what " {
			t.Errorf("preedit left %q, arrived %q; want none and only the piece", shown, w.got())
		}
	})
	t.Run("cancel takes the preedit away", func(t *testing.T) {
		w := newWindow()
		l := StartLive(context.Background(), Env{Typer: w, Report: w})
		l.Piece("alpha")
		l.Tentative("beta")
		<-w.preedited
		l.Cancel()
		ops, shown := w.state()
		if shown != "" || ops[len(ops)-1] != "preedit " {
			t.Errorf("after a cancel: ops %q, preedit %q; want it taken away last", ops, shown)
		}
		if w.got() != "alpha " {
			t.Errorf("arrived %q, want the piece typed before the cancel", w.got())
		}
	})
	t.Run("a piece drops the guesses queued before it", func(t *testing.T) {
		w := newWindow()
		w.gate, w.started = make(chan struct{}), make(chan struct{})
		l := StartLive(context.Background(), Env{Typer: w, Report: w})
		l.Piece("alpha")
		<-w.started // typing alpha
		l.Tentative("b")
		l.Tentative("be")
		l.Piece("beta")
		w.gate <- struct{}{}
		<-w.started
		w.gate <- struct{}{}
		l.Close()
		ops, _ := w.state()
		if diff := cmp.Diff([]string{"type alpha ", "type beta "}, ops); diff != "" {
			t.Errorf("ops (-want +got):\n%s", diff)
		}
	})
	t.Run("a route that shows none is asked once", func(t *testing.T) {
		w := newWindow()
		w.fail = true
		l := StartLive(context.Background(), Env{Typer: w, Report: w})
		l.Tentative("one")
		l.Piece("alpha") // typed after the failed preedit: it was asked
		l.Tentative("two")
		l.Close()
		ops, _ := w.state()
		if n := strings.Count(strings.Join(ops, "|"), "preedit"); n > 1 {
			t.Errorf("ops %q: asked %d times, want at most once", ops, n)
		}
	})
	t.Run("a route without preedit is never asked", func(t *testing.T) {
		w := &window{}
		l := StartLive(context.Background(), Env{Typer: w, Report: w})
		l.Tentative("one")
		l.Piece("alpha")
		l.Clear()
		l.Close()
		if w.got() != "alpha " {
			t.Errorf("arrived %q", w.got())
		}
	})
}
