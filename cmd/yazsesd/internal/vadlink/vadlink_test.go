package vadlink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/internal/testvad"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/vadspan"
	"github.com/yazses/yazses/lib/vadwire"
	"github.com/yazses/yazses/lib/wav"
)

// yazDecode is the real yaz-decode, built once for the package's tests.
var yazDecode string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vadlink-test")
	if err != nil {
		panic(err)
	}
	yazDecode = filepath.Join(dir, "yaz-decode")
	build := exec.Command("go", "build", "-o", yazDecode, "github.com/yazses/yazses/cmd/yaz-decode")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building yaz-decode (cgo: run `eval \"$(make -s env)\"` first): %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// sileroModel is the real Silero VAD model, from the tests' model cache
// (internal/testvad: make setup puts it there).
func sileroModel(t testing.TB) string {
	t.Helper()
	return testvad.Path(t)
}

func jfk(t testing.TB) []int16 {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/ggerganov/whisper.cpp/bindings/go").Output()
	if err != nil {
		t.Fatalf("go list the whisper.cpp bindings: %v", err)
	}
	f, _, err := wav.ReadFile16k(filepath.Join(strings.TrimSpace(string(out)), "samples", "jfk.wav"), 60*pcm.SampleRate)
	if err != nil {
		t.Fatal(err)
	}
	return pcm.FromFloat32(nil, f)
}

func silence(d time.Duration) []int16 { return make([]int16, pcm.Samples(d)) }

func noise(d time.Duration, seed uint64) []int16 {
	rng := rand.New(rand.NewPCG(seed, 1))
	s := make([]int16, pcm.Samples(d))
	for i := range s {
		s[i] = int16(max(-32768, min(32767, rng.NormFloat64()*3000)))
	}
	return s
}

func cat(parts ...[]int16) []int16 {
	var out []int16
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// child starts yaz-decode --vad-stream on the real model.
func child(t *testing.T) (*exec.Cmd, io.WriteCloser, io.ReadCloser) {
	t.Helper()
	cmd := exec.Command(yazDecode, "--vad-stream", "--vad", "silero", "--vad-model", sileroModel(t))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, in, out
}

// link is a Link over a new child.
func link(t *testing.T) (*Link, *exec.Cmd) {
	t.Helper()
	cmd, in, out := child(t)
	l := New(context.Background(), in, out)
	t.Cleanup(func() { l.Close() })
	return l, cmd
}

// childProbs are the probabilities the child reports for samples, read
// straight off its stdout: what the Link's decisions must follow.
func childProbs(t *testing.T, samples []int16) []float32 {
	t.Helper()
	_, in, out := child(t)
	go func() {
		w := frame.NewWriter(in)
		w.Audio(samples)
		w.End()
		in.Close()
	}()
	r := vadwire.NewReader(out)
	var probs []float32
	for {
		rec, err := r.Next()
		if err != nil {
			t.Fatalf("reading the child: %v", err)
		}
		if rec.Kind == vadwire.End {
			return probs
		}
		probs = append(probs, rec.Probs...)
	}
}

// feed sends samples in blocks of random sizes (up to 2 s), then ends the
// use, and returns every event up to the channel's close.
func feed(t *testing.T, u *Use, samples []int16, seed uint64) []Event {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 2))
	go func() {
		for s := samples; len(s) > 0; {
			n := min(len(s), 1+rng.IntN(2*pcm.SampleRate))
			if err := u.Feed(s[:n]); err != nil {
				t.Errorf("Feed: %v", err)
				return
			}
			s = s[n:]
		}
		if err := u.End(); err != nil {
			t.Errorf("End: %v", err)
		}
	}()
	var evs []Event
	for e := range u.Events() {
		evs = append(evs, e)
	}
	return evs
}

