package vad

import (
	"maps"
	"testing"
)

// TestQuietest: both detectors' cut of a long utterance (the energy
// detector's levels, in the order of its ring; Silero's probabilities, in
// time order) is the middle of the lowest-scored frame, the latest of
// equals, and none when there is no frame.
func TestQuietest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		frames map[int64]float64 // start → score
		size   int64
		want   int64
		ok     bool
	}{
		{"no frame", nil, 320, 0, false},
		{"one frame", map[int64]float64{640: -30}, 320, 800, true},
		{"the lowest level", map[int64]float64{0: -20, 320: -45, 640: -30, 960: -44.9}, 320, 480, true},
		{"the latest of equal levels", map[int64]float64{0: -40, 320: -20, 640: -40, 960: -30}, 320, 800, true},
		{"the latest of equal probabilities", map[int64]float64{0: 0.1, 512: 0.1, 1024: 0.9}, 512, 768, true},
		{"silence everywhere: the last frame", map[int64]float64{0: -100, 320: -100, 640: -100}, 320, 800, true},
	} {
		// A map's order varies from run to run: the result must not.
		for range 20 {
			at, ok := Quietest(maps.All(tc.frames), tc.size)
			if at != tc.want || ok != tc.ok {
				t.Fatalf("%s: Quietest = %d, %v; want %d, %v", tc.name, at, ok, tc.want, tc.ok)
			}
		}
	}
}
