package e2e

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/daemonapi"
)

// TestRefusedReloadShowsInStatus: a SIGHUP reload of a file with an error
// is refused, and `status` says so with the line of the problem ("config:
// reload refused at line N: …") instead of "ready" until a reload is
// taken; then it says "ready" again. (The refusal was only in the log.)
func TestRefusedReloadShowsInStatus(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	d := startDaemon(t, cfg)
	d.WaitFor(30*time.Second, "the daemon ready", func() bool { return d.Status().Health == "ready" })
	hup := func() {
		t.Helper()
		if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	d.WriteConfig(cfg.With("dictation.paste_over_chars", "-1"))
	line := 0
	data, _ := os.ReadFile(d.CfgPath)
	for i, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "paste_over_chars = ") {
			line = i + 1
		}
	}
	hup()
	d.WaitLog(10*time.Second, "the refused reload", func(m map[string]any) bool {
		return strings.Contains(m["msg"].(string), "reload refused")
	})
	want := "config: reload refused at line " + strconv.Itoa(line) + ": dictation.paste_over_chars: must be between 0 and 1000000, got -1"
	if h := d.Status().Health; line == 0 || h != want {
		t.Errorf("status health after a refused reload = %q, want %q", h, want)
	}
	d.WriteConfig(cfg.With("dictation.paste_over_chars", "200"))
	hup()
	d.WaitFor(10*time.Second, "the config.reloaded audit event", func() bool { return d.Count("config.reloaded", "") >= 1 })
	if h := d.Status().Health; h != "ready" {
		t.Errorf("status health after a good reload = %q, want ready", h)
	}
	for _, r := range d.LogRecords() {
		if r["msg"] == "reload: these settings need a restart of yazsesd" {
			t.Errorf("the reload of dictation.paste_over_chars said it needs a restart: %v", r)
		}
	}
}

// TestReloadOffStopsWaitingQuestions: five questions at once under a cap
// of five; while the first is spoken and four wait their turn, the file
// turns questions off (ask_human_per_hour = 0, or [mcp] ask_human =
// false) and SIGHUP reloads it. The four waiting are refused disabled and
// their reservations released: the first alone is spoken and charged. (All
// four were still spoken after config.reloaded.)
func TestReloadOffStopsWaitingQuestions(t *testing.T) {
	t.Parallel()
	for _, off := range []struct{ name, key, value string }{
		{"cap 0", "budget.ask_human_per_hour", "0"},
		{"ask_human off", "mcp.ask_human", "false"},
	} {
		t.Run(off.name, func(t *testing.T) {
			t.Parallel()
			cfg := baseConfig().With("budget.ask_human_per_hour", "5")
			d := startDaemon(t, cfg)
			ctx := testwait.Context(t)
			results := make(chan daemonapi.AskResult, 5)
			for i := range 5 {
				c := d.Client()
				go func() {
					r, err := c.AskHuman(ctx, daemonapi.AskParams{Question: longQuestion + " (" + strconv.Itoa(i) + ")", TimeoutS: 60})
					if err != nil {
						r = daemonapi.AskResult{Result: "error: " + daemonapi.Outcome(err.Error())}
					}
					results <- r
				}()
			}
			d.WaitFor(30*time.Second, "one question spoken and four waiting their turn", func() bool {
				st := d.Status()
				return st.Asking && st.Waiting == 4 && st.Budget.Used == 5
			})
			d.WriteConfig(cfg.With(off.key, off.value))
			if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			for range 4 {
				r := testwait.Recv(t, results, "a waiting question's result after the reload")
				if r.Result != daemonapi.Refused || r.Reason != daemonapi.ReasonDisabled {
					t.Errorf("a question waiting at the reload = %+v, want refused disabled", r)
				}
			}
			d.WaitFor(10*time.Second, "the config.reloaded audit event", func() bool { return d.Count("config.reloaded", "") >= 1 })
			r := testwait.Recv(t, results, "the spoken question's result")
			if r.Result == daemonapi.Refused || r.Result == daemonapi.Deferred {
				t.Errorf("the question being spoken at the reload = %+v, want it to finish (answered or no_answer)", r)
			}
			if n := d.Count("ask.spoken", ""); n != 1 {
				t.Errorf("%d questions spoken, want 1 (the one speaking at the reload)", n)
			}
			if b := d.Budget(); b.Used != 1 {
				t.Errorf("budget after the reload = %+v, want 1 used: the four waiting released", b)
			}
		})
	}
}

// TestReloadLowerCapKeepsWhatFits: five questions under a cap of five, the
// first spoken and four waiting, then a reload to a cap of two. The four
// waiting give their slots back and reserve again under the new cap: one
// fits and is spoken after the first, three are refused budget_exhausted
// (with retry_after_s), and two slots are spent in all.
func TestReloadLowerCapKeepsWhatFits(t *testing.T) {
	t.Parallel()
	cfg := baseConfig().With("budget.ask_human_per_hour", "5")
	d := startDaemon(t, cfg)
	ctx := testwait.Context(t)
	results := make(chan daemonapi.AskResult, 5)
	for i := range 5 {
		c := d.Client()
		go func() {
			r, err := c.AskHuman(ctx, daemonapi.AskParams{Question: longQuestion + " (" + strconv.Itoa(i) + ")", TimeoutS: 60})
			if err != nil {
				r = daemonapi.AskResult{Result: "error: " + daemonapi.Outcome(err.Error())}
			}
			results <- r
		}()
	}
	d.WaitFor(30*time.Second, "one question spoken and four waiting their turn", func() bool {
		st := d.Status()
		return st.Asking && st.Waiting == 4 && st.Budget.Used == 5
	})
	d.WriteConfig(cfg.With("budget.ask_human_per_hour", "2"))
	if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var exhausted, spoken int
	for range 5 {
		r := testwait.Recv(t, results, "a question's result")
		switch {
		case r.Result == daemonapi.Refused && r.Reason == daemonapi.ReasonBudgetExhausted && r.RetryAfterS > 0:
			exhausted++
		case r.Result == daemonapi.Answered || r.Result == daemonapi.NoAnswer:
			spoken++
		default:
			t.Errorf("a question = %+v, want spoken (answered or no_answer) or refused budget_exhausted with retry_after_s", r)
		}
	}
	if exhausted != 3 || spoken != 2 {
		t.Errorf("%d refused budget_exhausted and %d spoken, want 3 and 2", exhausted, spoken)
	}
	if n := d.Count("ask.spoken", ""); n != 2 {
		t.Errorf("%d questions spoken, want 2", n)
	}
	if b := d.Budget(); b.Used != 2 || b.PerHour != 2 {
		t.Errorf("budget = %+v, want 2 of 2 used", b)
	}
}