// spansOf are the SpeechStart/SpeechEnd events as spans.
func spansOf(t *testing.T, evs []Event) []vadspan.Span {
	t.Helper()
	var out []vadspan.Span
	open := false
	for _, e := range evs {
		switch e.Kind {
		case SpeechStart:
			if open {
				t.Fatalf("two starts in a row: %v", evs)
			}
			out = append(out, vadspan.Span{Start: e.At})
			open = true
		case SpeechEnd:
			if !open {
				t.Fatalf("an end without a start: %v", evs)
			}
			out[len(out)-1].End = e.At
			open = false
		}
	}
	if open {
		t.Fatalf("a span never ended: %v", evs)
	}
	return out
}

func last(evs []Event) Event {
	if len(evs) == 0 {
		return Event{}
	}
	return evs[len(evs)-1]
}

// TestSpansThroughChild: through a real `yaz-decode --vad-stream` and the
// real model, a use's SpeechStart/SpeechEnd events are exactly the spans
// whisper.cpp's rules give for the child's probabilities (vadspan.Spans),
// with the daemon's parameters (a long pause for an answer, a short one
// for pauses inside a hold), fed in blocks of any size; use after use on
// one child (the detector resets at each End) the same audio gives the same
// events; noise and silence give none, and Ended says whether anything was
// said.
func TestSpansThroughChild(t *testing.T) {
	speech := cat(jfk(t), silence(2*time.Second), jfk(t))
	l, _ := link(t)
	probs := childProbs(t, speech)
	answer := vadspan.Params{Threshold: 0.5, MinSilence: 1500 * time.Millisecond, SpeechPad: 200 * time.Millisecond}
	pauses := vadspan.Params{Threshold: 0.5, MinSilence: 300 * time.Millisecond, SpeechPad: 100 * time.Millisecond}
	for i, tc := range []struct {
		name    string
		samples []int16
		p       vadspan.Params
		said    bool
	}{
		{"speech/answer", speech, answer, true},
		{"speech/pauses", speech, pauses, true},
		{"noise", noise(4*time.Second, 1), answer, false},
		{"silence", silence(3 * time.Second), pauses, false},
		{"speech/answer again", speech, answer, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := l.Start(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			evs := feed(t, u, tc.samples, uint64(i))
			end := last(evs)
			if end.Kind != Ended || end.At != int64(len(tc.samples)) || end.Said != tc.said {
				t.Fatalf("last event %+v, want Ended at %d with Said %v", end, len(tc.samples), tc.said)
			}
			got := spansOf(t, evs)
			var want []vadspan.Span
			if tc.said {
				want = vadspan.Spans(probs, tc.p)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("spans (-vadspan.Spans of the child's probabilities +events):\n%s", d)
			}
			if st := u.State(); !st.Ended || st.Said != tc.said || st.InSpan {
				t.Errorf("state after the end %+v", st)
			}
			// Each SpeechEnd says where the last voiced window so far
			// ended; after the last one no window is voiced.
			voiced := voicedEnds(probs, tc.p.Threshold, tc.p.Threshold-0.15)
			var ends []int64
			for _, e := range evs {
				if e.Kind == SpeechEnd {
					ends = append(ends, e.Since)
					if !slices.Contains(voiced, e.Since) {
						t.Errorf("SpeechEnd at %d: Since %d is not the end of a voiced window", e.At, e.Since)
					}
				}
			}
			if tc.said && (len(ends) == 0 || ends[len(ends)-1] != voiced[len(voiced)-1] || end.Since != voiced[len(voiced)-1]) {
				t.Errorf("the SpeechEnds' Since are %v and Ended's %d, want the last the last voiced window's end %d", ends, end.Since, voiced[len(voiced)-1])
			}
		})
	}
	// The answer's 1.5 s pause splits only at the 2 s gap (two spans, one
	// per jfk.wav); the hold's 300 ms pause also at jfk.wav's own pauses:
	// the parameters matter.
	if a, p := len(vadspan.Spans(probs, answer)), len(vadspan.Spans(probs, pauses)); a >= p || a != 2 {
		t.Errorf("spans with the answer's pause %d, with the hold's %d: want fewer (and two jfk.wav) with the longer pause", a, p)
	}
}

