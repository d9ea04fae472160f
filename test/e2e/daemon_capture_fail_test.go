package e2e

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
)

// TestHoldCaptureChildFails: the real capture child dies (SIGKILL) or
// stalls (SIGSTOP) a second into the speech of a hold. The hold is not cut
// silently: the capture child is restarted (the stalled one once no audio
// came for a second), the hold goes on with what the new one hears, and
// hold.stop says what happened: decoded (never failed), cause
// capture_failed, a reason that says how much audio was lost; the audit
// event says capture_failed too. The next hold is whole again, with no
// cause. So with eager decoding off and on. (The decoder used to get what
// was heard before the end, and the outcome said typed with no cause at
// all.)
func TestHoldCaptureChildFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		sig   syscall.Signal
		eager bool
	}{
		{"SIGKILL", syscall.SIGKILL, false},
		{"SIGSTOP", syscall.SIGSTOP, false},
		{"SIGKILL_eager", syscall.SIGKILL, true},
		{"SIGSTOP_eager", syscall.SIGSTOP, true},
	} {
		sig := tc.sig
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := startX(t) // typed: the audit event keeps the cause
			rec := startRecorder(t, x)
			rec.Focus(t)
			speech := speechWAV(t, 3*time.Second)
			cfg := dictationConfig(speech, false)
			if tc.eager {
				cfg = cfg.With("dictation.eager_pause_ms", "300")
			}
			d := startDaemon(t, cfg, x.DaemonEnv()...)
			c := d.Client()
			d.holdUntil(c, time.Second)
			pid := d.PidOf("capture")
			if err := syscall.Kill(pid, sig); err != nil {
				t.Fatalf("%v to the capture child: %v", sig, err)
			}
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) }) // harmless once it is gone
			d.WaitFor(30*time.Second, "the capture child started again", func() bool {
				ch := d.Child("capture")
				return ch.State == "running" && ch.PID != pid
			})
			r := d.stopHold(c)
			if r.Outcome == "failed" || r.Outcome == "" || r.Outcome == "cancelled" || r.Cause != "capture_failed" {
				t.Fatalf("hold.stop after the capture child's %v = %+v; want it decoded, cause capture_failed\n%s", sig, r, d.LogTail(30))
			}
			t.Logf("hold.stop: %s, %s: %s (%d characters)", r.Outcome, r.Cause, r.Reason, r.Chars)
			if !strings.Contains(r.Reason, "s of audio was lost") {
				t.Errorf("reason %q: want how much audio was lost", r.Reason)
			}
			n := 0
			for _, e := range d.Events() {
				if strings.HasPrefix(e.Kind, "dictation.") && e.Reason == "capture_failed" {
					n++
				}
			}
			if n != 1 {
				t.Errorf("audit has %d dictation events with reason capture_failed, want 1", n)
			}
			if alive(pid) {
				t.Errorf("the old capture child (pid %d) is still there", pid)
			}
			// The next hold hears the whole file, and nothing failed.
			d.holdWhileSpeaking(c, wavDuration(t, speech))
			if r := d.stopHold(c); r.Outcome == "failed" || r.Outcome == "" || r.Cause != "" {
				// The whole tail of both holds: when the capture child
				// was started, restarted and delivered, for a cause
				// seen once under load and not yet explained.
				t.Errorf("the next hold.stop = %+v, want it decoded with no cause\n%s", r, d.LogTail(150))
			}
		})
	}
}

// TestStopFinishesDictationInFlight: the daemon is told to stop (SIGTERM)
// just after the key's release of 17 s of speech, while the real decoder
// decodes it. The stop lets it finish: hold.stop answers typed, the text
// arrives in the focused window, the audit has dictation.typed and no
// dictation.lost, and the daemon then exits 0 with no process left. (It
// used to exit at once: hold.stop said failed, decoder_failed, "it is
// restarted", and the text was neither typed nor kept.)
func TestStopFinishesDictationInFlight(t *testing.T) {
	t.Parallel()
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	speech := speechWAV(t, 17*time.Second)
	d := startDaemon(t, dictationConfig(speech, false), x.DaemonEnv()...)
	c := d.Client()
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	res := holdStopAsync(c)
	d.WaitFor(30*time.Second, "the hold to be decoding", func() bool { return d.Status().Hold == daemonapi.HoldIdle })
	t0 := time.Now()
	d.Stop() // SIGTERM, and the daemon's end: exit 0, no process left
	t.Logf("the daemon stopped %v after SIGTERM", time.Since(t0).Round(time.Millisecond))
	o := <-res
	if o.err != nil || o.r.Outcome != "typed" || o.r.Chars == 0 {
		t.Fatalf("hold.stop with the stop in flight = %+v, %v; want typed\n%s", o.r, o.err, d.LogTail(30))
	}
	if got := rec.settled(t); got == "" {
		t.Error("the window received nothing")
	}
	if n := d.Count("dictation.typed", ""); n != 1 {
		t.Errorf("audit has %d dictation.typed, want 1", n)
	}
	for _, e := range d.Events() {
		if e.Kind == "dictation.lost" {
			t.Errorf("audit has %+v", e)
		}
	}
}

// TestStopLosesDictationItCannotDecode: the decoder is stopped (SIGSTOP)
// when the key is released and the daemon is told to stop: the dictation
// cannot be decoded in the time a stop gives it. hold.stop answers failed
// with the cause shutdown (not decoder_failed, not "it is restarted"),
// the audit has dictation.lost shutdown, and the daemon exits 0 with no
// process left, the stopped decoder included.
func TestStopLosesDictationItCannotDecode(t *testing.T) {
	t.Parallel()
	speech := answerWAV()
	d := startDaemon(t, dictationConfig(speech, false))
	c := d.Client()
	pid := d.PidOf("decode")
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) }) // harmless once it is gone
	res := holdStopAsync(c)
	d.WaitFor(30*time.Second, "the hold to be decoding", func() bool { return d.Status().Hold == daemonapi.HoldIdle })
	t0 := time.Now()
	d.Stop()
	t.Logf("the daemon stopped %v after SIGTERM", time.Since(t0).Round(time.Millisecond))
	o := <-res
	if o.err != nil || o.r.Outcome != "failed" || o.r.Cause != "shutdown" {
		t.Fatalf("hold.stop with the decoder stopped and the daemon stopping = %+v, %v; want failed, cause shutdown\n%s", o.r, o.err, d.LogTail(30))
	}
	if strings.Contains(o.r.Reason, "restarted") {
		t.Errorf("reason %q: the decoder is not restarted at a stop", o.r.Reason)
	}
	if n := d.Count("dictation.lost", "shutdown"); n != 1 {
		t.Errorf("audit has %d dictation.lost shutdown, want 1", n)
	}
	if n := d.Count("dictation.lost", "decoder_failed"); n != 0 {
		t.Errorf("audit has %d dictation.lost decoder_failed, want 0", n)
	}
}

type holdOut struct {
	r   daemonapi.HoldResult
	err error
}

// holdStopAsync sends hold.stop and delivers its answer (or its error
// after 5 minutes).
func holdStopAsync(c *daemonapi.Client) <-chan holdOut {
	res := make(chan holdOut, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		r, err := c.Hold(ctx, daemonapi.MethodHoldStop)
		res <- holdOut{r, err}
	}()
	return res
}
