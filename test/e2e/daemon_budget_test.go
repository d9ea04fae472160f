package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/pcm"
)

// The daemon tests prove docs/design.md's budget invariants on the real daemon
// with its real children: yaz-gate, yaz-speak into the PulseAudio null
// sink, yaz-decode on the generated model, and answers played in with
// yaz-capture --file.

// TestBudgetIsOnePerDaemonAcrossConnections: with one question per hour,
// a second call on a new connection is refused with retry_after_s > 0.
// A design that built a budget per request or per connection would answer
// both.
func TestBudgetIsOnePerDaemonAcrossConnections(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, baseConfig())
	first := d.Ask("Shall I deploy the build?", 30)
	if first.Result != daemonapi.Answered || first.Answer == "" {
		t.Fatalf("first ask = %+v, want answered with text\n%s", first, d.LogTail(30))
	}
	second := d.Ask("Shall I deploy the other build?", 30)
	if second.Result != daemonapi.Refused || second.Reason != daemonapi.ReasonBudgetExhausted || second.RetryAfterS <= 0 {
		t.Fatalf("second ask = %+v, want refused budget_exhausted with retry_after_s > 0", second)
	}
	if n := d.SpokenBySpeaker(); n != 1 {
		t.Errorf("speaker played %d questions, want 1", n)
	}
	if n := d.Count("ask.spoken", ""); n != 1 {
		t.Errorf("audit has %d ask.spoken, want 1", n)
	}
	b := d.Budget()
	if b.Used != 1 || b.PerHour != 1 || b.NextFreeS <= 0 {
		t.Errorf("budget.status = %+v, want 1 of 1 used, next_free_s > 0", b)
	}
}

// TestBudgetIsOnePerDaemonAcrossProcesses: the same with two separate
// client processes (`yazsesd ctl ask_human`).
func TestBudgetIsOnePerDaemonAcrossProcesses(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, baseConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var results []daemonapi.AskResult
	for _, question := range []string{"May I merge?", "May I merge now?"} {
		out, stderr, code := d.Ctl(ctx, "ask_human", `{"question":`+q(question)+`,"timeout_s":30}`)
		if code != 0 {
			t.Fatalf("yazsesd ctl ask_human: exit %d: %s", code, stderr)
		}
		var r daemonapi.AskResult
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("ctl output %q: %v", out, err)
		}
		results = append(results, r)
	}
	if results[0].Result != daemonapi.Answered {
		t.Errorf("first process: %+v, want answered", results[0])
	}
	if results[1].Result != daemonapi.Refused || results[1].RetryAfterS <= 0 {
		t.Errorf("second process: %+v, want refused with retry_after_s > 0", results[1])
	}
	if n := d.SpokenBySpeaker(); n != 1 {
		t.Errorf("speaker played %d questions, want 1", n)
	}
}

// TestUnansweredQuestionSpendsItsSlot: a question spoken to a silent room
// costs its slot; the next is refused.
func TestUnansweredQuestionSpendsItsSlot(t *testing.T) {
	t.Parallel()
	silence := filepath.Join(t.TempDir(), "silence.wav")
	writeSilenceWAV(t, silence, 3*time.Second)
	d := startDaemon(t, baseConfig().With("children.capture", arr(bin("yaz-capture"), "--file", silence)))
	r := d.Ask("Is anybody there?", 20)
	if r.Result != daemonapi.NoAnswer || r.Reason != daemonapi.ReasonSilence {
		t.Fatalf("ask to silence = %+v, want no_answer silence", r)
	}
	if r := d.Ask("Anybody?", 20); r.Result != daemonapi.Refused {
		t.Fatalf("second ask = %+v, want refused: the unanswered question spent the slot", r)
	}
	if n := d.SpokenBySpeaker(); n != 1 {
		t.Errorf("speaker played %d questions, want 1", n)
	}
}

