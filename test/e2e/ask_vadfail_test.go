package e2e

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
)

// askBound is how long these tests wait for ask_human before they fail:
// far above any bound of the daemon's on the detector (a detector that
// does not answer is given up after 5 s) and the fake decoder (it answers
// at once), and far below an answer window that waits on a stopped child
// until it is continued.
const askBound = 90 * time.Second

// askWithin calls ask_human in the background and returns a channel with
// its answer; the test fails if none came within askBound.
func (d *daemon) askWithin(question string, timeoutS int) <-chan daemonapi.AskResult {
	d.T.Helper()
	out := make(chan daemonapi.AskResult, 1)
	errc := make(chan error, 1)
	go func() {
		c := d.Client()
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		r, err := c.AskHuman(ctx, daemonapi.AskParams{Question: question, TimeoutS: timeoutS})
		if err != nil {
			errc <- err
			return
		}
		out <- r
	}()
	res := make(chan daemonapi.AskResult, 1)
	go func() {
		select {
		case r := <-out:
			res <- r
		case err := <-errc:
			d.T.Errorf("ask_human: %v", err)
			close(res)
		case <-time.After(askBound):
			d.T.Errorf("ask_human did not answer within %v\n%s", askBound, d.LogTail(40))
			close(res)
		}
	}()
	return res
}

// TestAskSurvivesTheDetector: the Silero detector child stopped (SIGSTOP:
// it runs, as its supervisor sees it, and never answers) or killed
// (SIGKILL) while an answer is recorded, before the person speaks, in the
// middle of the answer, or in the pause after it (before the pause is
// long enough to end it), never costs the answer: ask_human answers
// within a bound with the fake decoder's text for audio that holds all of
// the answer, and a stopped detector is restarted (a new process). (A
// stopped detector used to be waited for until the answer window ran
// out: an answer whose start it had not reported was lost, "no_answer",
// and the stopped child was left for the next hold.)
func TestAskSurvivesTheDetector(t *testing.T) {
	t.Parallel()
	answer := spokenWAV(t, "Yes, go ahead and deploy it to production.")
	lead := zeros(0.5)
	mic := writeWAVFile(t, filepath.Join(t.TempDir(), "mic.wav"), join(lead, answer, zeros(4)))
	dur := func(n int) time.Duration { return time.Duration(n) * time.Second / sr }
	start, spoken := dur(len(lead)), dur(len(answer))
	fileLen := dur(len(lead) + len(answer) + 4*sr)
	for _, sig := range []syscall.Signal{syscall.SIGSTOP, syscall.SIGKILL} {
		for _, pt := range []struct {
			name string
			at   time.Duration // from the start of the answer window's audio
		}{
			{"before speech", start / 2},
			{"mid speech", start + spoken/2},
			{"in the pause after", start + spoken + 300*time.Millisecond}, // answer_silence_ms is 800
		} {
			name := map[syscall.Signal]string{syscall.SIGSTOP: "stopped", syscall.SIGKILL: "killed"}[sig] + "/" + pt.name
			t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
				t.Parallel()
				d := startDaemon(t, sileroConfig(t).
					With("children.decode", arr(bin("fakedecode"))).
					With("children.capture", arr(bin("yaz-capture"), "--file", mic)),
					"YAZ_FAKE_TEXT=answer of {audio_ms}")
				d.WaitRunning("vad")
				pid := d.PidOf("vad")
				t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) }) // harmless once it is gone
				asked := time.Now()
				res := d.askWithin("Shall I deploy?", 60)
				// The capture child starts for the answer window and plays
				// the file from its start in real time.
				d.WaitFor(60*time.Second, "the capture child to start for the answer", func() bool {
					return len(d.Records("capture", "child started")) > 0
				})
				plays := d.childStarted("capture")
				time.Sleep(time.Until(plays.Add(pt.at)))
				if err := syscall.Kill(pid, sig); err != nil {
					t.Fatal(err)
				}
				r, ok := <-res
				if !ok {
					return
				}
				took := time.Since(asked)
				m := regexp.MustCompile(`^answer of (\d+)$`).FindStringSubmatch(r.Answer)
				if r.Result != daemonapi.Answered || m == nil {
					t.Fatalf("ask_human = %+v after %v, want answered with the fake decoder's text\n%s", r, took, d.LogTail(40))
				}
				ms, _ := strconv.Atoi(m[1])
				if got := time.Duration(ms) * time.Millisecond; got < spoken-100*time.Millisecond || got > fileLen {
					t.Errorf("the answer decoded is %v of audio, want all %v of the answer and at most the file's %v", got, spoken, fileLen)
				}
				d.WaitFor(30*time.Second, "the detector running again, a new process", func() bool {
					ch := d.Child("vad")
					return ch.State == "running" && ch.PID != pid
				})
				if alive(pid) {
					t.Errorf("the detector that was stopped (pid %d) is still there", pid)
				}
				t.Logf("ask_human answered in %v (question included): %q for %v spoken", took.Round(time.Millisecond), r.Answer, spoken.Round(time.Millisecond))
			})
		}
	}
}

// childStarted is the time of the last "child started" record of child
// name (its process began then).
func (d *daemon) childStarted(name string) time.Time {
	d.T.Helper()
	recs := d.Records(name, "child started")
	if len(recs) == 0 {
		d.T.Fatalf("no child started record of %s", name)
	}
	at, err := time.Parse(time.RFC3339Nano, recs[len(recs)-1]["time"].(string))
	if err != nil {
		d.T.Fatalf("child started record time: %v", err)
	}
	return at
}
