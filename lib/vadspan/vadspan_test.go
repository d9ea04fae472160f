package vadspan

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// seq builds probabilities from runs: count windows of value.
func seq(runs ...any) []float32 {
	var out []float32
	for i := 0; i < len(runs); i += 2 {
		n, v := runs[i].(int), float32(runs[i+1].(float64))
		for range n {
			out = append(out, v)
		}
	}
	return out
}

// TestSpansByHand: whisper.cpp's rules on sequences small enough to work
// out on paper (defaults: threshold 0.5, neg 0.35, min speech 4000 samples,
// min silence 1600, pad 480, merge gap 3200).
func TestSpansByHand(t *testing.T) {
	const w = Window
	for _, tc := range []struct {
		name  string
		probs []float32
		p     Params
		want  []Span
	}{
		{"silence", seq(100, 0.0), Params{}, nil},
		{"one span", seq(10, 0.0, 20, 0.9, 10, 0.0), Params{},
			// Raw 10w–30w (the first window below neg), padded by 480.
			[]Span{{10*w - 480, 30*w + 480}}},
		{"too short", seq(10, 0.0, 7, 0.9, 10, 0.0), Params{}, nil}, // 7w = 3584 ≤ 4000
		{"just long enough", seq(10, 0.0, 8, 0.9, 10, 0.0), Params{}, []Span{{10*w - 480, 18*w + 480}}},
		{"hysteresis keeps it open", seq(5, 0.0, 10, 0.9, 30, 0.4, 10, 0.0), Params{},
			[]Span{{5*w - 480, 45*w + 480}}},
		{"a short dip does not close it", seq(5, 0.0, 10, 0.9, 3, 0.1, 10, 0.9, 10, 0.0), Params{},
			// 3 windows (1536 samples) of silence < min silence 1600.
			[]Span{{5*w - 480, 28*w + 480}}},
		{"close spans merge", seq(5, 0.0, 10, 0.9, 5, 0.1, 10, 0.9, 10, 0.0), Params{},
			// The first closes at 15w (5 windows of silence reach 1600 at the
			// 5th); the gap to 20w is 2560 < 3200: merged.
			[]Span{{5*w - 480, 30*w + 480}}},
		{"far spans stay apart", seq(5, 0.0, 10, 0.9, 7, 0.1, 10, 0.9, 10, 0.0), Params{},
			[]Span{{5*w - 480, 15*w + 480}, {22*w - 480, 32*w + 480}}},
		{"open at the end", seq(5, 0.0, 20, 0.9), Params{}, []Span{{5*w - 480, 25 * w}}},
		{"from the first window", seq(20, 0.9, 10, 0.0), Params{}, []Span{{0, 20*w + 480}}},
		{"wide pad meets in the middle", seq(5, 0.0, 10, 0.9, 7, 0.1, 10, 0.9, 10, 0.0),
			Params{SpeechPad: 200 * time.Millisecond},
			// Gap 7w = 3584 < 2·3200: each side gets half of it.
			[]Span{{0, 15*w + 1792}, {22*w - 1792, 32*w + 3200}}},
		{"no pad", seq(5, 0.0, 10, 0.9, 10, 0.0), Params{SpeechPad: -1}, []Span{{5 * w, 15 * w}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Spans(tc.probs, tc.p)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Spans (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, track(tc.probs, tc.p, 1)); diff != "" {
				t.Errorf("Tracker (-want +got):\n%s", diff)
			}
		})
	}
}

// track runs a Tracker over probs in blocks of n and turns its events into
// spans, checking that they alternate.
func track(probs []float32, p Params, n int) []Span {
	tr := NewTracker(p)
	var evs []Event
	for i := 0; i < len(probs); i += n {
		evs = append(evs, tr.Push(probs[i:min(i+n, len(probs))]...)...)
	}
	evs = append(evs, tr.Flush()...)
	spans, err := pair(evs)
	if err != nil {
		panic(err)
	}
	return spans
}

func pair(evs []Event) ([]Span, error) {
	var out []Span
	for i, e := range evs {
		want := SpeechStart
		if i%2 == 1 {
			want = SpeechEnd
		}
		if e.Kind != want {
			return nil, fmt.Errorf("event %d is %v, want %v: %v", i, e.Kind, want, evs)
		}
		if want == SpeechStart {
			out = append(out, Span{Start: e.At})
		} else {
			out[len(out)-1].End = e.At
		}
	}
	if len(evs)%2 != 0 {
		return nil, fmt.Errorf("odd number of events: %v", evs)
	}
	return out, nil
}

// randomProbs is a sequence of runs: speech, silence, values between the
// thresholds, values right at them, and single-window blips.
func randomProbs(rng *rand.Rand, n int, p Params) []float32 {
	r := p.resolve()
	var out []float32
	for len(out) < n {
		var v float32
		switch rng.IntN(7) {
		case 0, 1:
			v = r.thr + rng.Float32()*(1-r.thr)
		case 2, 3:
			v = rng.Float32() * r.neg
		case 4:
			v = r.neg + rng.Float32()*(r.thr-r.neg)
		case 5:
			v = []float32{r.thr, r.neg, 0, 1}[rng.IntN(4)]
		case 6:
			out = append(out, rng.Float32())
			continue
		}
		for range 1 + rng.IntN(40) {
			out = append(out, v)
		}
	}
	return out[:n]
}

