package e2e

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
)

// TestDaemonParakeetAnswerAndMCP: with decode.model set to the generated
// Parakeet model, an ask_human answer played into the microphone comes
// back as text decoded by Parakeet, and an MCP host's transcribe (the
// official Go SDK client, yaz-mcp started with a host's environment) runs
// on the daemon's resident Parakeet decoder and gives the segments the
// daemon's own transcribe gives.
func TestDaemonParakeetAnswerAndMCP(t *testing.T) {
	t.Parallel()
	model, _ := parakeet(t)
	d := startDaemon(t, baseConfig().
		With("decode.model", q(model)).
		With("budget.ask_human_per_hour", "2"))

	a := d.Ask("Shall I deploy the build?", 30)
	if a.Result != daemonapi.Answered || strings.TrimSpace(a.Answer) == "" {
		t.Fatalf("ask_human with a Parakeet decoder = %+v, want an answer\n%s", a, d.LogTail(30))
	}
	if strings.Contains(d.Log.String(), a.Answer) {
		t.Error("the daemon's log holds the answer")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := d.Client()
	own, err := c.Transcribe(ctx, world.jfk)
	if err != nil {
		t.Fatalf("transcribe on the daemon: %v", err)
	}
	// The decoder's log lines reach the daemon's log after the answers
	// do: wait for the line of the daemon's own transcribe before counting.
	d.Await(10*time.Second, func() bool { return d.fileUtterances() >= 1 })
	cs, _, stderr := sdkSession(t, hostEnv(d.Dir, "XDG_RUNTIME_DIR="+d.Runtime), "2025-11-25", nil)
	utts := d.fileUtterances()
	tr := checkTranscript(t, callTool(t, cs, "transcribe", map[string]any{"path": world.jfk}), jfkMs)
	cs.Close()
	d.Await(10*time.Second, func() bool { return d.fileUtterances() > utts })
	if n := d.fileUtterances(); n != utts+1 {
		t.Errorf("daemon decoder utterances of jfk.wav: %d -> %d, want one more (transcribe on the resident Parakeet decoder)\n%s", utts, n, stderr)
	}
	if tr.Text != own.Text || len(tr.Segments) != len(own.Segments) {
		t.Errorf("MCP transcribe gave %d segments, the daemon's own transcribe %d; texts equal: %v", len(tr.Segments), len(own.Segments), tr.Text == own.Text)
	}
	if own.Text == "" {
		t.Error("no text for jfk.wav: the comparison proves nothing")
	}
	for _, m := range d.LogRecords() {
		if m["child"] == "decode" && m["msg"] == "model loaded" && m["engine"] != "parakeet" {
			t.Errorf("the decoder loaded engine %v, want parakeet", m["engine"])
		}
	}
}

// TestDaemonParakeetDecoderKilledMidHold: the Parakeet decoder killed while
// a hold records is restarted by the daemon, as a whisper one is, and the
// hold's audio is decoded by the restarted decoder and typed at release.
func TestDaemonParakeetDecoderKilledMidHold(t *testing.T) {
	t.Parallel()
	model, _ := parakeet(t)
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	speech := speechWAV(t, 3*time.Second)
	d := startDaemon(t, dictationConfig(speech, false).With("decode.model", q(model)), x.DaemonEnv()...)
	c := d.Client()
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	pid := d.PidOf("decode")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d.WaitFor(30*time.Second, "the decoder restarted", func() bool {
		ch := d.Child("decode")
		return ch.State == "running" && ch.PID != pid && ch.Restarts >= 1
	})
	r := d.stopHold(c)
	if r.Outcome != "typed" || r.Chars == 0 {
		t.Fatalf("hold.stop after the decoder's restart = %+v, want typed\n%s", r, d.LogTail(30))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := c.Last(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec.WaitFor(t, l.Text)
}
