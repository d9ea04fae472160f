package e2e

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/yazses/yazses/lib/daemonapi"
)

// TestDictationPostProcess: dictation.post_process runs the real daemon's
// text through a real filter before it is typed into the focused X
// window: an uppercasing filter's output arrives; a filter that sleeps past
// post_process_timeout_ms, one that fails and one that prints nothing
// leave the text as it was, and the daemon logs why, never the text.
func TestDictationPostProcess(t *testing.T) {
	t.Parallel()
	const said = "hello from the filter"
	for _, tc := range []struct {
		name, body, want, reason string
	}{
		{"uppercase", `tr a-z A-Z`, "HELLO FROM THE FILTER", ""},
		{"sleeps past the bound", `exec sleep 60`, said, "timeout"},
		{"fails", `cat >&2; exit 1`, said, "exit_status"},
		{"prints nothing", `cat >/dev/null`, said, "empty_output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			filter := filepath.Join(t.TempDir(), "filter")
			if err := os.WriteFile(filter, []byte("#!/bin/sh\n"+tc.body+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			x := startX(t)
			rec := startRecorder(t, x)
			rec.Focus(t)
			speech := answerWAV()
			cfg := dictationConfig(speech, true).
				With("dictation.post_process", arr(filter)).
				With("dictation.post_process_timeout_ms", "500")
			d := startDaemon(t, cfg, append(x.DaemonEnv(), "YAZ_FAKE_TEXT="+said)...)
			c := d.Client()
			d.holdWhileSpeaking(c, wavDuration(t, speech))
			r := d.stopHold(c)
			want := daemonapi.HoldResult{Hold: daemonapi.HoldIdle, Outcome: "typed", Chars: utf8.RuneCountInString(tc.want), Backend: "x11"}
			if r != want {
				t.Errorf("hold.stop = %+v, want %+v", r, want)
			}
			rec.WaitFor(t, tc.want)
			if got := rec.settled(t); got != tc.want {
				t.Errorf("window received %q, want %q", got, tc.want)
			}
			if l := d.lastByCtl(); l.Text != tc.want {
				t.Errorf("ctl last = %q, want %q", l.Text, tc.want)
			}
			var reasons []string
			for _, m := range d.LogRecords() {
				if strings.HasPrefix(m["msg"].(string), "dictation.post_process gave no text") {
					reasons = append(reasons, m["reason"].(string))
				}
			}
			if tc.reason == "" && len(reasons) != 0 || tc.reason != "" && (len(reasons) != 1 || reasons[0] != tc.reason) {
				t.Errorf("post-process failures logged %q, want %q", reasons, tc.reason)
			}
			for _, s := range []string{"hello from", "HELLO FROM"} {
				if strings.Contains(d.Log.String(), s) {
					t.Errorf("the daemon's log holds %q of the text", s)
				}
			}
		})
	}
}

// toneAt reports whether the 50 ms window of s at i is a pure tone of hz
// (nearly all of its energy at that frequency, and loud).
func toneAt(s []int16, i int, hz float64) bool {
	const n = 800 // 50 ms: 44 periods at 880 Hz, 33 at 660 Hz
	var energy, re, im float64
	for k, v := range s[i : i+n] {
		f := float64(v)
		energy += f * f
		ph := 2 * math.Pi * hz * float64(k) / 16000
		re += f * math.Cos(ph)
		im += f * math.Sin(ph)
	}
	if energy/n < 1000*1000 { // quieter than an RMS of 1000
		return false
	}
	return 2*(re*re+im*im)/(n*energy) > 0.8
}

// findTone returns the first 10 ms step at or after from where s holds a
// tone of hz, or -1.
func findTone(s []int16, from int, hz float64) int {
	for i := max(from, 0); i+800 <= len(s); i += 160 {
		if toneAt(s, i, hz) {
			return i
		}
	}
	return -1
}

// The cues' pitches (cmd/yaz-speak's cue.go).
const (
	cueStartHz = 880
	cueEndHz   = 660
)

// TestDictationCues: with dictation.cues the real yaz-speak plays a tone
// into the PulseAudio null sink when a hold starts and another when its
// recording ends (the test's own ears on the sink's monitor hear both, in
// order); the microphone, which records that monitor and is always open,
// never gives the start cue to the hold: the audio the decoder gets holds
// the speech played into the sink after the cue, and no cue. Off, no tone
// plays: after the hold the test plays speech of its own and hears it,
// and no cue came before it.
func TestDictationCues(t *testing.T) {
	for _, on := range []bool{true, false} {
		name := "off"
		if on {
			name = "on"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			sink := privateSink(t)
			ears := listenTo(t, ctx, sink+".monitor")
			frames := filepath.Join(t.TempDir(), "frames.bin")
			cfg := echoConfig(sink, 170, frames).
				With("capture.mode", q("always")).
				With("dictation.cues", strconv.FormatBool(on))
			d := startDaemon(t, cfg, "YAZ_FAKE_TEXT=the cue test")
			// play speaks text into the sink, as a person talking into
			// the microphone, and returns once it has been played.
			play := func(text string) {
				t.Helper()
				out, err := exec.CommandContext(ctx, bin("yaz-speak"), "--backend", "pulseaudio", "--device", sink, text).CombinedOutput()
				if err != nil {
					t.Fatalf("yaz-speak into the sink: %v: %s", err, out)
				}
			}
			c := d.Client()
			hctx, hcancel := context.WithTimeout(ctx, 10*time.Second)
			defer hcancel()
			if r, err := c.Hold(hctx, daemonapi.MethodHoldStart); err != nil || r.Hold != daemonapi.HoldHolding {
				t.Fatalf("hold.start = %+v, %v", r, err)
			}
			start := -1
			if on && !ears.waitFor(ctx, func(s []int16) bool { start = findTone(s, 0, cueStartHz); return start >= 0 }) {
				t.Fatalf("the start cue never reached the sink\n%s", d.LogTail(30))
			}
			play(echoAnswer)
			r := d.stopHold(c)
			if r.Outcome == "" || r.Outcome == "empty" || r.Outcome == "failed" {
				t.Fatalf("hold.stop = %+v, want the speech decoded\n%s", r, d.LogTail(30))
			}
			if on {
				if !ears.waitFor(ctx, func(s []int16) bool { return findTone(s, start+800, cueEndHz) >= 0 }) {
					t.Errorf("the end cue never reached the sink after the start cue\n%s", d.LogTail(30))
				}
			} else {
				// Something that comes after any cue would: speech of the
				// test's own, heard.
				ears.mu.Lock()
				mark := len(ears.samples)
				ears.mu.Unlock()
				play("marker")
				if !ears.waitFor(ctx, func(s []int16) bool { return loudWindow(s, mark, 0.01) >= 0 }) {
					t.Fatal("the marker never reached the sink")
				}
				ears.mu.Lock()
				heard := append([]int16(nil), ears.samples...)
				ears.mu.Unlock()
				if i := findTone(heard, 0, cueStartHz); i >= 0 {
					t.Errorf("cues off, and a start cue played at %d ms", i/16)
				}
				if i := findTone(heard, 0, cueEndHz); i >= 0 {
					t.Errorf("cues off, and an end cue played at %d ms", i/16)
				}
			}
			utts := utterances(t, frames)
			if len(utts) == 0 {
				t.Fatal("the decoder got no utterance")
			}
			for i, u := range utts {
				if loudWindow(u, 0, 0.01) < 0 {
					t.Errorf("utterance %d holds no speech", i)
				}
				for _, hz := range []float64{cueStartHz, cueEndHz} {
					if at := findTone(u, 0, hz); at >= 0 {
						t.Errorf("utterance %d (%d ms, silent from %d ms to %d ms) holds a %v Hz cue at %d ms: the hold heard it", i, len(u)/16, zeroRun(u)[0]/16, zeroRun(u)[1]/16, hz, at/16)
					}
				}
			}
		})
	}
}

