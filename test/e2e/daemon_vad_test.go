package e2e

import (
	"context"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/wav"
)

// sileroConfig is baseConfig with the daemon's detector set to the real
// Silero model.
func sileroConfig(t testing.TB) toml {
	return baseConfig().With("vad.engine", q("silero")).With("vad.model", q(sileroModel(t)))
}

// replaying starts a daemon with cfg whose microphone plays audio (from
// the start of each hold or answer), waits for its detector child when
// cfg selects Silero, and returns it with a client (closed at the end).
func replaying(t *testing.T, cfg toml, audio []float32, env ...string) (*daemon, *daemonapi.Client) {
	t.Helper()
	f := writeWAVFile(t, filepath.Join(t.TempDir(), "mic.wav"), audio)
	d := startDaemon(t, cfg.With("children.capture", arr(bin("yaz-capture"), "--file", f)), env...)
	if cfg["vad"]["engine"] == q("silero") {
		d.WaitRunning("vad")
	}
	c := d.Client()
	t.Cleanup(func() { c.Close() })
	return d, c
}

// TestDaemonVADChild: with [vad] selecting Silero the daemon runs the
// detector child (children.vad, `yaz-decode vad-stream`) and lists it in
// status like the others; with the energy detector there is none; with a
// missing model it is left down with vad_model_missing, as the decoder is.
func TestDaemonVADChild(t *testing.T) {
	t.Parallel()
	t.Run("silero", func(t *testing.T) {
		t.Parallel()
		d := startDaemon(t, sileroConfig(t))
		d.WaitRunning("vad")
		if c := d.Child("vad"); c.PID == 0 || c.Restarts != 0 {
			t.Errorf("status of vad = %+v, want running once", c)
		}
	})
	t.Run("energy", func(t *testing.T) {
		t.Parallel()
		d := startDaemon(t, baseConfig().With("vad.engine", q("energy")))
		for _, c := range d.Status().Children {
			if c.Name == "vad" {
				t.Errorf("status lists a vad child %+v with vad.engine = \"energy\"", c)
			}
		}
	})
	t.Run("missing", func(t *testing.T) {
		t.Parallel()
		missing := filepath.Join(t.TempDir(), "none.bin")
		d := newDaemon(t, baseConfig().With("vad.engine", q("silero")).With("vad.model", q(missing)))
		d.Start()
		d.WaitRunning("gate", "speak")
		d.WaitFor(30*time.Second, "the vad child left down", func() bool {
			for _, c := range d.Status().Children {
				if c.Name == "vad" && c.State == "exited" {
					return true
				}
			}
			return false
		})
		if c := d.Child("vad"); c.Cause != "vad_model_missing" || c.Restarts != 0 {
			t.Errorf("status of vad = %+v, want exited with cause vad_model_missing, never restarted", c)
		}
	})
}

// decoderTurns stops the daemon (so that every child's log lines are in)
// and returns the decoder child's "utterance" records: one per utterance
// it was sent.
func (d *daemon) decoderTurns() []map[string]any {
	d.Stop()
	var out []map[string]any
	for _, r := range d.LogRecords() {
		if r["child"] == "decode" && r["msg"] == "utterance" {
			out = append(out, r)
		}
	}
	return out
}

