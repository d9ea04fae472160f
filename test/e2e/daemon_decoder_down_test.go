package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/wav"
)

// TestHoldWithTheDecoderDownForGood: a decoder left down for good (its
// model is an HTML page: model_invalid) gives a hold the same outcome and
// cause whatever the mode (eager decoding off or on, Silero or the energy
// detector). Down before the hold, hold.start refuses at once with the
// cause and its message: the microphone is not opened (no capture child
// starts) and the daemon stays idle. Down during the hold (the model
// replaced and the decoder killed mid-speech, between two eager pieces,
// so its restart fails), hold.stop answers failed with that cause, never
// "empty" or the pieces decoded before. (hold.start used to open the microphone and say
// "Listening…", and an eager hold answered "empty".)
func TestHoldWithTheDecoderDownForGood(t *testing.T) {
	t.Parallel()
	speech, _, err := wav.ReadFile16k(world.jfk, 60*sr)
	if err != nil {
		t.Fatal(err)
	}
	// Twice jfk.wav: the decoder goes down during the first, and the
	// second has pauses (eager pieces) after that.
	audio := join(speech, zeros(0.5), speech, zeros(2))
	mic := writeWAVFile(t, filepath.Join(t.TempDir(), "mic.wav"), audio)
	model, err := os.ReadFile(world.mini)
	if err != nil {
		t.Fatal(err)
	}
	const page = "<html><body>502 Bad Gateway</body></html>\n"
	for _, mode := range []string{"whole", "eager", "energy"} {
		for _, when := range []string{"before", "during"} {
			t.Run(mode+"/"+when, func(t *testing.T) {
				t.Parallel()
				path := filepath.Join(t.TempDir(), "ggml-base.en.bin")
				content := model
				if when == "before" {
					content = []byte(page)
				}
				if err := os.WriteFile(path, content, 0o644); err != nil {
					t.Fatal(err)
				}
				says := path + `: not a ggml model file (it starts with "<html><body>502")`
				cfg := baseConfig().With("vad.engine", q("energy"))
				if mode != "energy" {
					cfg = sileroConfig(t)
				}
				cfg = cfg.With("decode.model", q(path)).
					With("dictation.eager_pause_ms", map[string]string{"whole": "0", "eager": "300", "energy": "0"}[mode]).
					With("children.capture", arr(bin("yaz-capture"), "--file", mic))
				d := newDaemon(t, cfg)
				d.Start()
				d.WaitRunning("gate", "speak")
				if mode != "energy" {
					d.WaitRunning("vad")
				}
				down := func() {
					d.WaitFor(60*time.Second, "the decoder left down", func() bool {
						c := d.Child("decode")
						return c.State == "exited" && c.Cause == "model_invalid"
					})
				}
				c := d.Client()
				defer c.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if when == "before" {
					down()
					r, err := c.Hold(ctx, daemonapi.MethodHoldStart)
					if err != nil || r.Hold != daemonapi.HoldIdle || r.Outcome != "failed" || r.Cause != "model_invalid" || !strings.Contains(r.Reason, says) {
						t.Errorf("hold.start with the decoder down = %+v, %v; want idle, failed, cause model_invalid and the message %q", r, err, says)
					}
					if st := d.Status(); st.Hold != daemonapi.HoldIdle {
						t.Errorf("status hold %q after a refused hold.start, want idle", st.Hold)
					}
					if n := len(d.Records("capture", "child started")); n != 0 {
						t.Errorf("the microphone was opened %d times for a hold that was refused", n)
					}
					if r, err := c.Hold(ctx, daemonapi.MethodHoldStop); err != nil || r.Hold != daemonapi.HoldIdle || r.Outcome != "" {
						t.Errorf("hold.stop after the refusal = %+v, %v; want idle, no hold", r, err)
					}
					return
				}
				d.WaitRunning("decode")
				pid := d.PidOf("decode")
				plays := d.capturePlays(c)
				if mode == "eager" {
					// Two pieces decoded, none being decoded: the decoder
					// goes down between pieces.
					d.WaitLog(30*time.Second, "two pieces decoded", func(map[string]any) bool {
						return len(d.Records("", "hold: piece decoded")) >= 2
					})
				} else {
					time.Sleep(time.Until(plays.Add(5 * time.Second)))
				}
				if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				down()
				time.Sleep(time.Until(plays.Add(time.Duration(len(audio)) * time.Second / sr)))
				r, took := d.stopWithin(c)
				if r.Outcome != "failed" || r.Cause != "model_invalid" || !strings.Contains(r.Reason, says) {
					t.Errorf("hold.stop with the decoder down since mid-hold = %+v; want failed, cause model_invalid and the message %q\n%s", r, says, d.LogTail(30))
				}
				t.Logf("hold.stop answered in %v: %s (%s), %d decoder results during the hold", took.Round(time.Millisecond), r.Outcome, r.Cause, len(d.Records("decode", "utterance")))
			})
		}
	}
}