// zeroRun is where the longest run of exact zeros in s begins and ends
// (the quieted audio), for the failure's message.
func zeroRun(s []int16) [2]int {
	best, cur := [2]int{}, 0
	for i, v := range s {
		if v != 0 {
			cur = i + 1
			continue
		}
		if i+1-cur > best[1]-best[0] {
			best = [2]int{cur, i + 1}
		}
	}
	return best
}

// TestDictationCueNotOverQuestion: with dictation.cues, a hold that
// interrupts a question being spoken (barge-in) gets no start cue: the
// speaker had the question in hand. What the sink played up to the hold's
// end cue holds no start cue.
func TestDictationCueNotOverQuestion(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sink := privateSink(t)
	ears := listenTo(t, ctx, sink+".monitor")
	frames := filepath.Join(t.TempDir(), "frames.bin")
	d := startDaemon(t, echoConfig(sink, 170, frames).With("dictation.cues", "true"), "YAZ_FAKE_TEXT=the cue test")
	res := make(chan daemonapi.AskResult, 1)
	go func() { res <- d.Ask(longQuestion, 60) }()
	waitSpoken(d, 1)
	// Heard: the question is playing (a sound server may start it late).
	if !ears.waitFor(ctx, func(s []int16) bool { return loudWindow(s, 0, 0.01) >= 0 }) {
		t.Fatalf("the question never reached the sink\n%s", d.LogTail(30))
	}
	c := d.Client()
	if r, err := c.Hold(ctx, daemonapi.MethodHoldStart); err != nil || r.Hold != daemonapi.HoldHolding {
		t.Fatalf("hold.start = %+v, %v", r, err)
	}
	if r := <-res; r.Reason != daemonapi.ReasonInterrupted {
		t.Errorf("ask = %+v, want interrupted by the hold", r)
	}
	if _, err := c.Hold(ctx, daemonapi.MethodHoldCancel); err != nil {
		t.Fatal(err)
	}
	// The end cue comes after the hold, from the same speaker, which
	// plays its requests in order: once it is heard, a start cue sent
	// at the hold's start would have been heard before it.
	end := -1
	if !ears.waitFor(ctx, func(s []int16) bool { end = findTone(s, 0, cueEndHz); return end >= 0 }) {
		t.Fatalf("the end cue never reached the sink\n%s", d.LogTail(30))
	}
	ears.mu.Lock()
	heard := append([]int16(nil), ears.samples[:end]...)
	ears.mu.Unlock()
	if i := findTone(heard, 0, cueStartHz); i >= 0 {
		t.Errorf("a start cue played at %d ms, over or after the question it interrupted", i/16)
	}
}
