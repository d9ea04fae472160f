package voice

import (
	"testing"
	"time"
)

// TestVADParams: each mode's Silero settings, built from one base, are
// those each mode had (resolved as whisper.cpp does, vadspan's String):
// --vad-stream the threshold alone, streams --min-speech, --min-silence
// and a 200 ms pad, files a 100 ms pad and 28 s spans.
func TestVADParams(t *testing.T) {
	c := Config{Threshold: 0.37, MinSpeech: 120 * time.Millisecond, MinSilence: 600 * time.Millisecond}
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"vad-stream", c.Params().String(), "threshold 0.37/0.22, min speech 250ms, min silence 100ms, pad 30ms, max speech none"},
		{"stream", c.StreamParams().String(), "threshold 0.37/0.22, min speech 120ms, min silence 600ms, pad 200ms, max speech none"},
		{"file", c.FileParams().String(), "threshold 0.37/0.22, min speech 250ms, min silence 100ms, pad 100ms, max speech 28s"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, tc.got, tc.want)
		}
	}
}
