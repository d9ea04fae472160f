package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/wav"
)

// holdStopBound is how long these tests wait for hold.stop before they
// fail: far above any bound of the daemon's (a detector that does not
// answer is given up after 5 s, a decoder after a minute plus four times
// the audio, and the fake decoder answers at once), and far below the
// wait of a hold that waits on a stopped child until it is continued.
const holdStopBound = 60 * time.Second

// stopWithin sends hold.stop and returns its answer and how long it
// took, failing the test if none came within holdStopBound.
func (d *daemon) stopWithin(c *daemonapi.Client) (daemonapi.HoldResult, time.Duration) {
	d.T.Helper()
	type out struct {
		r   daemonapi.HoldResult
		err error
	}
	ch := make(chan out, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		r, err := c.Hold(ctx, daemonapi.MethodHoldStop)
		ch <- out{r, err}
	}()
	select {
	case o := <-ch:
		if o.err != nil {
			d.T.Fatalf("hold.stop: %v\n%s", o.err, d.LogTail(30))
		}
		return o.r, time.Since(start)
	case <-time.After(holdStopBound):
		d.T.Fatalf("hold.stop did not answer within %v\n%s", holdStopBound, d.LogTail(40))
	}
	panic("unreachable")
}

// capturePlays opens a hold and returns the time the capture child began
// to play its file for it (the daemon's "child started" record: the file
// is paced in real time from there).
func (d *daemon) capturePlays(c *daemonapi.Client) time.Time {
	d.T.Helper()
	n := len(d.Records("capture", "child started"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := c.Hold(ctx, daemonapi.MethodHoldStart); err != nil || r.Hold != daemonapi.HoldHolding {
		d.T.Fatalf("hold.start = %+v, %v", r, err)
	}
	d.WaitLog(10*time.Second, "the capture child to start", func(map[string]any) bool {
		return len(d.Records("capture", "child started")) > n
	})
	recs := d.Records("capture", "child started")
	at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(recs[len(recs)-1]["time"]))
	if err != nil {
		d.T.Fatalf("child started record time: %v", err)
	}
	return at
}

// pieceMs is the audio the fake decoder was given for the text, summed
// over its pieces ("piece of N" each, YAZ_FAKE_TEXT=piece of {audio_ms}),
// and how many pieces there were.
func pieceMs(t testing.TB, text string) (ms, pieces int) {
	t.Helper()
	for _, m := range regexp.MustCompile(`piece of (\d+)`).FindAllStringSubmatch(text, -1) {
		n, err := strconv.Atoi(m[1])
		if err != nil {
			t.Fatal(err)
		}
		ms += n
		pieces++
	}
	if rest := strings.TrimSpace(regexp.MustCompile(`piece of \d+`).ReplaceAllString(text, "")); rest != "" {
		t.Fatalf("text %q holds more than pieces", text)
	}
	return ms, pieces
}

// holdAudioMs is the audio of the hold that ended with outcome (its
// dictation.<outcome> audit event).
func (d *daemon) holdAudioMs(outcome string) int64 {
	d.T.Helper()
	for _, e := range d.Events() {
		if e.Kind == "dictation."+outcome {
			return e.DurationMs
		}
	}
	d.T.Fatalf("no dictation.%s in the audit: %+v", outcome, d.Events())
	return 0
}

// TestHoldSurvivesTheDetector: the Silero detector child stopped
// (SIGSTOP: it runs, as its supervisor sees it, and never answers) or
// killed (SIGKILL) before the speech, in the middle of it, or in the
// silence just before the release, with eager decoding off (the whole
// hold speculated on), on (pieces at 300 ms pauses) and on with a pause
// long enough that the last piece is a speculation (700 ms), never costs
// the dictation. hold.stop answers (a stopped detector is given up after
// a bounded wait, not waited for until it is continued), the outcome is
// the text (kept here: no typing backend), its cause says what became of
// the detector (vad_timeout, vad_failed), the fake decoder's pieces cover
// all of the speech and no audio twice, and a stopped detector is
// restarted. (A stopped detector used to hold hold.stop until SIGCONT; a
// killed one during an eager hold gave "empty" or only the pieces before
// the crash.)
func TestHoldSurvivesTheDetector(t *testing.T) {
	t.Parallel()
	speech, _, err := wav.ReadFile16k(world.jfk, 60*sr)
	if err != nil {
		t.Fatal(err)
	}
	from, to := soundExtent(speech)
	dur := func(n int) time.Duration { return time.Duration(n) * time.Second / sr }
	mic := writeWAVFile(t, filepath.Join(t.TempDir(), "mic.wav"), join(speech, zeros(3)))
	release := dur(to) + 700*time.Millisecond // 0.7 s after the last word
	spoken := dur(to - from)
	for _, mode := range []struct{ name, pause string }{{"whole", "0"}, {"eager", "300"}, {"speculation", "700"}} {
		for _, sig := range []syscall.Signal{syscall.SIGSTOP, syscall.SIGKILL} {
			for _, pt := range []struct {
				name string
				at   time.Duration // from the start of the file
			}{
				{"before speech", dur(from) / 2},
				{"mid speech", dur(from+to) / 2},
				{"before release", release - 350*time.Millisecond}, // after the first 150 ms of silence: a speculation is out
			} {
				name := mode.name + "/" + map[syscall.Signal]string{syscall.SIGSTOP: "stopped", syscall.SIGKILL: "killed"}[sig] + "/" + pt.name
				t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
					t.Parallel()
					d := startDaemon(t, sileroConfig(t).
						With("dictation.eager_pause_ms", mode.pause).
						With("children.decode", arr(bin("fakedecode"))).
						With("children.capture", arr(bin("yaz-capture"), "--file", mic)),
						"YAZ_FAKE_TEXT=piece of {audio_ms}")
					d.WaitRunning("vad")
					c := d.Client()
					defer c.Close()
					pid := d.PidOf("vad")
					t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) }) // harmless once it is gone
					plays := d.capturePlays(c)
					time.Sleep(time.Until(plays.Add(pt.at)))
					if err := syscall.Kill(pid, sig); err != nil {
						t.Fatal(err)
					}
					time.Sleep(time.Until(plays.Add(release)))
					r, took := d.stopWithin(c)
					if r.Outcome != "kept" && r.Outcome != "typed" {
						t.Fatalf("hold.stop = %+v after %v, want the text kept or typed\n%s", r, took, d.LogTail(40))
					}
					wantCause := map[syscall.Signal]string{syscall.SIGSTOP: "vad_timeout", syscall.SIGKILL: "vad_failed"}[sig]
					if r.Cause != wantCause || !strings.Contains(r.Reason, "voice detector") {
						t.Errorf("hold.stop = %+v, want cause %s and a reason that says what became of the voice detector", r, wantCause)
					}
					last := d.lastByCtl()
					ms, pieces := pieceMs(t, last.Text)
					audio := d.holdAudioMs(r.Outcome)
					if got := time.Duration(ms) * time.Millisecond; got < spoken-100*time.Millisecond || int64(ms) > audio {
						t.Errorf("the text %q covers %v of audio, want all %v of the speech and at most the hold's %d ms (no audio twice)", last.Text, got, spoken, audio)
					}
					d.WaitFor(30*time.Second, "the detector running again, a new process", func() bool {
						ch := d.Child("vad")
						return ch.State == "running" && ch.PID != pid
					})
					if alive(pid) {
						t.Errorf("the detector that was stopped (pid %d) is still there", pid)
					}
					t.Logf("hold.stop answered in %v: %s (%s), %d pieces over %d of %d ms", took.Round(time.Millisecond), r.Outcome, r.Cause, pieces, ms, audio)
				})
			}
		}
	}
}