// TestHoldOverNoiseIsEmptyWithSilero: a hold over a fan-like noise (pink
// noise that starts abruptly, which the energy detector takes for speech)
// ends "empty" without a decoder turn when the daemon's detector is Silero
// (the real child and model); with the energy detector the same hold goes
// to the decoder, which tells the two apart.
func TestHoldOverNoiseIsEmptyWithSilero(t *testing.T) {
	t.Parallel()
	fan := writeWAVFile(t, filepath.Join(t.TempDir(), "fan.wav"),
		join(zeros(0.3), pinkNoise(rand.New(rand.NewPCG(7, 7)), 3, -25)))
	hold := func(t *testing.T, cfg toml) (outcome string, turns int) {
		d := startDaemon(t, cfg.With("children.capture", arr(bin("yaz-capture"), "--file", fan)))
		c := d.Client()
		defer c.Close()
		d.holdWhileSpeaking(c, wavDuration(t, fan))
		r := d.stopHold(c)
		return r.Outcome, len(d.decoderTurns())
	}
	t.Run("silero", func(t *testing.T) {
		t.Parallel()
		cfg := sileroConfig(t)
		if out, turns := hold(t, cfg); out != "empty" || turns != 0 {
			t.Errorf("hold over noise with Silero: outcome %q, %d decoder turns; want empty, none", out, turns)
		}
	})
	t.Run("energy", func(t *testing.T) {
		t.Parallel()
		if _, turns := hold(t, baseConfig().With("vad.engine", q("energy"))); turns != 1 {
			t.Errorf("hold over noise with the energy detector: %d decoder turns, want 1 (it takes the noise for speech)", turns)
		}
	})
}

// TestAskOverNoiseIsNoAnswer: an answer window that hears only a fan-like
// noise ends no_answer (silence) without a decoder turn with Silero; the
// energy detector takes the same noise for an answer and decodes it.
func TestAskOverNoiseIsNoAnswer(t *testing.T) {
	t.Parallel()
	fan := writeWAVFile(t, filepath.Join(t.TempDir(), "fan.wav"),
		join(zeros(0.3), pinkNoise(rand.New(rand.NewPCG(8, 8)), 3, -25)))
	ask := func(t *testing.T, cfg toml) (daemonapi.AskResult, int) {
		d := startDaemon(t, cfg.With("children.capture", arr(bin("yaz-capture"), "--file", fan)))
		r := d.Ask("Deploy?", 30)
		return r, len(d.decoderTurns())
	}
	t.Run("silero", func(t *testing.T) {
		t.Parallel()
		if r, turns := ask(t, sileroConfig(t)); r.Result != daemonapi.NoAnswer || r.Reason != daemonapi.ReasonSilence || turns != 0 {
			t.Errorf("ask over noise with Silero = %+v, %d decoder turns; want no_answer (silence), none", r, turns)
		}
	})
	t.Run("energy", func(t *testing.T) {
		t.Parallel()
		if r, turns := ask(t, baseConfig().With("vad.engine", q("energy"))); turns != 1 {
			t.Errorf("ask over noise with the energy detector = %+v, %d decoder turns; want 1 (it takes the noise for speech)", r, turns)
		}
	})
}

// spokenWAV is text spoken by espeak-ng (yaz-speak) as 16 kHz float32.
func spokenWAV(t testing.TB, text string) []float32 {
	t.Helper()
	p := filepath.Join(t.TempDir(), "spoken.wav")
	if out, err := exec.Command(bin("yaz-speak"), "--out", p, "--format", "wav", text).CombinedOutput(); err != nil {
		t.Fatalf("yaz-speak: %v: %s", err, out)
	}
	s, _, err := wav.ReadFile16k(p, 60*sr)
	if err != nil {
		t.Fatal(err)
	}
	from, to := soundExtent(s)
	return s[from:to]
}

// TestAskAnswerWithAPauseComesBackWhole: a slow speaker's answer with a
// pause of 60 % of ask.answer_silence_ms in the middle is one answer: the
// audio the decoder gets runs from the first word to the last (the
// decoder child's own record of the utterance's length), with Silero.
func TestAskAnswerWithAPauseComesBackWhole(t *testing.T) {
	t.Parallel()
	const silenceMs = 1000
	a, b := spokenWAV(t, "Yes, go ahead"), spokenWAV(t, "and deploy it to production.")
	pause := zeros(0.6 * silenceMs / 1000)
	answer := writeWAVFile(t, filepath.Join(t.TempDir(), "answer.wav"), join(zeros(0.2), a, pause, b, zeros(2.5)))
	spoken := time.Duration(len(a)+len(pause)+len(b)) * time.Second / sr
	d := startDaemon(t, sileroConfig(t).
		With("ask.answer_silence_ms", "1000").
		With("children.capture", arr(bin("yaz-capture"), "--file", answer)))
	d.WaitRunning("vad")
	r := d.Ask("Deploy?", 60)
	turns := d.decoderTurns()
	if len(turns) != 1 {
		t.Fatalf("ask = %+v; %d decoder turns, want 1", r, len(turns))
	}
	if got := time.Duration(field(turns[0], "audio_ms")) * time.Millisecond; got < spoken {
		t.Errorf("the answer's audio is %v, want at least the %v from its first word to its last (pause %v)", got, spoken, time.Duration(len(pause))*time.Second/sr)
	} else {
		t.Logf("answer audio %v for %v spoken with a %v pause", got, spoken, time.Duration(len(pause))*time.Second/sr)
	}
}

