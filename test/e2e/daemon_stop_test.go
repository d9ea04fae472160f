package e2e

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
)

// TestHoldStopDecoderStopped: with the real yaz-decode stopped (SIGSTOP: it
// runs, as far as its supervisor sees, and never answers), hold.stop does
// not wait forever. After the hold's decode bound (a minute plus four
// times its audio, from the end of its recording) the hold ends failed, cause decoder_timeout, with a
// reason that says what became of the utterance; the audit has
// dictation.lost decoder_timeout; the stopped decoder is killed and
// started again, and the next hold is decoded by the new one. (hold.stop
// used to wait for the stopped decoder for as long as it stayed stopped.)
func TestHoldStopDecoderStopped(t *testing.T) {
	t.Parallel()
	speech := answerWAV()
	d := startDaemon(t, dictationConfig(speech, false))
	c := d.Client()
	pid := d.PidOf("decode")
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) }) // harmless once it is gone
	d.holdWhileSpeaking(c, wavDuration(t, speech))

	stopped := holdStopAsync(c)
	var o holdOut
	select {
	case o = <-stopped:
	case <-time.After(4 * time.Minute): // the bound for this hold is about 70 s
		t.Fatalf("hold.stop still waits for the stopped decoder after 4 minutes\n%s", d.LogTail(30))
	}
	if o.err != nil || o.r.Hold != daemonapi.HoldIdle || o.r.Outcome != "failed" || o.r.Cause != "decoder_timeout" {
		t.Fatalf("hold.stop with the decoder stopped = %+v, %v; want idle, failed, cause decoder_timeout", o.r, o.err)
	}
	if !strings.Contains(o.r.Reason, "restarted") || !strings.Contains(o.r.Reason, "lost") {
		t.Errorf("reason %q: want it to say that the decoder is restarted and the utterance lost", o.r.Reason)
	}
	if n := d.Count("dictation.lost", "decoder_timeout"); n != 1 {
		t.Errorf("audit has %d dictation.lost decoder_timeout, want 1", n)
	}
	// The bound it failed at is the documented one: a minute plus four
	// times the hold's audio (docs/design.md, "Desktop dictation"), to
	// the 4 ms that audio_ms's rounding leaves. The log line may come
	// after the answer: the daemon's stderr is a pipe of its own.
	var lost map[string]any
	d.WaitLog(30*time.Second, "the \"dictation lost\" line", func(m map[string]any) bool {
		if m["msg"] == "dictation lost" && m["child"] == nil {
			lost = m
			return true
		}
		return false
	})
	audio, _ := lost["audio_ms"].(float64)
	bound, _ := lost["bound_ms"].(float64)
	if want := 60000 + 4*audio; bound < want || bound >= want+4 {
		t.Errorf("failed at a bound of %v ms for %v ms of audio, want %v ms", bound, audio, want)
	}
	t.Logf("the bound: %v ms for %v ms of audio", bound, audio)
	d.WaitFor(60*time.Second, "the decoder restarted", func() bool {
		ch := d.Child("decode")
		return ch.State == "running" && ch.PID != pid && ch.Restarts >= 1
	})
	if alive(pid) {
		t.Errorf("the stopped decoder (pid %d) is still there after the restart", pid)
	}
	// The next hold is decoded by the new decoder (the generated model's
	// words are random: typed, kept or empty, never failed).
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	if r := d.stopHold(c); r.Outcome == "failed" || r.Outcome == "" {
		t.Errorf("hold.stop after the restart = %+v, want it decoded\n%s", r, d.LogTail(20))
	}
}

// alive reports whether pid is a process that is not a zombie.
func alive(pid int) bool {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(st)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || len(s) < i+3 || s[i+2] != 'Z'
}
