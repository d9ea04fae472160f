package vadlink

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/internal/testwait"
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
	p    Params
} {
	hold := vadspan.DefaultParams()
	return []struct {
		name string
		p    Params
	}{
		{"hold", Params{Span: hold, Silences: []time.Duration{150 * time.Millisecond}}},
		{"answer", Params{Span: vadspan.Params{Threshold: 0.3, MinSpeech: 250 * time.Millisecond, MinSilence: 1200 * time.Millisecond, SpeechPad: 300 * time.Millisecond}}},
		{"high-nopad", Params{Span: vadspan.Params{Threshold: 0.9, MinSilence: 300 * time.Millisecond, SpeechPad: -1}, Silences: []time.Duration{500 * time.Millisecond, time.Second}}},
		{"low-short", Params{Span: vadspan.Params{Threshold: 0.05, MinSpeech: 100 * time.Millisecond, MinSilence: 50 * time.Millisecond, SpeechPad: 10 * time.Millisecond}, Silences: []time.Duration{20 * time.Millisecond, 300 * time.Millisecond}}},
		{"zero", Params{}},
	}
}

// energyBlocks are the block sizes the sweep feeds in (10, 20, 30 and 64
// ms), and the whole input at once (0).
var energyBlocks = []int{160, 320, 480, 1024, 0}

// energyRun feeds samples in blocks of size (0: all at once) to a use of
// a new energy Link, from this goroutine, and returns the use's events
// and its State after the end, one line each.
func energyRun(t *testing.T, samples []int16, p Params, size int) []string {
	t.Helper()
	l := NewEnergy(context.Background())
	defer l.Close()
	u, err := l.Begin(p)
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
// recorded in testdata/energy.golden (recorded from the pipe-and-wire
// fallback of before issue 20, by `go test -run TestEnergySweep -update`),
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
				u, err := l.Begin(pc.p)
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
