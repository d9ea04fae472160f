package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
)

// The microphone hears the speaker: these tests give the daemon a private
// PulseAudio null sink as the voice's output device and that sink's monitor
// as its microphone, so every sample of the question that leaves the output
// device reaches the capture child, as speakers and a microphone without
// echo cancellation do on a laptop.

// echoQuestion is short, so a sweep of rates stays quick; the label makes
// it longer anyway.
const echoQuestion = "Shall I deploy the new version now?"

var sinkSeq atomic.Int64

// privateSink loads a null sink of its own into the suite's PulseAudio (so
// no other test's audio reaches it) and unloads it when the test ends. It
// returns the sink's name, which is also its playback device ID; its
// monitor's ID is name+".monitor".
func privateSink(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("yazecho%d_%d", os.Getpid(), sinkSeq.Add(1))
	out, err := exec.Command("pactl", "load-module", "module-null-sink", "sink_name="+name,
		"rate=16000", "channels=1", "format=s16le", "sink_properties=device.description="+name).CombinedOutput()
	if err != nil {
		t.Fatalf("pactl load-module module-null-sink: %v: %s", err, out)
	}
	idx := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("pactl", "unload-module", idx).CombinedOutput(); err != nil {
			t.Errorf("pactl unload-module %s: %v: %s", idx, err, out)
		}
	})
	return name
}

// echoConfig is a daemon whose voice plays into sink (speak.device) at
// rate words a minute and whose microphone records the sink's monitor
// (capture.device). The decoder is the fake one, which keeps every frame
// the daemon sent it in framesPath before it answers: any audio the daemon takes for an answer is decoded to the
// fake text, so a question heard as its own answer shows as "answered",
// and the frames show what was taken.
func echoConfig(sink string, rate int, framesPath string) toml {
	return baseConfig().
		With("budget.ask_human_per_hour", "10").
		Without("ask.guard_ms"). // the default guard, as a user has it
		With("ask.max_answer_s", "3").
		With("speak.rate", strconv.Itoa(rate)).
		With("speak.device", q(sink)).
		With("capture.backend", q("pulseaudio")).
		With("capture.device", q(sink+".monitor")).
		With("children.capture", arr(bin("yaz-capture"))).
		With("children.decode", arr("env", "YAZ_FAKE_FRAMES="+framesPath, bin("fakedecode")))
}

// echoRates are the speech rates swept, in words a minute: espeak-ng's
// whole range, its default and the daemon's.
var echoRates = []int{80, 170, 300, 450}

// utterances reads the frames a daemon sent its decoder and returns the
// audio of each ended utterance.
func utterances(t *testing.T, path string) [][]int16 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		t.Fatal(err)
	}
	defer f.Close()
	r := frame.NewReader(bufio.NewReader(f))
	var out [][]int16
	var cur []int16
	for {
		fr, err := r.Next()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return out
		}
		if err != nil {
			t.Fatalf("frames sent to the decoder: %v", err)
		}
		switch fr.Type {
		case frame.Audio:
			cur = fr.Samples(cur)
		case frame.End:
			out = append(out, cur)
			cur = nil
		case frame.Abandon:
			cur = nil
		}
	}
}

// TestAskEchoNoAnswer: a question nobody answers, played through a device
// the microphone hears, is no_answer at every speech rate and in both
// capture modes: the answer window opens only once the question's audio
// has left the device, so not even its tail is taken for an answer.
//
// Before the fix the window opened at "started" plus the audio's length,
// and "started" means handed to the sound server: PulseAudio still played
// 1-2 s of it (an idle null sink starts late), and every question here came
// back answered with its own tail.
func TestAskEchoNoAnswer(t *testing.T) {
	for _, mode := range []string{"on-demand", "always"} {
		for _, rate := range echoRates {
			t.Run(fmt.Sprintf("%s/%dwpm", mode, rate), func(t *testing.T) {
				t.Parallel() // its own sink and daemon: nothing shared but the sound server
				sink := privateSink(t)
				frames := filepath.Join(t.TempDir(), "frames.bin")
				d := startDaemon(t, echoConfig(sink, rate, frames).With("capture.mode", q(mode)), "YAZ_FAKE_TEXT=the question heard itself")
				for i := range 2 {
					r := d.Ask(echoQuestion, 30)
					if r.Result != daemonapi.NoAnswer {
						t.Errorf("ask %d at %d wpm = %+v, want no_answer: the microphone took the question for its answer (%s)",
							i+1, rate, r, describeTaken(t, utterances(t, frames), spoken(t, rate, echoLabel+echoQuestion)))
					}
				}
				logPlayedOut(t, d, rate)
			})
		}
	}
}

// echoLabel is the daemon's label before every question.
const echoLabel = "An MCP client asks: "