// TestHoldDeferralCostsNothing: while the person holds the key, a question
// waits and comes back deferred; nothing is spoken or charged, and once
// the hold ends the one slot is still there.
func TestHoldDeferralCostsNothing(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, baseConfig())
	c := d.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if h, err := c.Hold(ctx, daemonapi.MethodHoldStart); err != nil || h.Hold != daemonapi.HoldHolding {
		t.Fatalf("hold.start = %+v, %v", h, err)
	}
	start := time.Now()
	r := d.Ask("Shall I wait?", 3) // the shortest timeout with baseConfig
	if r.Result != daemonapi.Deferred || r.Reason != daemonapi.ReasonHolding {
		t.Fatalf("ask during a hold = %+v, want deferred holding", r)
	}
	if el := time.Since(start); el < 2900*time.Millisecond {
		t.Errorf("deferred after %v, want after the 3 s timeout", el)
	}
	if _, err := c.Hold(ctx, daemonapi.MethodHoldCancel); err != nil {
		t.Fatal(err)
	}
	if b := d.Budget(); b.Used != 0 {
		t.Errorf("budget after a deferral: %+v, want 0 used", b)
	}
	if n := d.SpokenBySpeaker(); n != 0 {
		t.Errorf("speaker played %d questions during a hold", n)
	}
	if r := d.Ask("Now?", 30); r.Result != daemonapi.Answered {
		t.Errorf("ask after the hold = %+v, want answered: the slot was still free", r)
	}
}

// TestQuestionWaitsForHoldToEnd: a question asked during a hold is spoken
// once the hold ends, within the caller's timeout.
func TestQuestionWaitsForHoldToEnd(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, baseConfig())
	c := d.Client()
	ctx := context.Background()
	if _, err := c.Hold(ctx, daemonapi.MethodHoldStart); err != nil {
		t.Fatal(err)
	}
	res := make(chan daemonapi.AskResult, 1)
	go func() { res <- d.Ask("After your sentence?", 30) }()
	d.WaitFor(20*time.Second, "the question to wait for the hold", func() bool { return d.Status().Waiting > 0 })
	if st := d.Status(); st.Asking || d.SpokenBySpeaker() != 0 {
		t.Fatalf("a question is being spoken during a hold: %+v", st)
	}
	if _, err := c.Hold(ctx, daemonapi.MethodHoldCancel); err != nil {
		t.Fatal(err)
	}
	if r := <-res; r.Result != daemonapi.Answered {
		t.Fatalf("ask = %+v, want answered after the hold", r)
	}
}

