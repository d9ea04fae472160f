package child

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/typewire"
)

// fakeTypeChild is a typing child in sh: it says it is ready with the x11
// route, then answers each request line as answer says (a sh snippet run
// with the request's id in $id).
func fakeTypeChild(answer string) []string {
	return []string{"/bin/sh", "-c", `
eval "echo '{\"backends\":[\"x11\",\"clipboard\"],\"route\":\"x11\",\"why\":\"an X11 session\"}' >&$YAZ_READY_FD"
eval "exec $YAZ_READY_FD>&-"
while IFS= read -r line; do
	id=${line#*\"id\":\"}; id=${id%%\"*}
	` + answer + `
done`}
}

// runTyper supervises a Typer of argv until the test ends.
func runTyper(t *testing.T, argv []string, bound time.Duration) *Typer {
	t.Helper()
	ty := NewTyper(supervise.Spec{Name: "type", Argv: argv, BackoffBase: 10 * time.Millisecond, StopGrace: time.Second}, nil, slog.New(slog.DiscardHandler))
	ty.bound = func(int) time.Duration { return bound }
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = ty.Run(ctx) })
	t.Cleanup(func() {
		ty.Close()
		cancel()
		testwait.Group(t, &wg, "the typing child's supervision")
	})
	ty.Configure("auto", 3000)
	r, err := ty.Open(testwait.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if r.Route != "x11" || len(r.Backends) != 2 {
		t.Fatalf("Open = %+v, want the x11 route of the readiness line", r)
	}
	return ty
}

func TestTyperOutcomes(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer string
		want   error // nil: typed
		cause  string
	}{
		{"typed", `echo "{\"id\":\"$id\",\"outcome\":\"typed\",\"backend\":\"x11\"}"`, nil, ""},
		{"pasted", `echo "{\"id\":\"$id\",\"outcome\":\"pasted\",\"backend\":\"portal\"}"`, typewire.ErrPasted, ""},
		{"no target", `echo "{\"id\":\"$id\",\"outcome\":\"no_target\",\"backend\":\"x11\"}"`, typewire.ErrNoTarget, ""},
		{"partial", `echo "{\"id\":\"$id\",\"outcome\":\"partial\",\"cause\":\"focus_moved\",\"arrived\":3,\"chars\":5}"`, typewire.ErrPartial, "focus_moved"},
		{"notification first", `echo '{"notify":"portal_consent"}'; echo "{\"id\":\"$id\",\"outcome\":\"typed\",\"backend\":\"x11\"}"`, nil, ""},
		// A child that never answers is killed and started again.
		{"hung", `:`, typewire.ErrFailed, typewire.CauseTimeout},
		// One that ends before it answers: child_gone, never typed.
		{"dies", `exit 3`, typewire.ErrFailed, typewire.CauseChildGone},
	} {
		t.Run(c.name, func(t *testing.T) {
			ty := runTyper(t, fakeTypeChild(c.answer), 2*time.Second)
			pid := ty.Status().PID
			used, err := ty.Type(testwait.Context(t), "hello")
			switch {
			case c.want == nil && err != nil:
				t.Fatalf("Type = %q, %v; want typed", used, err)
			case c.want != nil && !errors.Is(err, c.want):
				t.Fatalf("Type = %q, %v; want %v", used, err, c.want)
			}
			var te *typewire.Error
			if c.cause != "" && (!errors.As(err, &te) || te.Event.Cause != c.cause) {
				t.Fatalf("Type = %v, want the cause %s", err, c.cause)
			}
			if c.cause == typewire.CauseTimeout || c.cause == typewire.CauseChildGone {
				// Started again, and the new child takes texts.
				if _, err := ty.Open(testwait.Context(t)); err != nil {
					t.Fatal(err)
				}
				if st := ty.Status(); st.PID == pid || st.Restarts < 1 {
					t.Errorf("after %s the child is %+v, want a new start", c.name, st)
				}
			}
		})
	}
}

// A reload that changes the route restarts the child with it; Open waits
// for the start made with the new settings.
func TestTyperConfigureRestarts(t *testing.T) {
	ty := runTyper(t, fakeTypeChild(`echo "{\"id\":\"$id\",\"outcome\":\"typed\"}"`), 5*time.Second)
	pid := ty.Status().PID
	ty.Configure("x11", 3000)
	if _, err := ty.Open(testwait.Context(t)); err != nil {
		t.Fatal(err)
	}
	if ty.Status().PID == pid {
		t.Errorf("the child was not started again for the new route")
	}
	if got := ty.argvFor(0); got[len(got)-2] != "--backend=x11" {
		t.Errorf("argv = %q, want --backend=x11", got)
	}
	ty.Configure("x11", 3000) // unchanged: no restart
	if _, err := ty.Open(testwait.Context(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := ty.Type(testwait.Context(t), "hi"); err != nil {
		t.Fatalf("Type after the reload = %v", err)
	}
}

// A caller that gives up (the daemon stopping) ends the text as
// interrupted, not as the child's timeout, and the child is not restarted.
func TestTyperCallerGivesUp(t *testing.T) {
	ty := runTyper(t, fakeTypeChild(`:`), time.Hour)
	before := ty.Status() // a start made with stale settings restarts once
	pid := before.PID
	ctx, cancel := context.WithCancel(testwait.Context(t))
	res := make(chan error, 1)
	go func() { _, err := ty.Type(ctx, "hello"); res <- err }()
	cancel()
	err := testwait.Recv(t, res, "Type after the caller gave up")
	var te *typewire.Error
	if !errors.As(err, &te) || te.Event.Cause != typewire.CauseInterrupted {
		t.Fatalf("Type = %v, want failed, interrupted", err)
	}
	if st := ty.Status(); st.PID != pid || st.Restarts != before.Restarts {
		t.Errorf("the child after the caller gave up: %+v, want the same start", st)
	}
}