// spoken is the audio yaz-speak makes of text at rate: sample for sample
// what the daemon's speaker plays, and what the monitor records.
func spoken(t *testing.T, rate int, text string) []int16 {
	t.Helper()
	out, err := exec.Command(bin("yaz-speak"), "--out", "-", "--voice", "en-us", "--rate", strconv.Itoa(rate), text).Output()
	if err != nil {
		t.Fatalf("yaz-speak --out -: %v", err)
	}
	return pcm.Decode(nil, out)
}

// loudWindow returns the start of the first 20 ms window of s whose RMS
// is above thr (of full scale), or -1.
func loudWindow(s []int16, from int, thr float64) int {
	for i := max(from, 0); i+320 <= len(s); i += 160 {
		if rmsOf(s[i:i+320]) > thr {
			return i
		}
	}
	return -1
}

func rmsOf(s []int16) float64 {
	var sum float64
	for _, v := range s {
		f := float64(v) / 32768
		sum += f * f
	}
	return math.Sqrt(sum / float64(len(s)))
}

// find returns the index of the first place where pat occurs in s at or
// after from, or -1.
func find(s, pat []int16, from int) int {
	for i := max(from, 0); i+len(pat) <= len(s); i++ {
		if slices.Equal(s[i:i+len(pat)], pat) {
			return i
		}
	}
	return -1
}

// describeTaken says what audio the daemon sent its decoder, and where in
// the question it came from (the monitor is bit-exact).
func describeTaken(t *testing.T, utts [][]int16, question []int16) string {
	var parts []string
	for _, u := range utts {
		desc := fmt.Sprintf("%d ms", len(u)/16)
		// The first loud window found in the question places u in it (the
		// very first may hold a starting sink's silence).
		for i, n := loudWindow(u, 0, 0.05), 0; i >= 0 && n < 50; i, n = loudWindow(u, i+160, 0.05), n+1 {
			if j := find(question, u[i:i+320], 0); j >= 0 {
				from := j - i
				desc += fmt.Sprintf(" = the question's audio from %d ms to %d ms of %d ms", from/16, (from+len(u))/16, len(question)/16)
				break
			}
		}
		parts = append(parts, desc)
	}
	return "audio sent to the decoder: [" + strings.Join(parts, "; ") + "]"
}

// logPlayedOut logs how late the sound server played each question out,
// as the speaker measured it: the time from "started" to the end of the
// audio, beyond the audio's own length.
func logPlayedOut(t *testing.T, d *daemon, rate int) {
	for _, m := range d.LogRecords() {
		if m["child"] == "speak" && m["msg"] == "spoken" {
			t.Logf("%d wpm: audio %v ms, played out %v ms after started: started+audio_ms was %v ms early",
				rate, m["audio_ms"], m["played_after_ms"], m["late_ms"])
		}
	}
}

// askTimeline is the daemon's account of a question, for failure
// messages: when the speaker started and played it out, and when the
// daemon began to listen and the microphone to record.
func askTimeline(d *daemon) string {
	var b strings.Builder
	for _, m := range d.LogRecords() {
		switch m["msg"] {
		case "playback started", "played out", "listening for the answer", "capture started", "ask_human":
			fmt.Fprintf(&b, "%v %v %v\n", m["time"], m["child"], m["msg"])
		}
	}
	return b.String()
}

// echoAnswer is what the person says.
const echoAnswer = "Yes, go ahead."

// monitor records a sink's monitor in the background (its own yaz-capture)
// and keeps what it records: the test's own ears on the sink.
type monitor struct {
	mu      sync.Mutex
	samples []int16
	grew    chan struct{}
}

func listenTo(t *testing.T, ctx context.Context, source string) *monitor {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin("yaz-capture"), "--backend", "pulseaudio", "--device", source)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := &monitor{grew: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		var carry []byte
		for {
			n, err := out.Read(buf)
			if n > 0 {
				b := append(carry, buf[:n]...)
				even := len(b) &^ 1
				m.mu.Lock()
				m.samples = pcm.Decode(m.samples, b[:even])
				m.mu.Unlock()
				carry = append([]byte(nil), b[even:]...)
				select {
				case m.grew <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-done
		cmd.Wait()
	})
	return m
}

// waitFor waits until cond holds for the samples recorded so far and
// returns its result.
func (m *monitor) waitFor(ctx context.Context, cond func(s []int16) bool) bool {
	for {
		m.mu.Lock()
		ok := cond(m.samples)
		m.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-m.grew:
		case <-ctx.Done():
			return false
		}
	}
}