// TestProvenSilentTTSFailureCostsNothing: a speaker that fails before any
// audio (espeak-ng fails) releases the slot: unavailable, 0 used; and a
// speaker that cannot start at all is unavailable too, at no cost.
func TestProvenSilentTTSFailureCostsNothing(t *testing.T) {
	t.Parallel()
	failing := filepath.Join(t.TempDir(), "espeak-fails")
	if err := os.WriteFile(failing, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Run("espeak fails", func(t *testing.T) {
		d := startDaemon(t, baseConfig().With("children.speak",
			arr(bin("yaz-speak"), "--serve", "--backend", "pulseaudio", "--espeak", failing)))
		for i := range 2 {
			r := d.Ask("Can you hear me?", 20)
			if r.Result != daemonapi.Unavailable || r.Reason != daemonapi.ReasonTTSUnavailable {
				t.Fatalf("ask %d = %+v, want unavailable tts_unavailable", i, r)
			}
		}
		if b := d.Budget(); b.Used != 0 {
			t.Errorf("budget = %+v, want 0 used after proven silent failures", b)
		}
		if d.Count("ask.released", daemonapi.ReasonTTSUnavailable) != 2 {
			t.Errorf("audit: want 2 ask.released tts_unavailable")
		}
	})
	t.Run("no speaker", func(t *testing.T) {
		d := newDaemon(t, baseConfig().With("children.speak",
			arr(bin("yaz-speak"), "--serve", "--espeak", "/nonexistent/espeak-ng")))
		d.Start()
		d.WaitRunning("gate", "decode")
		r := d.Ask("Can you hear me?", 5)
		if r.Result != daemonapi.Unavailable || r.Reason != daemonapi.ReasonTTSUnavailable {
			t.Fatalf("ask = %+v, want unavailable tts_unavailable", r)
		}
		if b := d.Budget(); b.Used != 0 {
			t.Errorf("budget = %+v, want 0 used", b)
		}
	})
}

// TestConcurrentAsksNeverExceedTheCap: 2 and then 50 simultaneous calls,
// each on its own connection, with one slot: exactly one is spoken.
func TestConcurrentAsksNeverExceedTheCap(t *testing.T) {
	t.Parallel()
	for _, n := range []int{2, 50} {
		t.Run(itoa(n), func(t *testing.T) {
			d := startDaemon(t, baseConfig())
			results := make([]daemonapi.AskResult, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				c := d.Client()
				wg.Go(func() {
					<-start
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer cancel()
					r, err := c.AskHuman(ctx, daemonapi.AskParams{Question: "Race " + itoa(i) + "?", TimeoutS: 30})
					if err != nil {
						t.Errorf("ask %d: %v", i, err)
					}
					results[i] = r
				})
			}
			close(start)
			wg.Wait()
			counts := map[daemonapi.Outcome]int{}
			for _, r := range results {
				counts[r.Result]++
				if r.Result == daemonapi.Refused && r.RetryAfterS <= 0 {
					t.Errorf("refusal without retry_after_s: %+v", r)
				}
			}
			if counts[daemonapi.Answered]+counts[daemonapi.NoAnswer] != 1 || counts[daemonapi.Refused] != n-1 {
				t.Errorf("outcomes %v, want exactly 1 spoken and %d refused", counts, n-1)
			}
			if s := d.SpokenBySpeaker(); s != 1 {
				t.Errorf("speaker played %d questions, want 1", s)
			}
			if b := d.Budget(); b.Used != 1 {
				t.Errorf("budget %+v, want 1 used", b)
			}
		})
	}
}

// TestAskHumanOffRefusesEverything: the opt-in off (the default) and a cap
// of 0 both refuse as disabled, before anything is spoken.
func TestAskHumanOffRefusesEverything(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]toml{
		"opt-in off": baseConfig().With("mcp.ask_human", "false"),
		"cap 0":      baseConfig().With("budget.ask_human_per_hour", "0"),
	} {
		t.Run(name, func(t *testing.T) {
			d := startDaemon(t, cfg)
			r := d.Ask("Hello?", 5)
			if r.Result != daemonapi.Refused || r.Reason != daemonapi.ReasonDisabled {
				t.Errorf("ask = %+v, want refused disabled", r)
			}
			if d.SpokenBySpeaker() != 0 {
				t.Error("something was spoken")
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// writeSilenceWAV writes d of digital silence as a 16 kHz mono WAV file.
func writeSilenceWAV(t *testing.T, path string, d time.Duration) {
	t.Helper()
	n := int(d / time.Millisecond * 16)
	b := append(pcm.WAVHeader(int64(2*n)), make([]byte, 2*n)...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSecondDaemonWithAnotherRuntimeDirRefused: one
// daemon per user, not per runtime folder. While a daemon runs with its
// budget spent, a second `yazsesd run` of the same user with another
// XDG_RUNTIME_DIR (same configuration and state) refuses to start: exit
// 125 (the unit's RestartPreventExitStatus, so systemd does not loop on
// it), an error naming the first daemon's pid and socket, no socket of
// its own, and one daemon.started in the one audit log. It used to start
// with a fresh budget and speak.
func TestSecondDaemonWithAnotherRuntimeDirRefused(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, baseConfig())
	if r := d.Ask("Shall I deploy the build?", 30); r.Result != daemonapi.Answered {
		t.Fatalf("first ask = %+v, want answered", r)
	}
	other, err := os.MkdirTemp("", "yzr-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(other) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	second := exec.CommandContext(ctx, bin("yazsesd"), "run")
	second.Env = append(slices.Clone(d.Env), "XDG_RUNTIME_DIR="+other) // the last value wins
	var stderr bytes.Buffer
	second.Stderr = &stderr
	err = second.Run()
	if ctx.Err() != nil {
		t.Fatalf("a second yazsesd with another runtime folder still ran 30 s after its start (want it refused); its log:\n%s", stderr.String())
	}
	if code := second.ProcessState.ExitCode(); code != 125 {
		t.Errorf("second yazsesd: exit %d (%v), want 125 (do not restart)", code, err)
	}
	msg := stderr.String()
	for _, want := range []string{"already running", "pid " + itoa(d.Cmd.Process.Pid), d.Socket()} {
		if !strings.Contains(msg, want) {
			t.Errorf("second yazsesd's error %q does not say %q", msg, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(other, "yazses", "yazsesd.sock")); err == nil {
		t.Error("the refused daemon made a socket")
	}
	if n := d.Count("daemon.started", ""); n != 1 {
		t.Errorf("audit has %d daemon.started, want 1: the second daemon must not have run", n)
	}
	if r := d.Ask("And another?", 10); r.Result != daemonapi.Refused {
		t.Errorf("ask after the second start = %+v, want refused: the one budget is spent", r)
	}
}
