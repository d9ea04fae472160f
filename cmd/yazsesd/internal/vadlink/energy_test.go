package vadlink

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/vadspan"
	"github.com/yazses/yazses/lib/vadwire"
)

var update = flag.Bool("update", false, "rewrite testdata/energy.golden from the energy detector's answers")

// energyInputs are the audio of the energy sweep: speech-like bursts,
// steady noise, real speech, pauses of several lengths, a quiet talker,
// speech up to the end and a partial last window.
func energyInputs(t *testing.T) []struct {
	name    string
	samples []int16
} {
	quiet := bursts(2 * time.Second)
	for i := range quiet {
		quiet[i] /= 40
	}
	return []struct {
		name    string
		samples []int16
	}{
		{"silence", silence(3 * time.Second)},
		{"bursts", cat(silence(time.Second), bursts(2*time.Second), silence(time.Second))},
		{"pauses", cat(silence(500*time.Millisecond), bursts(time.Second), silence(400*time.Millisecond),
			bursts(time.Second), silence(150*time.Millisecond), bursts(500*time.Millisecond), silence(1200*time.Millisecond))},
		{"noise-then-bursts", cat(noise(2*time.Second, 3), bursts(time.Second), noise(time.Second, 4))},
		{"quiet", cat(silence(time.Second), quiet, silence(time.Second))},
		{"to-the-end", cat(silence(300*time.Millisecond), bursts(1500*time.Millisecond))},
		{"partial-window", cat(silence(700*time.Millisecond), bursts(time.Second), silence(300*time.Millisecond), make([]int16, 100))},
		{"jfk", cat(silence(500*time.Millisecond), jfk(t), silence(time.Second))},
	}
}

// energyParams are the parameters of the sweep: a hold's, an answer's,
// high and low thresholds, no padding, several silences, the zero value.
func energyParams() []struct {
	name string
	p    vadspan.Params
} {
	hold := vadspan.DefaultParams()
	hold.Silences = []time.Duration{150 * time.Millisecond}
	return []struct {
		name string
		p    vadspan.Params
	}{
		{"hold", hold},
		{"answer", vadspan.Params{Threshold: 0.3, MinSpeech: 250 * time.Millisecond, MinSilence: 1200 * time.Millisecond, SpeechPad: 300 * time.Millisecond}},
		{"high-nopad", vadspan.Params{Threshold: 0.9, MinSilence: 300 * time.Millisecond, SpeechPad: -1, Silences: []time.Duration{500 * time.Millisecond, time.Second}}},
		{"low-short", vadspan.Params{Threshold: 0.05, MinSpeech: 100 * time.Millisecond, MinSilence: 50 * time.Millisecond, SpeechPad: 10 * time.Millisecond, Silences: []time.Duration{20 * time.Millisecond, 300 * time.Millisecond}}},
		{"zero", vadspan.Params{}},
	}
}

// energyBlocks are the block sizes the sweep feeds in (10, 20, 30 and 64
// ms), and the whole input at once (0).
var energyBlocks = []int{160, 320, 480, 1024, 0}

// energyRun feeds samples in blocks of size (0: all at once) to a use of
// a new energy Link, from this goroutine, and returns the use's events
// and its State after the end, one line each.
func energyRun(t *testing.T, samples []int16, p vadspan.Params, size int) []string {
	t.Helper()
	l := NewEnergy(context.Background())
	defer l.Close()
	u, err := l.Start(p)
	if err != nil {
		t.Fatal(err)
	}
	if size == 0 {
		size = max(1, len(samples))
	}
	var out []string
	take := func() {
		for {
			select {
			case e, ok := <-u.Events():
				if !ok {
					return
				}
				out = append(out, evLine(e))
			default:
				return
			}
		}
	}
	for s := samples; len(s) > 0; s = s[min(size, len(s)):] {
		if err := u.Feed(s[:min(size, len(s))]); err != nil {
			t.Fatalf("Feed: %v", err)
		}
		take()
	}
	if err := u.End(); err != nil {
		t.Fatalf("End: %v", err)
	}
	for _, e := range testwaitEvents(t, u) {
		out = append(out, evLine(e))
	}
	st, err := u.Wait(testwait.Context(t), int64(len(samples)))
	if err != nil {
		t.Fatalf("Wait after the end: %v", err)
	}
	return append(out, fmt.Sprintf("state %+v", st))
}