// TestAskEchoAnswerWhole: the person answers soon after the question's
// audio has ended (the test hears the sink's monitor itself and plays the
// answer into the same sink half a second after the guard): the answer
// comes back whole, as the exact samples played (the monitor is
// bit-exact), not cut at its start by a window that opened late, at every
// speech rate and in both capture modes.
func TestAskEchoAnswerWhole(t *testing.T) {
	answer := spoken(t, 170, echoAnswer)
	// The answer from its 20th millisecond to its last loud window: an
	// idle null sink that starts to play hands its monitor silence for the
	// first 20 ms of a stream, and espeak-ng speaks from the first sample.
	skip := pcm.Samples(20 * time.Millisecond)
	last := -1
	for i := loudWindow(answer, 0, 0.01); i >= 0; i = loudWindow(answer, i+160, 0.01) {
		last = i + 320
	}
	answerLoud := answer[skip:last]
	const guard = 300 * time.Millisecond // the default ask.guard_ms
	const reaction = guard + 500*time.Millisecond
	for _, mode := range []string{"on-demand", "always"} {
		for _, rate := range echoRates {
			t.Run(fmt.Sprintf("%s/%dwpm", mode, rate), func(t *testing.T) {
				t.Parallel() // its own sink, daemon and ears: nothing shared but the sound server
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				sink := privateSink(t)
				frames := filepath.Join(t.TempDir(), "frames.bin")
				question := spoken(t, rate, echoLabel+echoQuestion)
				qMark := loudWindow(question, pcm.Samples(300*time.Millisecond), 0.05) // past a starting sink's silence
				ears := listenTo(t, ctx, sink+".monitor")
				d := startDaemon(t, echoConfig(sink, rate, frames).With("capture.mode", q(mode)).
					With("ask.max_answer_s", "10"), "YAZ_FAKE_TEXT="+echoAnswer)
				res := make(chan daemonapi.AskResult, 1)
				go func() { res <- d.Ask(echoQuestion, 60) }()

				// Where the question ends in the monitor's stream: its last
				// loud 20 ms, found sample for sample, then the silence
				// after it. (Found from the end: on a loaded machine the
				// question's own playback may underrun, which inserts
				// silence, so its start does not tell where it ends.)
				qLast := qMark
				for i := qMark; i >= 0; i = loudWindow(question, i+160, 0.05) {
					qLast = i
				}
				qEnd := -1
				if !ears.waitFor(ctx, func(s []int16) bool {
					if i := find(s, question[qLast:qLast+320], max(0, len(s)-16000)); i >= 0 {
						qEnd = i - qLast + len(question)
					}
					return qEnd >= 0
				}) {
					ears.mu.Lock()
					heard := len(ears.samples)
					loudAt := loudWindow(ears.samples, 0, 0.05)
					ears.mu.Unlock()
					t.Fatalf("the end of the question never reached the sink's monitor (it recorded %d ms, loud from %d ms)\n%s", heard/16, loudAt/16, d.LogTail(30))
				}
				// The person answers a reaction time after that.
				ears.waitFor(ctx, func(s []int16) bool { return len(s) >= qEnd+pcm.Samples(reaction) })
				answered := time.Now()
				if out, err := exec.CommandContext(ctx, bin("yaz-speak"), "--backend", "pulseaudio", "--device", sink, echoAnswer).CombinedOutput(); err != nil {
					t.Fatalf("yaz-speak the answer: %v: %s", err, out)
				}
				t.Logf("the question ended at %d ms of the monitor's stream; the answer was played from %s (wall clock)",
					qEnd/16, answered.Format("15:04:05.000"))
				var r daemonapi.AskResult
				select {
				case r = <-res:
				case <-ctx.Done():
					t.Fatal("no result for the question")
				}
				if r.Result != daemonapi.Answered || r.Answer != echoAnswer {
					t.Fatalf("ask = %+v, want answered %q (%s)\n%s", r, echoAnswer,
						describeTaken(t, utterances(t, frames), question), askTimeline(d))
				}
				utts := utterances(t, frames)
				if len(utts) == 0 {
					t.Fatalf("answered, but the decoder's frames hold no ended utterance\n%s", askTimeline(d))
				}
				u := utts[len(utts)-1]
				// Whole: its first and its last 20 ms, in order. (Between
				// them a loaded machine may have let the answer's own
				// playback underrun, which inserts silence.)
				at := find(u, answerLoud[:320], 0)
				end := find(u, answerLoud[len(answerLoud)-320:], max(at, 0))
				switch {
				case at < 0:
					t.Errorf("the decoder got %d ms without the start of the answer: it was cut (%s)",
						len(u)/16, describeTaken(t, utts, question))
				case end < 0:
					t.Errorf("the decoder got the start of the answer but not its end (%d ms)", len(u)/16)
				case !slices.Equal(u[at:end+320], answerLoud):
					t.Logf("the answer came whole, but not sample for sample: its playback glitched (%d ms for %d ms)",
						(end+320-at)/16, len(answerLoud)/16)
				}
				logPlayedOut(t, d, rate)
			})
		}
	}
}