// holdTail is the daemon's "hold tail" debug record of its one hold.
func (d *daemon) holdTail() map[string]any { return d.oneRecord("hold tail") }

// oneRecord is the daemon's one debug record with msg, which the daemon
// wrote before the last call that has answered.
func (d *daemon) oneRecord(msg string) map[string]any {
	d.T.Helper()
	// Read from the daemon's stderr as it comes.
	d.WaitLog(10*time.Second, "the "+msg+" record", func(m map[string]any) bool { return m["msg"] == msg })
	var recs []map[string]any
	for _, r := range d.LogRecords() {
		if r["msg"] == msg {
			recs = append(recs, r)
		}
	}
	if len(recs) != 1 {
		d.T.Fatalf("%d %q records, want 1\n%s", len(recs), msg, d.LogTail(30))
	}
	return recs[0]
}

// TestHoldTailEndsWithTheSpeaker: dictation.tail_ms is a maximum. A hold
// released well after the speech ended (here after 1.5 s of silence,
// the capture file's end) closes at once: no tail. A hold released in the
// middle of continuous speech keeps recording (the tail runs) until the
// speaker pauses or the maximum; one released while the speaker has a
// few hundred milliseconds left records them and ends at their silence,
// well before the maximum; one whose capture stream has ended (a file
// ran out mid-word, a device went away) has nothing left to wait for and
// closes at once. The daemon's "hold tail" record tells which, and how
// much audio the tail added.
func TestHoldTailEndsWithTheSpeaker(t *testing.T) {
	t.Parallel()
	sentence := spokenWAV(t, "Yes go ahead and deploy it to production on Monday morning then tell the whole team about it in the channel")
	said := sentence[:min(len(sentence), 2*sr)]
	const left = 600 * time.Millisecond // "finish after release": speech after the key
	for _, tc := range []struct {
		name    string
		audio   []float32
		release time.Duration // from the file's start; 0: once the file has been replayed
		want    string        // why, or "" for silence or max
	}{
		{"after the speech", join(zeros(0.2), sentence[:len(sentence)/3], zeros(1.5)), 0, "quiet"},
		{"finish after release", join(zeros(0.2), said, zeros(3)), 200*time.Millisecond + time.Duration(len(said))*time.Second/sr - left, "silence"},
		{"capture ended", join(zeros(0.2), said), 0, "ended"},
		// The file speaks for longer than 6 s without a pause of 150 ms.
		{"mid-word", join(zeros(0.2), sentence, sentence, zeros(1)), 2 * time.Second, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, c := replaying(t, sileroConfig(t).With("dictation.tail_ms", "1500"), tc.audio)
			if tc.release == 0 {
				d.holdWhileSpeaking(c, time.Duration(len(tc.audio))*time.Second/sr)
			} else {
				d.holdUntil(c, tc.release)
			}
			d.stopHold(c)
			r := d.holdTail()
			added := field(r, "tail_audio_ms")
			var ok bool
			switch tc.want {
			case "quiet", "ended": // nothing to wait for
				ok = r["why"] == tc.want && added == 0
			case "silence": // the rest of the speech, less than the maximum
				ok = r["why"] == "silence" && added > 0 && added < 1500
			default: // still speaking: the tail runs
				ok = r["why"] != "quiet" && added > 0
			}
			if !ok {
				t.Errorf("hold tail %v, want why %q (\"\": silence or max) and the audio that goes with it", r, tc.want)
			} else {
				t.Logf("hold tail %v", r)
			}
		})
	}
}