// voicedRule is the package comment's rule, on the child's probabilities:
// the end sample of each voiced window.
func voicedEnds(probs []float32, thr, neg float32) []int64 {
	var out []int64
	prev := false
	for i, p := range probs {
		v := p >= thr || (prev && p >= neg)
		if v {
			out = append(out, int64(i+1)*vadspan.Window)
		}
		prev = v
	}
	return out
}

// TestSilenceEvents: each stretch without a voiced window fires one Silence
// event per length once it reaches that length: from the use's start
// (Since 0) before the first word, after each word's last voiced window,
// and none for a stretch shorter than the length. The events match the
// stretches of the child's probabilities exactly.
func TestSilenceEvents(t *testing.T) {
	samples := cat(silence(700*time.Millisecond), jfk(t), silence(1500*time.Millisecond))
	probs := childProbs(t, samples)
	lens := []time.Duration{250 * time.Millisecond, time.Second}
	// The expected events, stretch by stretch.
	type sil struct {
		since, at int64
		d         time.Duration
	}
	var want []sil
	ends := voicedEnds(probs, 0.5, 0.35)
	stretch := func(since, until int64) { // silence (since, until]
		for _, d := range lens {
			n := int64(pcm.Samples(d))
			if until-since >= n {
				at := since + (n+vadspan.Window-1)/vadspan.Window*vadspan.Window // the first window end reaching it
				want = append(want, sil{since, at, d})
			}
		}
	}
	prev := int64(0)
	for _, e := range ends {
		if e-vadspan.Window > prev {
			stretch(prev, e-vadspan.Window)
		}
		prev = e
	}
	stretch(prev, int64(len(probs))*vadspan.Window)
	if len(want) < 4 {
		t.Fatalf("only %d silences expected: the audio no longer tests this", len(want))
	}
	l, _ := link(t)
	u, err := l.Start(vadspan.Params{Threshold: 0.5, Silences: lens})
	if err != nil {
		t.Fatal(err)
	}
	var got []sil
	for _, e := range feed(t, u, samples, 7) {
		if e.Kind == Silence {
			got = append(got, sil{e.Since, e.At, e.For})
		}
	}
	// Events fire in window order, the shorter length first.
	if d := cmp.Diff(want, got, cmp.AllowUnexported(sil{})); d != "" {
		t.Errorf("silence events (-want +got):\n%s", d)
	}
	if got[0].since != 0 {
		t.Errorf("the first silence starts at %d, want 0 (the use's start)", got[0].since)
	}
}

