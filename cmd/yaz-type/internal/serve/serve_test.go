package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/typewire"
)

// typer answers each text by its first word, and blocks on "block" until
// released.
type typer struct {
	started chan string
	release chan struct{}
}

func (f *typer) Type(ctx context.Context, text string) (string, error) {
	f.started <- text
	switch strings.Fields(text)[0] {
	case "block":
		<-f.release
		return "x11", nil
	case "pasted":
		return "portal", fmt.Errorf("portal: %w", backend.ErrPasted)
	case "nofocus":
		return "x11", fmt.Errorf("x11: %w", backend.ErrNoTarget)
	case "moved":
		return "x11", fmt.Errorf("x11: %w", &backend.PartialError{Arrived: 2, Cause: "focus_moved", Err: io.EOF})
	case "window": // window 42 has the focus, as the x11 route names it
		if tg := typewire.TargetOf(ctx); tg != nil {
			if tg.Want != "" && tg.Want != "42" {
				return "x11", fmt.Errorf("x11: %w", &backend.PartialError{Cause: "focus_moved", Err: io.EOF})
			}
			tg.Got = "42"
		}
	}
	return "x11", nil
}

// Preedit shows a preedit, except "none", as on a route without one.
func (f *typer) Preedit(ctx context.Context, text string) (string, error) {
	f.started <- "preedit " + text
	if text == "none" {
		return "x11", fmt.Errorf("x11: %w", backend.ErrNoPreedit)
	}
	return "ibus", nil
}

func TestServe(t *testing.T) {
	in, inW := io.Pipe()
	out, outW := io.Pipe()
	f := &typer{started: make(chan string, 8), release: make(chan struct{})}
	status := func() typewire.Status { return typewire.Status{Route: "x11", Backends: []string{"x11"}} }
	srv := New(f, status, outW, slog.New(slog.DiscardHandler))
	var wg sync.WaitGroup
	var serveErr error
	wg.Go(func() { serveErr = srv.Serve(context.Background(), in) })
	events := make(chan typewire.Event, 16)
	wg.Go(func() {
		dec := json.NewDecoder(out)
		for {
			var ev typewire.Event
			if dec.Decode(&ev) != nil {
				close(events)
				return
			}
			events <- ev
		}
	})
	send := func(req typewire.Request) {
		b, _ := json.Marshal(req)
		if _, err := inW.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	send(typewire.Request{ID: "1", Op: typewire.OpType, Text: "block me"})
	testwait.Recv(t, f.started, "the first text typed")
	// A status is answered while a text is being typed.
	send(typewire.Request{ID: "2", Op: typewire.OpStatus})
	if ev := testwait.Recv(t, events, "the status"); ev.ID != "2" || ev.Status == nil || ev.Status.Route != "x11" {
		t.Fatalf("status answer = %+v", ev)
	}
	srv.Notify("portal_consent")
	if ev := testwait.Recv(t, events, "the notification"); ev.ID != "" || ev.Notify != "portal_consent" {
		t.Fatalf("notification = %+v", ev)
	}
	for i, text := range []string{"pasted a", "nofocus b", "moved c", "typed d"} {
		send(typewire.Request{ID: fmt.Sprint(3 + i), Op: typewire.OpType, Text: text})
	}
	// Preedits are taken in order with the texts (one after the texts
	// before it), and answered shown or no_preedit.
	send(typewire.Request{ID: "p1", Op: typewire.OpPreedit, Text: "tentative"})
	send(typewire.Request{ID: "p2", Op: typewire.OpPreedit, Text: "none"})
	// A text bound to a window goes there or nowhere; the event names
	// the window a text went to.
	send(typewire.Request{ID: "8", Op: typewire.OpType, Text: "window e", Window: "42"})
	send(typewire.Request{ID: "9", Op: typewire.OpType, Text: "window f", Window: "7"})
	send(typewire.Request{ID: "7", Op: "dance"})
	if ev := testwait.Recv(t, events, "the unknown op's answer"); ev.ID != "7" || ev.Outcome != typewire.OutcomeFailed {
		t.Fatalf("unknown op = %+v", ev)
	}
	close(f.release)
	inW.Close() // the texts read are typed before Serve returns
	want := []typewire.Event{
		{ID: "1", Outcome: "typed", Backend: "x11", Chars: 8},
		{ID: "3", Outcome: "pasted", Backend: "portal", Chars: 8},
		{ID: "4", Outcome: "no_target", Backend: "x11", Chars: 9},
		{ID: "5", Outcome: "partial", Backend: "x11", Cause: "focus_moved", Chars: 7, Arrived: 2},
		{ID: "6", Outcome: "typed", Backend: "x11", Chars: 7},
		{ID: "p1", Outcome: "shown", Backend: "ibus"},
		{ID: "p2", Outcome: "failed", Backend: "x11", Cause: "no_preedit"},
		{ID: "8", Outcome: "typed", Backend: "x11", Chars: 8, Window: "42"},
		{ID: "9", Outcome: "failed", Backend: "x11", Cause: "focus_moved", Chars: 8},
	}
	for _, w := range want {
		if ev := testwait.Recv(t, events, "an outcome"); ev != w {
			t.Errorf("outcome = %+v, want %+v", ev, w)
		}
	}
	outW.Close()
	// Everything was taken in the order it was sent.
	var order []string
	for len(f.started) > 0 {
		order = append(order, <-f.started)
	}
	if got, want := strings.Join(order, "|"), "pasted a|nofocus b|moved c|typed d|preedit tentative|preedit none|window e|window f"; got != want {
		t.Errorf("taken in the order %q, want %q", got, want)
	}
	testwait.Group(t, &wg, "Serve and the reader")
	if serveErr != nil {
		t.Errorf("Serve = %v at EOF, want nil", serveErr)
	}
}
