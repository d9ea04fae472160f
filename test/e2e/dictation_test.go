package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/wav"
)

// The dictation proofs run the real yazsesd with its real
// children: yaz-capture --file replays speech in real time as if it were
// spoken into the microphone, hold.start and hold.stop come over the
// socket, and the text is typed by the daemon's own injection backend into
// an xterm under a private Xvfb that records every byte it receives. The
// fake decoder (internal/fakedecode) stands in for whisper only where the
// exact words matter; TestDictationRealDecoderTypesWhatLastKeeps runs the
// real yaz-decode on the generated model.

// dictationConfig is baseConfig with the microphone replaying speech and,
// with fake, the fake decoder.
func dictationConfig(speech string, fake bool) toml {
	c := baseConfig().With("children.capture", arr(bin("yaz-capture"), "--file", speech))
	if fake {
		c = c.With("children.decode", arr(bin("fakedecode")))
	}
	return c
}

// decodes counts the utterances the decoder child was given.
func (d *daemon) decodes() int {
	n := 0
	for _, m := range d.LogRecords() {
		if m["child"] == "decode" && (m["msg"] == "decoding utterance" || m["msg"] == "utterance") {
			n++
		}
	}
	return n
}

// TestDictationTypesExactTextIntoFocusedWindow: speech played into the
// microphone, hold.start and hold.stop over the socket, and the decoder's
// text arrives in the focused X window byte for byte, through the daemon's
// automatic backend choice (xdotool, since DISPLAY is set and
// WAYLAND_DISPLAY is not): ASCII, non-ASCII ("Grüße, Ünïcödé ✓", which
// plain xdotool typing mangles), and a transcript with line breaks, which
// arrives as one line: never an Enter. No log or audit line holds the text.
// With the default dictation.separator, each dictation is followed by a
// space, so a second one does not run into the first; `ctl last` and the
// result's chars are the text alone.
func TestDictationTypesExactTextIntoFocusedWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, text, want string }{
		{"ascii", "hello from the fake decoder, 42 times!", "hello from the fake decoder, 42 times!"},
		{"unicode", "Grüße, Ünïcödé ✓", "Grüße, Ünïcödé ✓"},
		{"no_enter", "first line\nsecond line\r\n", "first line second line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := startX(t)
			rec := startRecorder(t, x)
			rec.Focus(t)
			speech := answerWAV()
			d := startDaemon(t, dictationConfig(speech, true).With("dictation.separator", q(" ")), append(x.DaemonEnv(), "YAZ_FAKE_TEXT="+tc.text)...)
			c := d.Client()
			arrived := ""
			for range 2 {
				d.holdWhileSpeaking(c, wavDuration(t, speech))
				r := d.stopHold(c)
				want := daemonapi.HoldResult{Hold: daemonapi.HoldIdle, Outcome: "typed", Chars: utf8.RuneCountInString(tc.want), Backend: "x11"}
				if r != want {
					t.Errorf("hold.stop = %+v, want %+v", r, want)
				}
				arrived += tc.want + " "
				rec.WaitFor(t, arrived)
			}
			if got := rec.settled(t); got != arrived {
				t.Errorf("window received %q, want %q and nothing after it", got, arrived)
			}
			if l := d.lastByCtl(); l.Text != tc.want || l.Outcome != "typed" {
				t.Errorf("ctl last = %+v, want %q typed", l, tc.want)
			}
			if n := d.Count("dictation.typed", ""); n != 2 {
				t.Errorf("audit has %d dictation.typed, want 2", n)
			}
			// Invariant 10: no log or audit line holds the transcript.
			auditLog, _ := os.ReadFile(d.Audit)
			for _, s := range []string{tc.want, strings.Join(strings.Fields(tc.want)[:2], " ")} {
				if strings.Contains(d.Log.String(), s) || strings.Contains(string(auditLog), s) {
					t.Errorf("the daemon's log or audit holds %q of the transcript", s)
				}
			}
		})
	}
}