// evLine is an event as a line of the golden file.
func evLine(e Event) string {
	return fmt.Sprintf("%v at=%d since=%d for=%v said=%v err=%v", e.Kind, e.At, e.Since, e.For, e.Said, e.Err)
}

// testwaitEvents is the rest of u's events, up to the channel's close
// (bounded: the test fails naming what it waited for).
func testwaitEvents(t *testing.T, u *Use) []Event {
	t.Helper()
	var evs []Event
	ctx := testwait.Context(t)
	for {
		select {
		case e, ok := <-u.Events():
			if !ok {
				return evs
			}
			evs = append(evs, e)
		case <-ctx.Done():
			t.Fatalf("the use's events did not end (Ended and the channel's close): %v so far", evs)
		}
	}
}

// TestEnergySweep: the energy detector's events and its state after the
// end, on a sweep of inputs, parameters and block sizes, are exactly those
// recorded in testdata/energy.golden (recorded from the earlier pipe-and-wire
// fallback, by `go test -run TestEnergySweep -update`),
// whatever the block size.
func TestEnergySweep(t *testing.T) {
	var b strings.Builder
	for _, in := range energyInputs(t) {
		for _, pc := range energyParams() {
			name := in.name + "/" + pc.name
			var first []string
			for _, size := range energyBlocks {
				got := energyRun(t, in.samples, pc.p, size)
				if first == nil {
					first = got
					continue
				}
				if d := cmp.Diff(first, got); d != "" {
					t.Errorf("%s: in blocks of %d samples the answers differ from blocks of %d (-%d +%d):\n%s", name, size, energyBlocks[0], energyBlocks[0], size, d)
				}
			}
			fmt.Fprintf(&b, "case %s\n", name)
			for _, line := range first {
				fmt.Fprintf(&b, "\t%s\n", line)
			}
		}
	}
	path := filepath.Join("testdata", "energy.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the recorded answers: %v", err)
	}
	if d := cmp.Diff(string(want), b.String()); d != "" {
		t.Errorf("the energy detector's answers differ from %s (-recorded +now):\n%s", path, d)
	}
}

// TestEnergyNoGoroutines: a use of the energy detector runs in the
// feeder's goroutine: making its Link, beginning, feeding (with events
// settled), ending and closing start no goroutine.
func TestEnergyNoGoroutines(t *testing.T) {
	samples := cat(silence(time.Second), bursts(2*time.Second), silence(time.Second))
	before := runtime.NumGoroutine()
	l := NewEnergy(context.Background())
	p := vadspan.DefaultParams()
	p.Silences = []time.Duration{150 * time.Millisecond}
	u, err := l.Start(p)
	if err != nil {
		t.Fatal(err)
	}
	most := runtime.NumGoroutine()
	for s := samples; len(s) > 0; s = s[min(320, len(s)):] {
		if err := u.Feed(s[:min(320, len(s))]); err != nil {
			t.Fatalf("Feed: %v", err)
		}
		most = max(most, runtime.NumGoroutine())
		for len(u.Events()) > 0 {
			<-u.Events()
		}
	}
	if err := u.End(); err != nil {
		t.Fatalf("End: %v", err)
	}
	most = max(most, runtime.NumGoroutine())
	rest := testwaitEvents(t, u)
	if e := last(rest); e.Kind != Ended || !e.Said {
		t.Fatalf("last event %+v, want Ended with something said", e)
	}
	l.Close()
	if most > before {
		buf := make([]byte, 1<<20)
		t.Errorf("a use of the energy detector ran %d goroutines beside its feeder, want 0; goroutines:\n%s",
			most-before, buf[:runtime.Stack(buf, true)])
	}
}

// TestEnergyIsTheChildPath: the energy detector's events are those a
// detector child answering with the energy detector's probabilities (1
// while it hears speech, 0 otherwise) gives, through the wire: one set of
// decisions for both.
func TestEnergyIsTheChildPath(t *testing.T) {
	for _, in := range energyInputs(t) {
		e := newEnergyUse()
		e.write(in.samples)
		e.flush()
		probs := e.take(true)
		for _, pc := range energyParams() {
			t.Run(in.name+"/"+pc.name, func(t *testing.T) {
				l, lines := scripted(t)
				u, err := l.Start(pc.p)
				if err != nil {
					t.Fatal(err)
				}
				u.Feed(in.samples)
				u.End()
				w := vadwire.NewWriter(lines)
				if err := w.Probs(probs); err != nil {
					t.Fatal(err)
				}
				if err := w.End(); err != nil {
					t.Fatal(err)
				}
				var child []string
				for _, e := range testwaitEvents(t, u) {
					child = append(child, evLine(e))
				}
				energy := energyRun(t, in.samples, pc.p, 320)
				energy = energy[:len(energy)-1] // the state
				if d := cmp.Diff(child, energy); d != "" {
					t.Errorf("events (-child path +energy detector):\n%s", d)
				}
			})
		}
	}
}

