package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
)

// TestHoldDecodedInPiecesAtPauses: with dictation.eager_pause_ms a hold
// over speech with pauses (jfk.wav, Silero through the real child) is
// decoded in pieces while it goes on: the decoder child gets pieces before
// the key is released, and the final text is the pieces joined with one
// space, with dictation.replace applied to the whole (a phrase that spans
// two pieces is replaced), on the fake decoder's exact words.
func TestHoldDecodedInPiecesAtPauses(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, sileroConfig(t).
		With("dictation.eager_pause_ms", "300").
		With("dictation.replace", `[{from = "beta alpha", to = "BA"}]`).
		With("children.decode", arr(bin("fakedecode"))).
		With("children.capture", arr(bin("yaz-capture"), "--file", world.jfk)),
		"YAZ_FAKE_TEXT=alpha beta")
	d.WaitRunning("vad")
	c := d.Client()
	defer c.Close()
	d.holdWhileSpeaking(c, wavDuration(t, world.jfk))
	during := len(d.Records("", "hold: piece decoded"))
	d.stopHold(c)
	last := d.lastByCtl()
	n := len(d.Records("", "hold: piece decoded"))
	if during < 1 || n < 2 {
		t.Fatalf("%d pieces decoded during the hold, %d in all; want pieces during it and at least 2 in all\n%s", during, n, d.LogTail(40))
	}
	whole := strings.TrimSpace(strings.Repeat("alpha beta ", n))
	if want := strings.ReplaceAll(whole, "beta alpha", "BA"); last.Text != want {
		t.Errorf("last text %q, want %q (%d pieces joined, replacements on the whole)", last.Text, want, n)
	}
	t.Logf("%d pieces, %d of them before release", n, during)
}

// TestHoldCancelDropsEagerPieces: hold.cancel after pieces were decoded
// during the hold keeps nothing: no text for `last`.
func TestHoldCancelDropsEagerPieces(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, sileroConfig(t).
		With("dictation.eager_pause_ms", "300").
		With("children.decode", arr(bin("fakedecode"))).
		With("children.capture", arr(bin("yaz-capture"), "--file", world.jfk)),
		"YAZ_FAKE_TEXT=never kept")
	c := d.Client()
	defer c.Close()
	d.holdWhileSpeaking(c, wavDuration(t, world.jfk))
	if d.decodes() < 1 {
		t.Fatalf("no piece decoded during the hold\n%s", d.LogTail(30))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r, err := c.Hold(ctx, daemonapi.MethodHoldCancel); err != nil || r.Outcome != "cancelled" {
		t.Fatalf("hold.cancel = %+v, %v", r, err)
	}
	if l := d.lastByCtl(); l.Text != "" {
		t.Errorf("last after hold.cancel = %+v, want no text", l)
	}
}

