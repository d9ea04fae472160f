package e2e

import (
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
)

// longQuestion takes several seconds to speak.
const longQuestion = "I have finished the migration of the billing database and the tests are green; " +
	"the deployment window opens in ten minutes and the rollback plan is ready; shall I go ahead?"

// settleFDs waits until the daemon holds no more than want descriptors
// again (a connection closing can make it one fewer, never more).
func (d *daemon) settleFDs(want int) {
	d.T.Helper()
	d.Await(5*time.Second, func() bool { return d.FDs() <= want })
	if got := d.FDs(); got > want {
		d.T.Errorf("daemon holds %d file descriptors after the recovery, %d before: a leak", got, want)
	}
}

// TestChildKilledDuringAskRecovers: SIGKILL of each child while a question
// is being handled. The daemon restarts the child, the call ends with a
// result from the closed vocabulary, the next question works (or, for the
// gate, is refused: a killed gate never hands out a fresh budget), no
// descriptor leaks, and no process outlives the daemon (checked when it
// stops).
func TestChildKilledDuringAskRecovers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		child string
		cfg   func() toml
		env   []string
		// kill waits for the moment to kill the child.
		kill func(d *daemon)
		// after checks the result of the killed ask.
		after func(t *testing.T, r daemonapi.AskResult)
	}{
		{
			child: "gate",
			cfg:   func() toml { return baseConfig().With("budget.ask_human_per_hour", "3") },
			kill:  func(d *daemon) { d.WaitFor(20*time.Second, "the question", func() bool { return d.Status().Asking }) },
			after: func(t *testing.T, r daemonapi.AskResult) {
				if r.Result != daemonapi.Answered && r.Result != daemonapi.NoAnswer {
					t.Errorf("killed-gate ask = %+v, want the spoken question answered or not", r)
				}
			},
		},
		{
			child: "speak",
			cfg:   func() toml { return baseConfig().With("budget.ask_human_per_hour", "3") },
			kill: func(d *daemon) {
				waitSpoken(d, 1) // playback started: the question is audible
			},
			after: func(t *testing.T, r daemonapi.AskResult) {
				if r.Result != daemonapi.NoAnswer || r.Reason != daemonapi.ReasonSpeakFailed {
					t.Errorf("killed-speaker ask = %+v, want no_answer speak_failed", r)
				}
			},
		},
		{
			child: "decode",
			cfg: func() toml {
				return baseConfig().With("budget.ask_human_per_hour", "3").
					With("children.decode", arr(bin("fakedecode")))
			},
			env: []string{"YAZ_FAKE_DELAY_MS=3000", "YAZ_FAKE_TEXT=go ahead"},
			kill: func(d *daemon) {
				d.WaitLog(40*time.Second, "the answer's decoding", func(m map[string]any) bool {
					return m["child"] == "decode" && m["msg"] == "decoding utterance"
				})
			},
			after: func(t *testing.T, r daemonapi.AskResult) {
				if r.Result != daemonapi.Answered || r.Answer != "go ahead" {
					t.Errorf("killed-decoder ask = %+v, want answered on the restarted decoder", r)
				}
			},
		},
		{
			child: "capture",
			cfg:   func() toml { return baseConfig().With("budget.ask_human_per_hour", "3") },
			kill: func(d *daemon) {
				d.WaitFor(40*time.Second, "the microphone", func() bool { return d.Child("capture").State == "running" })
			},
			after: func(t *testing.T, r daemonapi.AskResult) {
				if r.Result != daemonapi.Answered && r.Result != daemonapi.NoAnswer {
					t.Errorf("killed-capture ask = %+v, want answered or no_answer", r)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.child, func(t *testing.T) {
			t.Parallel()
			d := startDaemon(t, tc.cfg(), tc.env...)
			fds := d.FDs()
			res := make(chan daemonapi.AskResult, 1)
			go func() { res <- d.Ask(longQuestion, 60) }()
			tc.kill(d)
			pid := d.PidOf(tc.child)
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatalf("kill %s: %v", tc.child, err)
			}
			var r daemonapi.AskResult
			select {
			case r = <-res:
			case <-time.After(90 * time.Second):
				t.Fatalf("ask did not end after %s was killed\n%s", tc.child, d.LogTail(40))
			}
			tc.after(t, r)
			if tc.child != "capture" { // on demand: restarted by the next ask
				d.WaitFor(20*time.Second, tc.child+" restarted", func() bool {
					c := d.Child(tc.child)
					return c.State == "running" && c.PID != pid && c.Restarts >= 1
				})
			}
			next := d.Ask("And the next one?", 30)
			if tc.child == "gate" {
				if next.Result != daemonapi.Refused || next.Reason != daemonapi.ReasonBudgetExhausted {
					t.Errorf("ask after the gate was killed = %+v, want refused: a restarted gate is fully spent", next)
				}
				if b := d.Budget(); !b.FailClosed || b.Used != b.PerHour {
					t.Errorf("budget after the gate was killed = %+v, want fail_closed and all 3 used", b)
				}
			} else if next.Result != daemonapi.Answered {
				t.Errorf("ask after %s was killed and restarted = %+v, want answered", tc.child, next)
			}
			d.settleFDs(fds)
		})
	}
}