func randomParams(rng *rand.Rand) Params {
	pick := func(ds ...time.Duration) time.Duration { return ds[rng.IntN(len(ds))] }
	return Params{
		Threshold:  []float32{0, 0.3, 0.5, 0.8}[rng.IntN(4)],
		MinSpeech:  pick(0, -1, 50*time.Millisecond, time.Second),
		MinSilence: pick(0, -1, 30*time.Millisecond, 500*time.Millisecond),
		SpeechPad:  pick(0, -1, 150*time.Millisecond, 400*time.Millisecond),
		MaxSpeech:  pick(0, 0, time.Second, 3*time.Second),
	}
}

// TestTrackerMatchesSpans: on random probabilities and parameters, in
// blocks of any size, the Tracker reports exactly the spans of Spans.
func TestTrackerMatchesSpans(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		p := randomParams(rng)
		probs := randomProbs(rng, 1+rng.IntN(600), p)
		want := Spans(probs, p)
		for _, n := range []int{1, 7, len(probs)} {
			if got := track(probs, p, n); !cmp.Equal(want, got) {
				t.Fatalf("case %d (%v), blocks of %d: Tracker and Spans differ (-Spans +Tracker):\n%s\nprobs %v",
					i, p, n, cmp.Diff(want, got), probs)
			}
		}
	}
}

// TestTrackerSettlesEarly: a span's start is reported once MinSpeech of it
// has been seen, its end once MinSilence and the merge gap have passed,
// not at the end of the stream.
func TestTrackerSettlesEarly(t *testing.T) {
	tr := NewTracker(Params{})
	probs := seq(10, 0.0, 40, 0.9, 100, 0.0)
	var startAt, endAt int = -1, -1
	for i, p := range probs {
		for _, e := range tr.Push(p) {
			if e.Kind == SpeechStart {
				startAt = i
			} else {
				endAt = i
			}
		}
	}
	// Start: window 10 opens it; sure once 10w+512·k+512 − 10w > 4000, k = 7.
	if startAt != 17 {
		t.Errorf("start reported after window %d, want 17", startAt)
	}
	if !tr.InSpan() && endAt < 0 {
		t.Errorf("no span open after the start")
	}
	// End: raw end at window 50; closed by min silence at window 54 (4·512 ≥
	// 1600); settled once no raw span can start before 50w+3200, i.e. after
	// window 56 (57·512 ≥ 50·512+3200).
	if endAt != 56 {
		t.Errorf("end reported after window %d, want 56", endAt)
	}
	if tr.InSpan() || tr.Speaking() {
		t.Errorf("InSpan %v, Speaking %v after the end, want false", tr.InSpan(), tr.Speaking())
	}
	if got := tr.Flush(); len(got) != 0 {
		t.Errorf("Flush after the end = %v, want nothing", got)
	}
}

// TestEarliest: the audio a Tracker may still name begins no later than
// the start it then reports.
func TestEarliest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		p := randomParams(rng)
		probs := randomProbs(rng, 400, p)
		tr := NewTracker(p)
		earliest := int64(0)
		check := func(evs []Event) {
			for _, e := range evs {
				if e.Kind == SpeechStart && e.At < earliest {
					t.Fatalf("start at %d before Earliest %d (%v)", e.At, earliest, p)
				}
			}
		}
		for _, pr := range probs {
			check(tr.Push(pr))
			earliest = tr.Earliest()
		}
		check(tr.Flush())
	}
}

func TestParamsString(t *testing.T) {
	if got, want := DefaultParams().String(), "threshold 0.50/0.35, min speech 250ms, min silence 100ms, pad 30ms, max speech none"; got != want {
		t.Errorf("DefaultParams().String() = %q, want %q", got, want)
	}
	if got := (Params{}).resolve(); got != DefaultParams().resolve() {
		t.Errorf("zero Params resolve to %+v, want the defaults %+v", got, DefaultParams().resolve())
	}
}

// TestThresholds: the thresholds with their defaults, as Spans applies
// them: 0.5 and 0.15 below, never under 0.01, a NegThreshold set kept.
func TestThresholds(t *testing.T) {
	for _, tc := range []struct {
		p        Params
		thr, neg float32
	}{
		{Params{}, 0.5, 0.5 - 0.15},
		{Params{Threshold: 0.8}, 0.8, 0.8 - 0.15},
		{Params{Threshold: 0.1}, 0.1, 0.01},
		{Params{Threshold: 0.6, NegThreshold: 0.2}, 0.6, 0.2},
	} {
		if thr, neg := tc.p.Thresholds(); thr != tc.thr || neg != tc.neg {
			t.Errorf("%+v: Thresholds() = %v, %v, want %v, %v", tc.p, thr, neg, tc.thr, tc.neg)
		}
		if got, want := tc.p.String(), fmt.Sprintf("threshold %.2f/%.2f", tc.thr, tc.neg); got[:len(want)] != want {
			t.Errorf("%+v: String() = %q, want it to start %q", tc.p, got, want)
		}
	}
}