// TestWatchPreviewOfEagerPieces: with the owner's opt-in
// (dictation.preview) the watch stream carries the text of the pieces
// decoded so far while the hold goes on, and none once it has ended;
// without the opt-in, the same hold puts no text on the stream.
func TestWatchPreviewOfEagerPieces(t *testing.T) {
	t.Parallel()
	for _, preview := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[preview], func(t *testing.T) {
			t.Parallel()
			d := startDaemon(t, sileroConfig(t).
				With("dictation.eager_pause_ms", "300").
				With("dictation.preview", map[bool]string{true: "true", false: "false"}[preview]).
				With("children.decode", arr(bin("fakedecode"))).
				With("children.capture", arr(bin("yaz-capture"), "--file", world.jfk)),
				"YAZ_FAKE_TEXT=alpha beta")
			d.WaitRunning("vad")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			wc := d.Client()
			defer wc.Close()
			events := make(chan daemonapi.WatchEvent, 1024)
			watched := make(chan error, 1)
			go func() {
				watched <- wc.Watch(ctx, func(ev daemonapi.WatchEvent) error {
					events <- ev
					return nil
				})
			}()
			c := d.Client()
			defer c.Close()
			d.holdWhileSpeaking(c, wavDuration(t, world.jfk))
			if d.decodes() < 1 {
				t.Fatalf("no piece decoded during the hold\n%s", d.LogTail(30))
			}
			d.stopHold(c)
			var during, after int
			ended := false
			for !ended {
				select {
				case ev := <-events:
					switch {
					case ev.Hold != daemonapi.StateIdle && strings.Contains(ev.Preview, "alpha beta"):
						during++
					case ev.Hold == daemonapi.StateIdle && ev.LastHold != "":
						if ev.Preview != "" {
							after++
						}
						ended = true
					case ev.Preview != "" && !preview:
						during++
					}
				case err := <-watched:
					t.Fatalf("watch ended: %v", err)
				case <-time.After(30 * time.Second):
					t.Fatal("no idle event after the hold")
				}
			}
			if preview && during == 0 {
				t.Error("with dictation.preview = true no event carried the pieces' text during the hold")
			}
			if !preview && during > 0 {
				t.Errorf("with dictation.preview = false %d events carried text", during)
			}
			if after > 0 {
				t.Error("the preview outlived the hold")
			}
		})
	}
}

// TestEagerPiecesGoOnFromTheTextSoFar: with the real yaz-decode, each
// eager piece after the first goes with the text of the pieces before it
// (a Context frame), which whisper reads after the vocabulary hint, as it
// does from one 30-second window to the next; its decoder record counts
// it (context_chars, never the text). A Parakeet model has no use for it
// and gets none in its prompt, with no warning about a setting nobody set.
func TestEagerPiecesGoOnFromTheTextSoFar(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"whisper", "parakeet"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			model := world.tinyEn
			if engine == "parakeet" {
				model, _ = parakeet(t)
			}
			d := startDaemon(t, sileroConfig(t).
				With("decode.model", q(model)).
				With("dictation.eager_pause_ms", "300").
				With("children.capture", arr(bin("yaz-capture"), "--file", world.jfk)))
			d.WaitRunning("vad")
			c := d.Client()
			defer c.Close()
			d.holdWhileSpeaking(c, wavDuration(t, world.jfk))
			d.stopHold(c)
			recs := d.Records("decode", "utterance")
			if len(recs) < 3 {
				t.Fatalf("%d decoder results, want a piece for each of jfk.wav's phrases\n%s", len(recs), d.LogTail(40))
			}
			var ctxChars []float64
			for _, r := range recs {
				ctxChars = append(ctxChars, field(r, "context_chars"))
			}
			for i, n := range ctxChars {
				switch {
				case i == 0 && n != 0:
					t.Errorf("the first piece went with %v characters of context, want none", n)
				case engine == "parakeet" && n != 0:
					t.Errorf("piece %d went to Parakeet with %v characters of context, want none", i+1, n)
				case engine == "whisper" && i > 0 && (n <= 0 || n > 200):
					t.Errorf("piece %d went with %v characters of context, want the text so far (1 to 200)", i+1, n)
				}
			}
			if strings.Contains(d.Log.String(), "not supported with a Parakeet model") {
				t.Errorf("a warning about a setting nobody set:\n%s", d.LogTail(20))
			}
			t.Logf("context characters per piece: %v", ctxChars)
		})
	}
}

