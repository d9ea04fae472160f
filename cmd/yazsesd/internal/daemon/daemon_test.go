package daemon

import (
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/lib/config"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestApplyReplacements(t *testing.T) {
	reps := []config.Replacement{{From: "yaz says", To: "YazSes"}, {From: "full stop", To: "."}, {From: "um", To: ""}}
	tests := []struct{ in, want string }{
		{"yaz says hello", "YazSes hello"},
		{"hello yaz says", "hello YazSes"},
		{"yaz sayss", "yaz sayss"},         // part of a longer word
		{"ayaz says", "ayaz says"},         // part of a longer word
		{"um, full stop um", ", . "},       // several, in order
		{"umbrella drum", "umbrella drum"}, // never inside words
		{"Grüße yaz says", "Grüße YazSes"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := applyReplacements(tt.in, reps); got != tt.want {
			t.Errorf("applyReplacements(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCleanText(t *testing.T) {
	for in, want := range map[string]string{
		" hello\nworld\r\n": "hello world",
		"a\tb\x00c":         "a bc", // NUL is dropped, as every rule of package untrusted does
		"Grüße ✓":           "Grüße ✓",
	} {
		if got := cleanText(in); got != want {
			t.Errorf("cleanText(%q) = %q, want %q", in, got, want)
		}
	}
}

// health: READY waits for every boot child to settle (up, or failed); the
// line names each child that is down or restarting, with its own reason;
// a child left down (supervise.State.Failed) is logged and notified
// once; one that stopped is neither. (Its down channel is the child
// end's: child.TestProcessDown.)
func TestHealth(t *testing.T) {
	var notes []string
	var lines []string
	d := &Daemon{log: slog.New(slog.DiscardHandler)}
	d.opt.Notify = func(kind string) { notes = append(notes, kind) }
	d.opt.Health = func(s string) { lines = append(lines, s) }
	d.cfg.Notify.Enabled = true
	h := newHealth(d, []string{"gate", "speak", "decode", "capture"}, "gate", "speak", "decode")
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
	if settled() || h.summary() != "capture: restarting after exit 1" {
		t.Errorf("before decode settled: settled %v, line %q", settled(), h.summary())
	}
	h.changed("capture", st(supervise.StateStopped, "", "", "")) // idle between holds
	if settled() || h.summary() != "starting" {
		t.Errorf("line %q, want starting", h.summary())
	}
	const msg = "model not found: /m/ggml-base.en.bin — fetch one with yaz-fetch-model base.en"
	h.changed("decode", st(supervise.StateStarting, "", "", ""))
	h.changed("decode", st(supervise.StateExited, "model_missing", msg, "exit 125"))
	h.changed("decode", st(supervise.StateExited, "model_missing", msg, "exit 125")) // again: no second note
	if !settled() {
		t.Error("not settled once decode exited")
	}
	if got := h.summary(); got != "decode: "+msg {
		t.Errorf("line %q, want the decoder's message", got)
	}
	if diff := cmp.Diff([]string{"model_missing"}, notes); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
	if want := []string{"starting", "capture: restarting after exit 1", "starting", "decode: " + msg}; !cmp.Equal(lines, want) {
		t.Errorf("health lines sent %q, want %q", lines, want)
	}
	h.changed("speak", st(supervise.StateCrashLoop, "", "", "not ready"))
	if got, want := h.summary(), "speak: kept failing (last: not ready) and is left down; see its log lines; decode: "+msg; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	if diff := cmp.Diff([]string{"model_missing", "child_down"}, notes); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
}
