package daemonapi

import (
	"testing"
	"time"
)

// TestAskTiming: what a question needs is its words and the label's at
// the speaking rate, the guard and the shortest answer; the shortest
// timeout is that of a one-word question, rounded up to whole seconds.
func TestAskTiming(t *testing.T) {
	for _, tc := range []struct {
		timing   AskTiming
		question string
		need     time.Duration
		least    int
	}{
		// The defaults: 5 words at 170 a minute (1.765 s), 300 ms, 250 ms, 1200 ms.
		{AskTiming{RateWPM: 170, GuardMs: 300, AnswerSilenceMs: 1200}, "Yes?", 3514705882 * time.Nanosecond, 4},
		// 17 words with the label: 6 s of speech.
		{AskTiming{RateWPM: 170, GuardMs: 300, AnswerSilenceMs: 1200}, "Shall I deploy the build to staging now, or wait for the review?",
			17*time.Minute/170 + 1750*time.Millisecond, 4},
		// The quickest settings: 5 words at 450 a minute, no guard, 200 ms.
		{AskTiming{RateWPM: 450, GuardMs: 0, AnswerSilenceMs: 200}, "Go?", 5*time.Minute/450 + 450*time.Millisecond, 2},
		// The slowest: 80 a minute, 5 s of guard, 10 s of silence.
		{AskTiming{RateWPM: 80, GuardMs: 5000, AnswerSilenceMs: 10000}, "Go?", 5*time.Minute/80 + 15250*time.Millisecond, 19},
		// No rate (a zero value) counts as the slowest, never a division by zero.
		{AskTiming{}, "Go?", 5*time.Minute/80 + 250*time.Millisecond, 4},
	} {
		if got := tc.timing.Need(tc.question); got != tc.need {
			t.Errorf("%+v.Need(%q) = %v, want %v", tc.timing, tc.question, got, tc.need)
		}
		if got := tc.timing.MinTimeoutS(); got != tc.least {
			t.Errorf("%+v.MinTimeoutS() = %d, want %d", tc.timing, got, tc.least)
		}
	}
}