// TestEagerSpeculation: the last piece (with eager decoding) or the whole
// hold (without) is decoded at the first 150 ms of silence, before the
// key comes up. A person who lets go 400 ms after the last word gets that
// decode as the text: every decoder turn was a speculation, none came
// after the release, and the text holds all of the speech. One who goes
// on after a pause shorter than dictation.eager_pause_ms has that
// speculation abandoned, and the next one is kept. One who lets go
// mid-word (the tail records the rest, up to dictation.tail_ms) keeps
// none: the text is decoded after the release, over all the audio. The
// fake decoder answers with the length of what it got, so the text shows
// which audio each kept decode covered. With the energy detector (no
// Silero model) nothing is speculated: its silence is not trusted.
func TestEagerSpeculation(t *testing.T) {
	t.Parallel()
	said := spokenWAV(t, "Yes go ahead and deploy it")
	more := spokenWAV(t, "then tell the whole team about it")
	sec := func(s []float32) time.Duration { return time.Duration(len(s)) * time.Second / sr }
	for _, mode := range []string{"eager", "whole", "energy"} {
		for _, tc := range []struct {
			name    string
			audio   [][]float32
			release time.Duration // from the file's start
			used    float64
			dropped bool
		}{
			{"kept", [][]float32{zeros(0.3), said, zeros(3)}, 700*time.Millisecond + sec(said), 1, false},
			{"abandoned", [][]float32{zeros(0.3), said, zeros(0.3), more, zeros(3)}, time.Second + sec(said) + sec(more), 1, true},
			{"mid-word", [][]float32{zeros(0.3), said, zeros(0.3), more, zeros(3)}, 600*time.Millisecond + sec(said) + sec(more)/3, 0, true},
		} {
			if mode == "energy" && tc.name != "kept" {
				continue
			}
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				cfg := sileroConfig(t)
				if mode == "energy" {
					cfg = baseConfig().With("vad.engine", q("energy"))
				}
				d, c := replaying(t, cfg.
					With("dictation.eager_pause_ms", map[string]string{"eager": "700", "whole": "0", "energy": "0"}[mode]).
					With("dictation.tail_ms", "200").
					With("children.decode", arr(bin("fakedecode"))),
					join(tc.audio...), "YAZ_FAKE_TEXT=piece of {audio_ms}")
				d.holdUntil(c, tc.release)
				d.stopHold(c)
				last := d.lastByCtl()
				var ms int
				if _, err := fmt.Sscanf(last.Text, "piece of %d", &ms); err != nil || strings.Count(last.Text, "piece") != 1 {
					t.Fatalf("last text %q, want one piece\n%s", last.Text, d.LogTail(40))
				}
				// The kept decode runs from the hold's start (its pre-roll)
				// to past the last word (mid-word: past the release).
				if got, least := time.Duration(ms)*time.Millisecond, tc.release-400*time.Millisecond; got < least {
					t.Errorf("the text's decode had %v of audio, want at least %v: all that was said", got, least)
				}
				// fakedecode's own line, on its stderr: it may come in after
				// the result on its stdout.
				turns := func() float64 { return float64(len(d.Records("decode", "decoding utterance"))) }
				if mode == "energy" {
					// No speculation at all: one decoder turn, after the
					// release, and no eager run to report on.
					d.Await(10*time.Second, func() bool { return turns() >= 1 })
					if n, sp := turns(), d.Records("", "hold: speculations"); n != 1 || len(sp) != 0 {
						t.Errorf("%v decoder turns and speculations %v, want 1 turn and none", n, sp)
					}
					return
				}
				d.WaitLog(10*time.Second, "the hold's speculations record", func(m map[string]any) bool { return m["msg"] == "hold: speculations" })
				sp := d.Records("", "hold: speculations")
				if len(sp) != 1 || field(sp[0], "used") != tc.used || (field(sp[0], "dropped") > 0) != tc.dropped {
					t.Fatalf("speculations %v, want used %v, some dropped %v\n%s", sp, tc.used, tc.dropped, d.LogTail(30))
				}
				want := field(sp[0], "used") + field(sp[0], "dropped") + 1 - tc.used
				d.Await(10*time.Second, func() bool { return turns() >= want })
				if n := turns(); n != want {
					t.Errorf("%v decoder turns for %v speculations, want %v (%v after the release)", n, sp[0], want, 1-tc.used)
				}
				t.Logf("speculations %v, text %q", sp[0], last.Text)
			})
		}
	}
}