// TestEnergyEnds: the energy Link's end fails its open use as a child's
// does: its context ending gives Failed with ErrClosed (and Done closes),
// and a caller that stops reading makes Feed fail with ErrBehind once
// eventBuffer events wait, instead of blocking the feeder.
func TestEnergyEnds(t *testing.T) {
	t.Run("context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		l := NewEnergy(ctx)
		u, err := l.Start(vadspan.Params{})
		if err != nil {
			t.Fatal(err)
		}
		if err := u.Feed(bursts(time.Second)); err != nil {
			t.Fatal(err)
		}
		cancel()
		testwait.Closed(t, l.Done(), "the energy Link to end with its context")
		if e := last(testwaitEvents(t, u)); e.Kind != Failed || !errors.Is(e.Err, ErrClosed) {
			t.Errorf("last event %+v, want Failed with ErrClosed", e)
		}
		if err := u.Feed(silence(time.Second)); !errors.Is(err, ErrClosed) {
			t.Errorf("Feed after the end: %v, want ErrClosed", err)
		}
		if _, err := u.Wait(testwait.Context(t), 1<<40); !errors.Is(err, ErrClosed) {
			t.Errorf("Wait after the end: %v, want ErrClosed", err)
		}
		if _, err := l.Start(vadspan.Params{}); !errors.Is(err, ErrClosed) {
			t.Errorf("Start after the end: %v, want ErrClosed", err)
		}
	})
	t.Run("unread", func(t *testing.T) {
		l := NewEnergy(context.Background())
		defer l.Close()
		// A Silence event for each of 1 to 300 windows of quiet.
		var sils []time.Duration
		for i := range 300 {
			sils = append(sils, pcm.Duration((i+1)*vadspan.Window))
		}
		u, err := l.Start(vadspan.Params{Silences: sils})
		if err != nil {
			t.Fatal(err)
		}
		var ferr error
		for n := 0; n < 400 && ferr == nil; n++ {
			ferr = u.Feed(silence(32 * time.Millisecond))
		}
		if !errors.Is(ferr, ErrBehind) {
			t.Fatalf("Feed: %v, want ErrBehind", ferr)
		}
		testwait.Closed(t, l.Done(), "the energy Link to end")
		if !errors.Is(l.Err(), ErrBehind) {
			t.Errorf("Link.Err() = %v, want ErrBehind", l.Err())
		}
		evs := testwaitEvents(t, u)
		if len(evs) != eventBuffer || evs[len(evs)-1].Kind != Silence {
			t.Errorf("%d events, the last %+v: want the %d that had room", len(evs), last(evs), eventBuffer)
		}
	})
}

// TestSettings: FromConfig is vad.threshold over whisper.cpp's defaults,
// the settings the daemon's holds and answers built by hand (the same
// thresholds and durations, vadspan's String says each resolved).
func TestSettings(t *testing.T) {
	v := config.Default().VAD
	v.Threshold = 0.42
	hold := FromConfig(v)
	if want := (vadspan.Params{Threshold: 0.42, MinSpeech: 250 * time.Millisecond, MinSilence: 100 * time.Millisecond, SpeechPad: 30 * time.Millisecond}); !cmp.Equal(hold, want) {
		t.Errorf("FromConfig = %+v, want %+v", hold, want)
	}
	answer := FromConfig(v)
	answer.MinSilence, answer.SpeechPad = 1200*time.Millisecond, 300*time.Millisecond
	byHand := vadspan.Params{Threshold: 0.42, MinSpeech: 250 * time.Millisecond, MinSilence: 1200 * time.Millisecond, SpeechPad: 300 * time.Millisecond}
	if answer.String() != byHand.String() {
		t.Errorf("an answer's settings %v, by hand %v", answer, byHand)
	}
	if thr, neg := answer.Thresholds(); thr != 0.42 || neg != float32(0.42)-0.15 {
		t.Errorf("Thresholds() = %v, %v", thr, neg)
	}
}
