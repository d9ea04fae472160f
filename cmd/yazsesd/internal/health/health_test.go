package health

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/audit"
)

// reports records what a Health reported.
type reports struct {
	events []audit.Event
	notes  []string
	lines  []string
}

func (r *reports) Audit(e audit.Event) { r.events = append(r.events, e) }
func (r *reports) Notify(kind string)  { r.notes = append(r.notes, kind) }
func (r *reports) Line(line string)    { r.lines = append(r.lines, line) }

// health: READY waits for every boot child to settle (up, or failed); the
// line names each child that is down or restarting, with its own reason;
// a child left down (supervise.State.Failed) is logged and notified
// once; one that stopped is neither. (Its down channel is the child
// end's: child.TestProcessDown.)
func TestHealth(t *testing.T) {
	r := &reports{}
	h := New(r, nil, []string{"gate", "speak", "decode", "capture"}, "gate", "speak", "decode")
	settled := func() bool {
		select {
		case <-h.settled:
			return true
		default:
			return false
		}
	}
	st := func(s supervise.State, cause, reason, exit string) supervise.Status {
		return supervise.Status{State: s, Cause: cause, Reason: reason, LastExit: exit}
	}
	h.changed("gate", st(supervise.StateStarting, "", "", ""))
	h.changed("gate", st(supervise.StateRunning, "", "", ""))
	h.changed("speak", st(supervise.StateRunning, "", "", ""))
	h.changed("capture", st(supervise.StateBackoff, "", "", "exit 1")) // not a boot child
	if settled() || h.Summary() != "capture: restarting after exit 1" {
		t.Errorf("before decode settled: settled %v, line %q", settled(), h.Summary())
	}
	h.changed("capture", st(supervise.StateStopped, "", "", "")) // idle between holds
	if settled() || h.Summary() != "starting" {
		t.Errorf("line %q, want starting", h.Summary())
	}
	const msg = "model not found: /m/ggml-base.en.bin — fetch one with yaz-fetch-model base.en"
	h.changed("decode", st(supervise.StateStarting, "", "", ""))
	h.changed("decode", st(supervise.StateExited, "model_missing", msg, "exit 125"))
	h.changed("decode", st(supervise.StateExited, "model_missing", msg, "exit 125")) // again: no second note
	if !settled() {
		t.Error("not settled once decode exited")
	}
	if got := h.Summary(); got != "decode: "+msg {
		t.Errorf("line %q, want the decoder's message", got)
	}
	if diff := cmp.Diff([]string{"model_missing"}, r.notes); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
	if want := []string{"starting", "capture: restarting after exit 1", "starting", "decode: " + msg}; !cmp.Equal(r.lines, want) {
		t.Errorf("health lines sent %q, want %q", r.lines, want)
	}
	h.changed("speak", st(supervise.StateCrashLoop, "", "", "not ready"))
	if got, want := h.Summary(), "speak: kept failing (last: not ready) and is left down; see its log lines; decode: "+msg; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	if diff := cmp.Diff([]string{"model_missing", "child_down"}, r.notes); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
}

// TestAudited: a child left down for a cause it named (exit 125) is
// audited once, child.exited with that cause (a cause that is not a
// closed-vocabulary word is left out); a crash loop is not audited here
// (the daemon's Run audits child.crashloop), nor is a stop.
func TestAudited(t *testing.T) {
	r := &reports{}
	h := New(r, nil, []string{"decode", "vad", "speak"})
	h.changed("decode", supervise.Status{State: supervise.StateExited, Cause: "model_missing", Reason: "model not found", LastExit: "exit 125"})
	h.changed("decode", supervise.Status{State: supervise.StateExited, Cause: "model_missing", Reason: "model not found", LastExit: "exit 125"})
	h.changed("vad", supervise.Status{State: supervise.StateExited, Cause: "Not A Word!", Reason: "odd", LastExit: "exit 125"})
	h.changed("speak", supervise.Status{State: supervise.StateCrashLoop, LastExit: "exit 1"})
	h.changed("speak", supervise.Status{State: supervise.StateStopped})
	want := []audit.Event{
		{Kind: "child.exited", Child: "decode", Reason: "model_missing"},
		{Kind: "child.exited", Child: "vad"},
	}
	if diff := cmp.Diff(want, r.events); diff != "" {
		t.Errorf("audit events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"model_missing", "child_down", "child_down"}, r.notes); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
}

// TestReason: a child's own reason first, else what its state says.
func TestReason(t *testing.T) {
	for _, c := range []struct {
		st   supervise.Status
		want string
	}{
		{supervise.Status{State: supervise.StateExited, Reason: "model not found: /m"}, "model not found: /m"},
		{supervise.Status{State: supervise.StateExited, LastExit: "exit 125"}, "exited (exit 125) and asked not to be restarted; see its log lines"},
		{supervise.Status{State: supervise.StateCrashLoop, LastExit: "signal: killed"}, "kept failing (last: signal: killed) and is left down; see its log lines"},
		{supervise.Status{State: supervise.StateBackoff, LastExit: "exit 1"}, "restarting after exit 1"},
		{supervise.Status{State: supervise.StateStopped}, "stopped"},
	} {
		if got := Reason(c.st); got != c.want {
			t.Errorf("Reason(%+v) = %q, want %q", c.st, got, c.want)
		}
	}
}

// TestAwaitSettled: ready is called with the line once every boot child
// settled, not before; with no boot child at once; never once ctx ended.
func TestAwaitSettled(t *testing.T) {
	h := New(&reports{}, nil, []string{"gate", "capture"}, "gate")
	got := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); h.AwaitSettled(ctx, func(s string) { got <- s }) }()
	h.changed("capture", supervise.Status{State: supervise.StateRunning}) // not a boot child
	select {
	case s := <-got:
		t.Fatalf("ready (%q) before the gate settled", s)
	default:
	}
	h.changed("gate", supervise.Status{State: supervise.StateRunning})
	if s := testwait.Recv(t, got, "ready once the gate runs"); s != "ready" {
		t.Errorf("ready with %q, want ready", s)
	}
	testwait.Closed(t, done, "AwaitSettled to return")

	none := New(&reports{}, nil, []string{"capture"})
	none.AwaitSettled(ctx, func(s string) { got <- s })
	if s := testwait.Recv(t, got, "ready with no boot child"); s != "ready" {
		t.Errorf("ready with %q", s)
	}

	gone, stop := context.WithCancel(context.Background())
	stop()
	New(&reports{}, nil, []string{"gate"}, "gate").AwaitSettled(gone, func(s string) { t.Errorf("ready (%q) after ctx ended", s) })
}
