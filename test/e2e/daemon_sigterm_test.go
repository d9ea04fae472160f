package e2e

import (
	"syscall"
	"testing"
	"time"
)

// TestDictationDecoderSIGTERMedRestarts: someone stops the real decoder
// child with SIGTERM (a person with kill, a tool that cleans up
// processes); it exits 0, as every YazSes program does on SIGTERM. The
// daemon restarts it as it restarts a crashed one, and the next hold,
// pressed as soon as the old decoder is gone, waits for the new one and
// is decoded and typed. (Exit 0 used to be read as "stopped": the decoder
// stayed down while status said ready, and every hold failed with "the
// decoder ended before answering; it is restarted".)
func TestDictationDecoderSIGTERMedRestarts(t *testing.T) {
	t.Parallel()
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	speech := speechWAV(t, 3*time.Second)
	d := startDaemon(t, dictationConfig(speech, false), x.DaemonEnv()...)
	pid := d.PidOf("decode")
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	d.WaitFor(30*time.Second, "the SIGTERMed decoder to end", func() bool {
		return d.Child("decode").PID != pid
	})
	c := d.Client()
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	if r := d.stopHold(c); r.Outcome != "typed" {
		t.Fatalf("hold.stop after the decoder was SIGTERMed = %+v, want typed\n%s", r, d.LogTail(30))
	}
	ch := d.Child("decode")
	if ch.State != "running" || ch.PID == pid || ch.Restarts < 1 || ch.LastExit != "exit 0" {
		t.Errorf("decode after SIGTERM = %+v, want running again after a restart, last exit 0", ch)
	}
}