// TestToggledHoldStopsItselfAfterSilence: with dictation.auto_stop_ms a
// hold opened by hold.toggle ends by itself once the detector (Silero, the
// real child) has heard that much silence: after the speech, or from the
// start when nobody speaks. It is decoded as if toggled off (a dictation
// outcome in the audit), and a held hold (hold.start) is not affected.
func TestToggledHoldStopsItselfAfterSilence(t *testing.T) {
	t.Parallel()
	said := spokenWAV(t, "Yes go ahead and deploy it")
	for _, tc := range []struct {
		name    string
		audio   []float32
		outcome string
	}{
		{"after speech", join(zeros(0.2), said, zeros(8)), ""},
		{"nobody spoke", zeros(8), "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, c := replaying(t, sileroConfig(t).With("dictation.auto_stop_ms", "1000"), tc.audio)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if r, err := c.Hold(ctx, daemonapi.MethodHoldToggle); err != nil || r.Hold != daemonapi.HoldHolding {
				t.Fatalf("hold.toggle = %+v, %v", r, err)
			}
			d.WaitFor(20*time.Second, "the toggled hold to end by itself", func() bool {
				return d.Count("hold.auto_stopped", "") == 1 && d.Status().Hold == daemonapi.HoldIdle
			})
			var outcome string
			d.WaitFor(20*time.Second, "the hold's dictation outcome", func() bool {
				for _, e := range d.Events() {
					if strings.HasPrefix(e.Kind, "dictation.") {
						outcome = strings.TrimPrefix(e.Kind, "dictation.")
						return true
					}
				}
				return false
			})
			if tc.outcome != "" && outcome != tc.outcome {
				t.Errorf("outcome %q, want %q", outcome, tc.outcome)
			}
			if tc.outcome == "" && (outcome == "empty" || outcome == "lost") {
				t.Errorf("outcome %q, want the speech decoded", outcome)
			}
		})
	}
	t.Run("held", func(t *testing.T) {
		t.Parallel()
		f := writeWAVFile(t, filepath.Join(t.TempDir(), "room.wav"), zeros(4))
		d := startDaemon(t, sileroConfig(t).With("dictation.auto_stop_ms", "500").
			With("children.capture", arr(bin("yaz-capture"), "--file", f)))
		c := d.Client()
		defer c.Close()
		d.holdWhileSpeaking(c, 4*time.Second)
		if st := d.Status(); st.Hold != daemonapi.HoldHolding || d.Count("hold.auto_stopped", "") != 0 {
			t.Errorf("a held hold after 4 s of silence: hold %q, %d auto stops; want still holding", st.Hold, d.Count("hold.auto_stopped", ""))
		}
		d.stopHold(c)
	})
}

// TestHoldWhileTheDetectorIsDown: a detector child that cannot run (here
// a program that exits at once, so its supervisor restarts it and then
// leaves it down) never holds up a hold: the energy detector decides
// meanwhile, and speech is decoded.
func TestHoldWhileTheDetectorIsDown(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, sileroConfig(t).With("children.vad", arr("/bin/false")))
	c := d.Client()
	defer c.Close()
	d.holdWhileSpeaking(c, wavDuration(t, answerWAV()))
	if r := d.stopHold(c); r.Outcome == "empty" || r.Outcome == "failed" {
		t.Errorf("hold.stop = %+v, want the speech decoded with the detector child down", r)
	}
	if s := d.Child("vad"); s.State == "running" {
		t.Errorf("vad child %+v, want it not running", s)
	}
	if n := len(d.decoderTurns()); n != 1 {
		t.Errorf("%d decoder turns, want 1", n)
	}
}