// TestWait: Wait returns once the windows up to a position are answered,
// with the detector's view as of then: before jfk.wav's first word nothing
// is said, after it something is, and the silence before release is
// measured (the tail decision).
func TestWait(t *testing.T) {
	l, _ := link(t)
	speech := jfk(t)
	samples := cat(silence(time.Second), speech[:5*pcm.SampleRate], silence(800*time.Millisecond))
	u, err := l.Start(vadspan.Params{Threshold: 0.5, MinSilence: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range u.Events() {
		}
	}()
	ctx := context.Background()
	u.Feed(samples[:pcm.SampleRate])
	st, err := u.Wait(ctx, int64(pcm.SampleRate))
	if err != nil {
		t.Fatal(err)
	}
	if st.Pos != int64(pcm.SampleRate)/vadspan.Window*vadspan.Window || st.Said || st.Voiced || st.LastVoiced != 0 || st.Silent() < 990*time.Millisecond {
		t.Errorf("after 1 s of silence: %+v (silent %v)", st, st.Silent())
	}
	n := len(samples) - pcm.Samples(800*time.Millisecond)
	u.Feed(samples[pcm.SampleRate:n])
	if st, err = u.Wait(ctx, int64(n)); err != nil {
		t.Fatal(err)
	}
	if st.Pos < int64(n)/vadspan.Window*vadspan.Window || !st.Said || !st.InSpan {
		t.Errorf("after speech: %+v", st)
	}
	u.Feed(samples[n:])
	if st, err = u.Wait(ctx, int64(len(samples))); err != nil {
		t.Fatal(err)
	}
	if st.Silent() < 600*time.Millisecond || !st.InSpan {
		t.Errorf("800 ms after the speech was cut: %+v (silent %v): want at least 600 ms silent, the span still open (2 s pause)", st, st.Silent())
	}
	// A position in a window not yet complete: Wait returns the windows
	// before it; after End, at once.
	u.End()
	if st, err = u.Wait(ctx, int64(len(samples))+10*vadspan.Window); err != nil || !st.Ended {
		t.Errorf("after End: %+v, %v", st, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	u2, _ := l.Start(vadspan.Params{})
	if _, err := u2.Wait(cctx, vadspan.Window); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with a cancelled context: %v", err)
	}
	u2.Close()
}

// TestChildDies: when the child exits, the open use gets Failed and its
// channel closes, Wait and Start report it, and the Link's goroutines end.
func TestChildDies(t *testing.T) {
	l, cmd := link(t)
	u, err := l.Start(vadspan.Params{})
	if err != nil {
		t.Fatal(err)
	}
	u.Feed(jfk(t)[:pcm.SampleRate])
	if _, err := u.Wait(testwait.Context(t), int64(pcm.SampleRate)); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Kill()
	var evs []Event
	for e := range u.Events() {
		evs = append(evs, e)
	}
	if e := last(evs); e.Kind != Failed || e.Err == nil || !strings.Contains(e.Err.Error(), "exited") {
		t.Errorf("last event %+v, want Failed: the detector exited", e)
	}
	testwait.Closed(t, l.Done(), "the Link to end")
	if _, err := u.Wait(testwait.Context(t), 10*int64(pcm.SampleRate)); err == nil {
		t.Error("Wait after the child died: no error")
	}
	if _, err := l.Start(vadspan.Params{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after the child died: %v, want ErrClosed", err)
	}
	if err := u.Feed(make([]int16, 100)); err == nil {
		t.Error("Feed after the child died: no error")
	}
}

// TestCloseEndsChild: closing the Link closes the child's stdin: it exits
// 0, and the Link's goroutines have returned when Close does.
func TestCloseEndsChild(t *testing.T) {
	cmd, in, out := child(t)
	l := New(context.Background(), in, out)
	u, _ := l.Start(vadspan.Params{})
	u.Feed(silence(time.Second))
	l.Close()
	select {
	case <-l.Done():
	default:
		t.Error("Close returned before the goroutines did")
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("child after Close: %v, want exit 0", err)
	}
	if _, ok := <-u.Events(); ok {
		for range u.Events() {
		}
	}
}

// TestOneUseAtATime: Begin before End is refused; after End the next use
// begins at once (pipelined) and gets its own events.
func TestOneUseAtATime(t *testing.T) {
	l, _ := link(t)
	u1, err := l.Start(vadspan.Params{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Start(vadspan.Params{}); !errors.Is(err, ErrUseOpen) {
		t.Errorf("Begin with a use open: %v, want ErrUseOpen", err)
	}
	u1.Feed(noise(time.Second, 3))
	u1.Close() // its events are dropped: the channel still closes
	u2, err := l.Start(vadspan.Params{})
	if err != nil {
		t.Fatal(err)
	}
	evs := feed(t, u2, jfk(t), 5)
	if e := last(evs); e.Kind != Ended || !e.Said || e.At != int64(len(jfk(t))) {
		t.Errorf("second use ended with %+v", e)
	}
	for range u1.Events() {
	}
	if err := u1.Feed(make([]int16, 10)); !errors.Is(err, ErrEnded) {
		t.Errorf("Feed after End: %v, want ErrEnded", err)
	}
}

// TestEnergyFallback: without a Silero model the energy detector answers
// behind the same interface: speech-like bursts after silence open a span
// that starts within 250 ms of where they start, digital silence none,
// and the silences are measured the same way.
func TestEnergyFallback(t *testing.T) {
	l := NewEnergy(context.Background())
	defer l.Close()
	burst := bursts(2 * time.Second)
	samples := cat(silence(time.Second), burst, silence(time.Second))
	p := vadspan.Params{MinSilence: 300 * time.Millisecond, SpeechPad: -1, Silences: []time.Duration{500 * time.Millisecond}}
	u, err := l.Start(p)
	if err != nil {
		t.Fatal(err)
	}
	evs := feed(t, u, samples, 9)
	// The same events whatever the blocks: all at once, 20 ms, one sample.
	for _, size := range []int{len(samples), 320, 1} {
		u, err := l.Start(p)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for s := samples; len(s) > 0; s = s[min(size, len(s)):] {
				u.Feed(s[:min(size, len(s))])
			}
			u.End()
		}()
		if d := cmp.Diff(evs, drain(u)); d != "" {
			t.Errorf("in blocks of %d samples, the events differ (-random blocks +these):\n%s", size, d)
		}
	}
	spans := spansOf(t, evs)
	if len(spans) != 1 {
		t.Fatalf("spans %v, want one", spans)
	}
	// The first syllable starts at 1 s, the last ends at 2.93 s. The
	// energy detector needs 120 ms to decide; the held-back windows put
	// the start back where the speech is (up to 200 ms early, no later
	// than 60 ms).
	start, stop := int64(pcm.SampleRate), int64(pcm.Samples(2930*time.Millisecond))
	if d := spans[0].Start - start; d < -int64(pcm.Samples(200*time.Millisecond)) || d > int64(pcm.Samples(60*time.Millisecond)) {
		t.Errorf("span starts at %v, the speech at %v", spans[0].StartTime(), pcm.Duration(int(start)))
	}
	if d := spans[0].End - stop; math.Abs(float64(d)) > float64(pcm.Samples(100*time.Millisecond)) {
		t.Errorf("span ends at %v, the speech at %v", spans[0].EndTime(), pcm.Duration(int(stop)))
	}
	var sils []Event
	for _, e := range evs {
		if e.Kind == Silence {
			sils = append(sils, e)
		}
	}
	if len(sils) != 2 || sils[0].Since != 0 || sils[1].Since < stop-int64(pcm.Samples(250*time.Millisecond)) {
		t.Errorf("silences %+v, want one from the start and one after the speech", sils)
	}
	if e := last(evs); e.Kind != Ended || !e.Said {
		t.Errorf("last event %+v", e)
	}
	u, _ = l.Start(vadspan.Params{})
	if e := last(feed(t, u, silence(3*time.Second), 10)); e.Kind != Ended || e.Said {
		t.Errorf("silence: last event %+v, want Ended with nothing said", e)
	}
}

// bursts is a loud, speech-like signal: syllables of a harmonic tone, 180
// ms each with 70 ms gaps.
func bursts(d time.Duration) []int16 {
	out := make([]int16, pcm.Samples(d))
	for i := range out {
		t := float64(i) / pcm.SampleRate
		phase := math.Mod(t, 0.25)
		if phase > 0.18 {
			continue
		}
		env := math.Sin(math.Pi * phase / 0.18)
		v := env * 0.25 * (math.Sin(2*math.Pi*200*t) + 0.5*math.Sin(2*math.Pi*400*t) + 0.3*math.Sin(2*math.Pi*800*t))
		out[i] = int16(v * 32767 / 1.8)
	}
	return out
}

// blockingWriter never finishes a write until closed.
type blockingWriter struct{ closed chan struct{} }

func (w blockingWriter) Write(p []byte) (int, error) { <-w.closed; return 0, io.ErrClosedPipe }
func (w blockingWriter) Close() error                { close(w.closed); return nil }

// TestBehind: a detector that stops reading makes Feed fail with
// ErrBehind once MaxQueued of audio waits, instead of blocking the caller;
// the Link ends.
func TestBehind(t *testing.T) {
	lr, lw := io.Pipe()
	defer lw.Close()
	l := New(context.Background(), blockingWriter{make(chan struct{})}, lr)
	u, err := l.Start(vadspan.Params{})
	if err != nil {
		t.Fatal(err)
	}
	var ferr error
	// Many small blocks (they join into few frames), up to MaxQueued and
	// past it: the writer holds one frame, the rest waits.
	n := 0
	for ; n < 2*pcm.Samples(MaxQueued) && ferr == nil; n += 160 {
		ferr = u.Feed(make([]int16, 160))
	}
	if n < pcm.Samples(MaxQueued) {
		t.Errorf("ErrBehind after %v of audio, MaxQueued is %v", pcm.Duration(n), MaxQueued)
	}
	if !errors.Is(ferr, ErrBehind) {
		t.Fatalf("Feed: %v, want ErrBehind", ferr)
	}
	testwait.Closed(t, l.Done(), "the Link to end")
	if !errors.Is(l.Err(), ErrBehind) {
		t.Errorf("Link.Err() = %v, want ErrBehind", l.Err())
	}
	if e := last(drain(u)); e.Kind != Failed || !errors.Is(e.Err, ErrBehind) {
		t.Errorf("last event %+v, want Failed with ErrBehind", e)
	}
}

func drain(u *Use) []Event {
	var evs []Event
	for e := range u.Events() {
		evs = append(evs, e)
	}
	return evs
}

// TestBadLines: a detector that answers out of turn or with a malformed
// line ends the Link with an error that says so.
func TestBadLines(t *testing.T) {
	for _, tc := range []struct {
		name, lines string
		begin       bool
		want        error
	}{
		{"no use", "P 0 0.5\n", false, vadwire.ErrSequence},
		{"skipped window", "P 1 0.5\n", true, vadwire.ErrSequence},
		{"malformed", "P 0 maybe\n", true, vadwire.ErrSyntax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fr, fw := io.Pipe()
			go io.Copy(io.Discard, fr)
			lr, lw := io.Pipe()
			l := New(context.Background(), fw, lr)
			var u *Use
			if tc.begin {
				var err error
				if u, err = l.Start(vadspan.Params{}); err != nil {
					t.Fatal(err)
				}
			}
			go lw.Write([]byte(tc.lines))
			testwait.Closed(t, l.Done(), "the Link to end")
			if !errors.Is(l.Err(), tc.want) {
				t.Errorf("Link.Err() = %v, want %v", l.Err(), tc.want)
			}
			if u != nil {
				if e := last(drain(u)); e.Kind != Failed || !errors.Is(e.Err, tc.want) {
					t.Errorf("last event %+v", e)
				}
			}
		})
	}
}

// scripted is a Link whose detector is the test: the lines it writes are
// the answers.
func scripted(t *testing.T) (*Link, io.Writer) {
	t.Helper()
	fr, fw := io.Pipe()
	go io.Copy(io.Discard, fr)
	lr, lw := io.Pipe()
	l := New(context.Background(), fw, lr)
	t.Cleanup(func() { lw.Close(); l.Close() })
	return l, lw
}

// TestVoicedHysteresis: a window between NegThreshold and Threshold right
// after a voiced one is voiced (a soft end of a word), one after silence is
// not: the silence starts after the soft windows, and a soft window inside
// it does not restart it.
func TestVoicedHysteresis(t *testing.T) {
	l, lines := scripted(t)
	w := 3 * vadspan.Window
	u, err := l.Start(vadspan.Params{Threshold: 0.5, Silences: []time.Duration{pcm.Duration(w)}})
	if err != nil {
		t.Fatal(err)
	}
	u.Feed(make([]int16, 12*vadspan.Window))
	u.End()
	// Windows: voiced, soft, soft (still voiced), quiet, soft (not voiced), quiet...
	io.WriteString(lines, "P 0 0.9 0.4 0.4 0.2 0.4 0.2 0.2 0.2 0.9 0.2 0.2 0.2\nE 12\n")
	var got []Event
	for _, e := range drain(u) {
		if e.Kind == Silence {
			got = append(got, e)
		}
	}
	want := []Event{
		{Kind: Silence, Since: 3 * vadspan.Window, At: 6 * vadspan.Window, For: pcm.Duration(w)},
		{Kind: Silence, Since: 9 * vadspan.Window, At: 12 * vadspan.Window, For: pcm.Duration(w)},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("silences (-want +got):\n%s", d)
	}
}
