package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
)

// TestAuditFailsClosed: with the state folder's disk full, a question that
// cannot be audited is not asked (unavailable, audit_unavailable: nothing
// spoken, nothing charged), status says the audit is failing, and
// dictation goes on. With room again, questions are asked again. (It used
// to reserve, speak and answer while every audit event was lost.)
func TestAuditFailsClosed(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root (CI runs as root)")
	}
	d := newDaemon(t, baseConfig().With("budget.ask_human_per_hour", "5"))
	state := filepath.Join(d.Dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=512k,mode=0700", "tmpfs", state).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", state).Run() })
	d.Start()
	d.WaitRunning("gate", "speak", "decode")
	d.WaitFor(10*time.Second, "the audit log", func() bool { _, err := os.Stat(d.Audit); return err == nil })

	// The log ends exactly at a page boundary, then the disk is filled:
	// the next record cannot be written at all.
	f, err := os.OpenFile(d.Audit, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	pad := 4096 - int(st.Size()%4096)
	if pad < 80 {
		pad += 4096
	}
	head := `{"time":"2026-01-01T00:00:00Z","kind":"test.pad"`
	if _, err := f.WriteString(head + strings.Repeat(" ", pad-len(head)-2) + "}\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	filler := filepath.Join(state, "filler")
	fill, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for buf := make([]byte, 4096); ; {
		if _, err := fill.Write(buf); err != nil {
			break
		}
	}
	fill.Close()

	if r := d.Ask("Is the disk full?", 20); r.Result != daemonapi.Unavailable || r.Reason != daemonapi.ReasonAuditUnavailable {
		t.Errorf("ask with the audit failing = %+v, want unavailable audit_unavailable", r)
	}
	if n := d.SpokenBySpeaker(); n != 0 {
		t.Errorf("the speaker played %d questions with the audit failing", n)
	}
	st2 := d.Status()
	if !st2.AuditFailing || st2.Budget.Used != 0 {
		t.Errorf("status with the audit failing: audit_failing %v, budget used %d; want true, 0", st2.AuditFailing, st2.Budget.Used)
	}
	// Dictation goes on.
	c := d.Client()
	defer c.Close()
	if _, err := c.Hold(t.Context(), daemonapi.MethodHoldStart); err != nil {
		t.Fatal(err)
	}
	h, err := c.Hold(t.Context(), daemonapi.MethodHoldStop)
	if err != nil || h.Outcome == "failed" {
		t.Errorf("a hold with the audit failing = %+v, %v; want it decoded", h, err)
	}

	os.Remove(filler)
	if r := d.Ask("And now?", 20); r.Result != daemonapi.Answered {
		t.Errorf("ask with room again = %+v, want answered", r)
	}
	if d.Status().AuditFailing {
		t.Error("status still says the audit is failing after a write succeeded")
	}
}

// TestAnswerWithoutMicrophone: a question spoken while the microphone
// cannot open (the sound server is gone) ends no_answer with reason
// capture_failed, not silence; a microphone that opens and hears nothing
// is still silence.
func TestAnswerWithoutMicrophone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		capture string
		want    string
	}{
		{"no sound server", arr("env", "PULSE_SERVER=unix:/nonexistent/native", bin("yaz-capture"), "--backend", "pulseaudio"), daemonapi.ReasonCaptureFailed},
		{"silent microphone", arr(bin("yaz-capture"), "--backend", "null"), daemonapi.ReasonSilence},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := startDaemon(t, baseConfig().
				With("children.capture", tc.capture).
				With("ask.max_answer_s", "3"))
			r := d.Ask("Can you hear me?", 30)
			if r.Result != daemonapi.NoAnswer || r.Reason != tc.want {
				t.Errorf("ask = %+v, want no_answer %s", r, tc.want)
			}
		})
	}
}

// TestReloadWithGateDown: a reload that changes the cap while the gate is
// down for good does not claim to restart it (it used to log "restarting
// it fully spent" with nothing restarting), and no question is asked.
func TestReloadWithGateDown(t *testing.T) {
	t.Parallel()
	cfg := baseConfig().With("children.gate", arr("sh", "-c", "exit 125"))
	d := newDaemon(t, cfg)
	d.Start()
	d.WaitRunning("speak", "decode")
	d.WaitFor(10*time.Second, "the gate left down", func() bool {
		for _, c := range d.Status().Children {
			if c.Name == "gate" && c.State == "exited" {
				return true
			}
		}
		return false
	})
	d.WriteConfig(cfg.With("budget.ask_human_per_hour", "3"))
	if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	d.WaitLog(10*time.Second, "the reload", func(m map[string]any) bool {
		msg, _ := m["msg"].(string)
		return strings.HasPrefix(msg, "reload: the gate")
	})
	for _, m := range d.LogRecords() {
		if msg, _ := m["msg"].(string); strings.Contains(msg, "restarting it") {
			t.Errorf("the log claims a restart of a gate that is down for good: %q", msg)
		}
	}
	if r := d.Ask("Anyone?", 5); r.Result != daemonapi.Unavailable {
		t.Errorf("ask with the gate down = %+v, want unavailable", r)
	}
}
