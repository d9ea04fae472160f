package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/wav"
)

// TestDecodeLogAllJSON: with --log-format json --log-level debug, every
// line yaz-decode writes on stderr is a JSON record, whisper.cpp's own
// lines included (as debug records), in files, stream and serve mode.
func TestDecodeLogAllJSON(t *testing.T) {
	f32, _, err := wav.ReadFile16k(world.jfk, 60*pcm.SampleRate)
	if err != nil {
		t.Fatal(err)
	}
	samples := pcm.FromFloat32(nil, f32)
	var frames bytes.Buffer
	w := frame.NewWriter(&frames)
	w.Audio(samples)
	w.End()
	for _, mode := range []struct {
		name  string
		args  []string
		stdin []byte
	}{
		{"files", []string{world.jfk}, nil},
		{"stream", nil, pcm.Encode(nil, samples)},
		{"serve", []string{"--serve"}, frames.Bytes()},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			args := append([]string{"-m", world.mini, "-t", "2", "--log-format", "json", "--log-level", "debug"}, mode.args...)
			stdout, stderr, code := command(t, ctx, mode.stdin, "yaz-decode", args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, tail(stderr, 10))
			}
			if strings.TrimSpace(stdout) == "" {
				t.Errorf("no transcript on stdout")
			}
			whisperLines := 0
			for _, line := range strings.Split(strings.TrimRight(stderr, "\n"), "\n") {
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Errorf("stderr line is not JSON: %q", line)
					continue
				}
				if rec["src"] == "whisper.cpp" {
					whisperLines++
					if rec["level"] != "DEBUG" {
						t.Errorf("whisper.cpp line at level %v, want DEBUG: %q", rec["level"], line)
					}
				}
			}
			if whisperLines == 0 {
				t.Errorf("no whisper.cpp record on stderr at debug level: the test proves nothing")
			}
		})
	}
}