// TestDictationRealDecoderTypesWhatLastKeeps: the real yaz-decode --serve
// on the generated model (world.mini) decodes 3 s of jfk.wav played into
// the microphone; whatever words the random model prints, the window
// receives exactly the text that `last` keeps, it is not empty, and it
// holds no line break.
func TestDictationRealDecoderTypesWhatLastKeeps(t *testing.T) {
	t.Parallel()
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	speech := speechWAV(t, 3*time.Second)
	d := startDaemon(t, dictationConfig(speech, false), x.DaemonEnv()...)
	c := d.Client()
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	r := d.stopHold(c)
	if r.Outcome != "typed" || r.Backend != "x11" {
		t.Fatalf("hold.stop = %+v, want typed with x11\n%s", r, d.LogTail(20))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := c.Last(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(l.Text) == "" || l.Outcome != "typed" {
		t.Fatalf("last = %+v, want a non-empty typed transcript", l)
	}
	if strings.ContainsAny(l.Text, "\r\n") {
		t.Errorf("last %q holds a line break", l.Text)
	}
	if r.Chars != utf8.RuneCountInString(l.Text) {
		t.Errorf("hold.stop chars = %d, last has %d", r.Chars, utf8.RuneCountInString(l.Text))
	}
	rec.WaitFor(t, l.Text)
	if got := rec.settled(t); got != l.Text {
		t.Errorf("window received %q, want %q (last) and nothing after it", got, l.Text)
	}
	// The real decoder did the work: its own log has the utterance, all
	// of the speech (jfk.wav's first 2.3 s, of which the energy detector
	// hears about 2.0; the daemon may have decoded it at the pause after
	// it, before the key came up).
	found := false
	for _, m := range d.LogRecords() {
		if m["child"] == "decode" && m["msg"] == "utterance" {
			am, _ := m["audio_ms"].(float64)
			found = found || am >= 2100
		}
	}
	if !found {
		t.Errorf("no utterance of 2.1 s or more in the decoder's log")
	}
}

// TestDictationNoFocusKeepsTextForLast: with no focused window (the
// recorder is on screen, under the pointer, but has no focus) nothing is
// typed; the outcome is "kept", `yazsesd ctl last` returns the text, and a
// notification and an INFO line of the daemon's log (both without the
// text) say so.
func TestDictationNoFocusKeepsTextForLast(t *testing.T) {
	t.Parallel()
	const text = "kept for later, not typed"
	x := startX(t)
	rec := startRecorder(t, x)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	runTool(ctx, t, x.Env, "xdotool", "mousemove", "--sync", "--window", rec.Win, "20", "20")
	speech := answerWAV()
	n := notificationServer(t)
	d := startDaemon(t, dictationConfig(speech, true), append(x.DaemonEnv(), n.env, "YAZ_FAKE_TEXT="+text)...)
	c := d.Client()
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	r := d.stopHold(c)
	n.waitFor(t, "No text field had focus")
	for _, l := range n.lines() {
		if strings.Contains(l, "kept for later") {
			t.Errorf("a notification shows the transcript: %q", l)
		}
	}
	if r.Outcome != "kept" || r.Chars != len(text) {
		t.Errorf("hold.stop = %+v, want kept, %d chars", r, len(text))
	}
	if l := d.lastByCtl(); l.Text != text || l.Outcome != "kept" || l.AtMs == 0 {
		t.Errorf("ctl last = %+v, want %q kept", l, text)
	}
	if got := rec.settled(t); got != "" {
		t.Errorf("window with no focus received %q", got)
	}
	if n := d.Count("dictation.kept", "no_target"); n != 1 {
		t.Errorf("audit has %d dictation.kept no_target, want 1", n)
	}
	// The daemon's INFO log says where the text went (the README sends
	// people there), and never the text itself.
	said := 0
	for _, m := range d.LogRecords() {
		msg, _ := m["msg"].(string)
		if m["child"] == nil && m["level"] == "INFO" && strings.Contains(msg, "no focused window") &&
			strings.Contains(msg, "kept for `yazsesd ctl last`") {
			said++
		}
	}
	if said != 1 {
		t.Errorf("the daemon's INFO log has %d lines saying the text was kept, want 1\n%s", said, d.LogTail(15))
	}
	if strings.Contains(d.Log.String(), "kept for later") {
		t.Errorf("the daemon's log holds the transcript")
	}
	// The check can fail: once the window has the focus, the next hold
	// types into it.
	rec.Focus(t)
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	if r := d.stopHold(c); r.Outcome != "typed" {
		t.Errorf("hold.stop with focus = %+v, want typed", r)
	}
	rec.WaitFor(t, text)
}

// TestDictationClipboardPastesAndRestores: dictation.inject = "clipboard"
// pastes the text (Shift+Insert into the terminal) and then puts back what
// the clipboard held before.
func TestDictationClipboardPastesAndRestores(t *testing.T) {
	t.Parallel()
	const text = "Grüße über die Zwischenablage ✓"
	const before = "copied before: Ärger ✓"
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	setClip(ctx, t, x.Env, before)
	speech := answerWAV()
	d := startDaemon(t, dictationConfig(speech, true).With("dictation.inject", q("clipboard")),
		append(x.DaemonEnv(), "YAZ_FAKE_TEXT="+text)...)
	// On X11 the clipboard's text lives in the process that owns it: the
	// xclip that put the old text back keeps serving it (with the daemon's
	// environment) until another client takes the clipboard. Taking it
	// back before the daemon stops lets the daemon's leak check hold.
	t.Cleanup(func() {
		for _, pid := range d.Processes() {
			if pid != d.Cmd.Process.Pid && !slices.Contains(d.childPIDs(), pid) {
				t.Logf("serving the clipboard: pid %d %q", pid, cmdline(pid))
			}
		}
		setClip(context.Background(), t, x.Env, "after the test")
		d.Await(5*time.Second, func() bool { // the xclip that served the old text has gone
			for _, pid := range d.Processes() {
				if pid != d.Cmd.Process.Pid && !slices.Contains(d.childPIDs(), pid) {
					return false
				}
			}
			return true
		})
	})
	c := d.Client()
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	r := d.stopHold(c)
	if r.Outcome != "typed" || r.Backend != "clipboard" {
		t.Errorf("hold.stop = %+v, want typed with clipboard", r)
	}
	rec.WaitFor(t, text)
	// The daemon puts the old text back, and checks it is there, before
	// hold.stop answers.
	if got := getClip(ctx, x.Env); got != before {
		t.Errorf("clipboard after the paste = %q, want %q restored", got, before)
	}
	if got := rec.settled(t); got != text {
		t.Errorf("window received %q, want %q", got, text)
	}
}

// TestDictationCancelTypesNothing: hold.cancel drops the audio: nothing is
// decoded after it (what the daemon decoded at a pause while the key was
// down is dropped), nothing typed, nothing kept.
func TestDictationCancelTypesNothing(t *testing.T) {
	t.Parallel()
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	speech := answerWAV()
	d := startDaemon(t, dictationConfig(speech, true), append(x.DaemonEnv(), "YAZ_FAKE_TEXT=never typed")...)
	c := d.Client()
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	during := d.decodes()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.Hold(ctx, daemonapi.MethodHoldCancel)
	if err != nil {
		t.Fatal(err)
	}
	if r.Hold != daemonapi.HoldIdle || r.Outcome != "cancelled" {
		t.Errorf("hold.cancel = %+v, want idle, cancelled", r)
	}
	if got := rec.settled(t); got != "" {
		t.Errorf("window received %q after hold.cancel", got)
	}
	if n := d.decodes() - during; n != 0 {
		t.Errorf("the decoder got %d utterances after hold.cancel, want 0", n)
	}
	if l, err := c.Last(ctx); err != nil || l.Text != "" {
		t.Errorf("last = %+v, %v; want nothing kept", l, err)
	}
	if n := d.Count("dictation.cancelled", ""); n != 1 {
		t.Errorf("audit has %d dictation.cancelled, want 1", n)
	}
	// A stop after the cancel finds no hold.
	if r, err := c.Hold(ctx, daemonapi.MethodHoldStop); err != nil || r.Hold != daemonapi.HoldIdle || r.Outcome != "" {
		t.Errorf("hold.stop after cancel = %+v, %v; want idle with no outcome", r, err)
	}
}

// TestDictationDuringQuestionGoesToWindow (barge-in): a hold started while
// an ask_human question is spoken stops the question (no_answer
// interrupted, no answer text), and what is dictated goes to the focused
// window, not to the agent.
func TestDictationDuringQuestionGoesToWindow(t *testing.T) {
	t.Parallel()
	const text = "this goes to the window"
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	speech := answerWAV()
	d := startDaemon(t, dictationConfig(speech, true).With("budget.ask_human_per_hour", "2"),
		append(x.DaemonEnv(), "YAZ_FAKE_TEXT="+text)...)
	asker := d.Client()
	type askOut struct {
		r   daemonapi.AskResult
		err error
	}
	res := make(chan askOut, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		r, err := asker.AskHuman(ctx, daemonapi.AskParams{Question: longQuestion, TimeoutS: 60})
		res <- askOut{r, err}
	}()
	waitSpoken(d, 1) // audio is playing
	c := d.Client()
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	select {
	case o := <-res:
		want := daemonapi.AskResult{Result: daemonapi.NoAnswer, Reason: daemonapi.ReasonInterrupted}
		if o.err != nil || o.r != want {
			t.Errorf("ask = %+v, %v; want %+v: no answer text", o.r, o.err, want)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the question went on during the hold")
	}
	r := d.stopHold(c)
	if r.Outcome != "typed" {
		t.Errorf("hold.stop = %+v, want typed", r)
	}
	rec.WaitFor(t, text)
	if got := rec.settled(t); got != text {
		t.Errorf("window received %q, want %q", got, text)
	}
	if n := d.decodes(); n != 1 {
		t.Errorf("the decoder got %d utterances, want 1 (the dictation; no answer was taken)", n)
	}
}

// TestDictationDecoderKilledRecovers: the decoder is SIGKILLed while it
// decodes a hold after the release (the key came up mid-sentence, so
// nothing decoded while it was down can stand for it). The utterance is
// lost (outcome failed, audit dictation.lost decoder_failed, a "lost"
// notification, nothing typed), the daemon restarts the decoder, and the
// next hold is decoded and typed.
func TestDictationDecoderKilledRecovers(t *testing.T) {
	t.Parallel()
	const text = "typed after the restart"
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	sentence := spokenWAV(t, "Yes go ahead and deploy it to production on Monday morning then tell the whole team about it in the channel")
	speech := writeWAVFile(t, filepath.Join(t.TempDir(), "long.wav"), join(zeros(0.2), sentence, zeros(1)))
	n := notificationServer(t)
	d := startDaemon(t, dictationConfig(speech, true),
		append(x.DaemonEnv(), n.env, "YAZ_FAKE_TEXT="+text, "YAZ_FAKE_DELAY_MS=3000")...)
	c := d.Client()
	d.holdUntil(c, 2500*time.Millisecond) // mid-sentence
	before := len(d.Records("decode", "decoding utterance"))
	type stopOut struct {
		r   daemonapi.HoldResult
		err error
	}
	stopped := make(chan stopOut, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r, err := c.Hold(ctx, daemonapi.MethodHoldStop)
		stopped <- stopOut{r, err}
	}()
	d.WaitLog(20*time.Second, "the hold's decoding after the release", func(map[string]any) bool {
		return len(d.Records("decode", "decoding utterance")) > before
	})
	pid := d.PidOf("decode")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-stopped:
		if o.err != nil || o.r.Outcome != "failed" || o.r.Hold != daemonapi.HoldIdle {
			t.Errorf("hold.stop with the decoder killed = %+v, %v; want idle, failed", o.r, o.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("hold.stop did not return after the decoder was killed\n%s", d.LogTail(30))
	}
	if n := d.Count("dictation.lost", "decoder_failed"); n != 1 {
		t.Errorf("audit has %d dictation.lost decoder_failed, want 1", n)
	}
	n.waitFor(t, "Dictation failed")
	d.WaitFor(20*time.Second, "the decoder restarted", func() bool {
		ch := d.Child("decode")
		return ch.State == "running" && ch.PID != pid && ch.Restarts >= 1
	})
	if got := rec.settled(t); got != "" {
		t.Errorf("window received %q from the lost utterance", got)
	}
	d.holdUntil(c, 2500*time.Millisecond)
	if r := d.stopHold(c); r.Outcome != "typed" {
		t.Errorf("hold.stop after the restart = %+v, want typed\n%s", r, d.LogTail(20))
	}
	rec.WaitFor(t, text)
}

// TestDictationReplacementsNotInAnswers: [[dictation.replace]] rewrites
// dictated text (whole words only), and never an ask_human answer: the
// same daemon and the same decoder text give the agent the words as said.
func TestDictationReplacementsNotInAnswers(t *testing.T) {
	t.Parallel()
	const said = "fake news about fakes, fake"
	const typed = "real news about fakes, real"
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	speech := answerWAV()
	d := startDaemon(t, dictationConfig(speech, true).With("dictation.replace", `[{from = "fake", to = "real"}]`),
		append(x.DaemonEnv(), "YAZ_FAKE_TEXT="+said)...)
	if r := d.Ask("Ship it?", 30); r.Result != daemonapi.Answered || r.Answer != said {
		t.Errorf("ask = %+v, want answered %q: no replacement in answers", r, said)
	}
	c := d.Client()
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	if r := d.stopHold(c); r.Outcome != "typed" {
		t.Errorf("hold.stop = %+v, want typed", r)
	}
	rec.WaitFor(t, typed)
	if l := d.lastByCtl(); l.Text != typed {
		t.Errorf("ctl last = %+v, want %q", l, typed)
	}
	if got := rec.settled(t); got != typed {
		t.Errorf("window received %q, want %q: the answer never goes to the window", got, typed)
	}
}

// formatMs prints a duration in milliseconds with one decimal.
func formatMs(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

// childPIDs are the pids of the daemon's running children.
func (d *daemon) childPIDs() []int {
	var pids []int
	for _, c := range d.Status().Children {
		if c.PID != 0 {
			pids = append(pids, c.PID)
		}
	}
	return pids
}

// cmdline is a process's command line, arguments separated by spaces.
func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

// TestDictationDecoderDownRefusesHold: with the decoder left down (a
// crash loop), hold.start is refused at once with the cause (so
// the microphone is not opened and the person is told before speaking, not
// after), a notification says why, nothing reaches the window, and the
// daemon still stops cleanly on SIGTERM (checked when the test ends). That
// no microphone opens is TestHoldWithTheDecoderDownForGood's.
func TestDictationDecoderDownRefusesHold(t *testing.T) {
	t.Parallel()
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	speech := answerWAV()
	n := notificationServer(t)
	d := newDaemon(t, dictationConfig(speech, true).With("children.decode", arr("/bin/false")), append(x.DaemonEnv(), n.env)...)
	d.Start()
	d.WaitRunning("gate", "speak")
	d.WaitFor(60*time.Second, "the decoder's crash loop", func() bool { return d.Child("decode").State == "crashloop" })
	c := d.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	r, err := c.Hold(ctx, daemonapi.MethodHoldStart)
	if err != nil {
		t.Fatalf("hold.start with the decoder down: %v", err)
	}
	if r.Outcome != "failed" || r.Hold != daemonapi.HoldIdle || r.Cause != "decoder_down" {
		t.Errorf("hold.start with the decoder down = %+v, want idle, failed, cause decoder_down", r)
	}
	n.waitFor(t, "Not listening")
	if got := rec.settled(t); got != "" {
		t.Errorf("window received %q", got)
	}
}

// TestDictationRepressDuringTailOpensNewHold: the key pressed again while
// the previous release is still recording its tail opens a new hold: both
// utterances are typed, none is lost (the second press was answered
// "holding" with no hold behind it, and its release found nothing).
func TestDictationRepressDuringTailOpensNewHold(t *testing.T) {
	t.Parallel()
	const text = "again"
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	speech := answerWAV()
	d := startDaemon(t, dictationConfig(speech, true).With("dictation.tail_ms", "600"),
		append(x.DaemonEnv(), "YAZ_FAKE_TEXT="+text)...)
	first, second := d.Client(), d.Client()
	d.holdWhileSpeaking(first, wavDuration(t, speech))
	stopped := make(chan daemonapi.HoldResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r, _ := first.Hold(ctx, daemonapi.MethodHoldStop)
		stopped <- r
	}()
	time.Sleep(150 * time.Millisecond) // well inside the 600 ms tail
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if r, err := second.Hold(ctx, daemonapi.MethodHoldStart); err != nil || r.Hold != daemonapi.HoldHolding {
		t.Fatalf("hold.start during the tail = %+v, %v", r, err)
	}
	if r := <-stopped; r.Outcome != "typed" {
		t.Errorf("first hold.stop = %+v, want typed", r)
	}
	if st := d.Status().Hold; st != daemonapi.HoldHolding {
		t.Errorf("status after the first stop: hold %q, want holding (the second press)", st)
	}
	d.waitReplayed(wavDuration(t, speech))
	if r := d.stopHold(second); r.Outcome != "typed" {
		t.Errorf("second hold.stop = %+v, want typed", r)
	}
	rec.WaitFor(t, text+text) // one after the other, as typed (nothing added between)
	if n := d.Count("dictation.typed", ""); n != 2 {
		t.Errorf("audit has %d dictation.typed, want 2", n)
	}
}

// TestDictationRepressRightAfterRelease: the key pressed again as soon as
// the last hold is typed opens a hold that hears what is said next. The
// first hold's release stops the capture child while it still runs (here
// 4 s of quiet follow the speech in its file), and a microphone takes a
// moment to close (here half a second: a shell around yaz-capture that
// waits before it exits on SIGTERM). The end of that child's stream, read
// after the new hold began listening, was taken for the new hold's end,
// and the new hold ended empty at once.
func TestDictationRepressRightAfterRelease(t *testing.T) {
	t.Parallel()
	const text = "again"
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	speech := answerWAV()
	s, _, err := wav.ReadFile16k(speech, 16000*60)
	if err != nil {
		t.Fatal(err)
	}
	capture := writeWAVFile(t, filepath.Join(t.TempDir(), "speech-then-quiet.wav"), append(s, make([]float32, 4*16000)...))
	slowClose := arr("sh", "-c", `trap 'sleep 0.5; exit 0' TERM; "$0" --file "$1" & wait`, bin("yaz-capture"), capture)
	d := startDaemon(t, dictationConfig(capture, true).With("children.capture", slowClose),
		append(x.DaemonEnv(), "YAZ_FAKE_TEXT="+text)...)
	c := d.Client()
	said := wavDuration(t, speech) + 300*time.Millisecond
	const holds = 4
	for i := range holds {
		d.holdUntil(c, said) // the child still runs: quiet follows
		if r := d.stopHold(c); r.Outcome != "typed" {
			t.Fatalf("hold %d of %d, pressed as the last was typed: hold.stop = %+v, want typed\n%s", i+1, holds, r, d.LogTail(20))
		}
	}
	rec.WaitFor(t, strings.Repeat(text, holds))
}

// TestDictationTypingFailureKeepsText: when the backend fails for another
// reason than a missing focus (here `xdotool type` itself fails), nothing
// is lost: the text is kept for last, the audit says inject_failed, and
// the notification says it could not be typed, not that nothing had focus.
func TestDictationTypingFailureKeepsText(t *testing.T) {
	t.Parallel()
	const text = "kept although typing failed"
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	n := notificationServer(t)
	dir := t.TempDir() // an xdotool whose type fails, first in the daemon's PATH
	real, err := exec.LookPath("xdotool")
	if err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\n[ \"$1\" = type ] && exit 1\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "xdotool"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	speech := answerWAV()
	d := startDaemon(t, dictationConfig(speech, true).With("dictation.inject", q("xdotool")),
		append(x.DaemonEnv(), n.env, "PATH="+dir+":"+os.Getenv("PATH"), "YAZ_FAKE_TEXT="+text)...)
	c := d.Client()
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	if r := d.stopHold(c); r.Outcome != "kept" {
		t.Errorf("hold.stop = %+v, want kept", r)
	}
	n.waitFor(t, "could not be typed")
	for _, l := range n.lines() {
		if strings.Contains(l, "had focus") || strings.Contains(l, "typing failed") {
			t.Errorf("notification %q: want the typing-failed one only", l)
		}
	}
	if l := d.lastByCtl(); l.Text != text {
		t.Errorf("ctl last = %+v, want %q", l, text)
	}
	if k := d.Count("dictation.kept", "inject_failed"); k != 1 {
		t.Errorf("audit has %d dictation.kept inject_failed, want 1", k)
	}
	if got := rec.settled(t); got != "" {
		t.Errorf("window received %q although typing failed", got)
	}
}
