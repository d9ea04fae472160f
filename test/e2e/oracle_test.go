package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type cliJSON struct {
	Transcription []cliSegment `json:"transcription"`
}

// cliSegment is one segment of whisper-cli's JSON output (-oj).
type cliSegment struct {
	Offsets struct {
		From int64 `json:"from"`
		To   int64 `json:"to"`
	} `json:"offsets"`
	Text string `json:"text"`
}

// TestMatchesWhisperCLI is whisper.cpp's own CLI as an oracle: with the same
// settings (greedy, full audio context, no voice gate) yaz-decode must print
// exactly the segments whisper-cli prints for jfk.wav. A random-weight model
// makes this sharp: any scaling, resampling or parameter difference changes
// its output at once, without the test knowing a single real word.
func TestMatchesWhisperCLI(t *testing.T) {
	for _, model := range []string{world.mini, world.tinyEn} {
		t.Run(filepath.Base(model), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			dir := t.TempDir()
			out := filepath.Join(dir, "cli")
			cmd := exec.CommandContext(ctx, world.whisperCLI, "-m", model, "-f", world.jfk, "-t", "2", "-bs", "1", "-sns", "-np", "-oj", "-of", out)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("whisper-cli: %v\n%s", err, b)
			}
			b, err := os.ReadFile(out + ".json")
			if err != nil {
				t.Fatal(err)
			}
			var want cliJSON
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatalf("whisper-cli JSON: %v", err)
			}
			var wantSegs []jsonSegment
			for _, s := range want.Transcription {
				if strings.TrimSpace(s.Text) == "" {
					continue
				}
				// yaz-decode keeps times inside the audio (11 s); whisper-cli
				// prints the window edge.
				clamp := func(ms int64) int64 { return min(max(ms, 0), 11000) }
				wantSegs = append(wantSegs, jsonSegment{StartMs: clamp(s.Offsets.From), EndMs: clamp(s.Offsets.To), Text: strings.TrimSpace(s.Text)})
			}
			if len(wantSegs) == 0 {
				t.Fatalf("whisper-cli printed no segments: the oracle proves nothing")
			}
			stdout, stderr, code := command(t, ctx, nil, "yaz-decode", "-m", model, "-t", "2", "--beam-size", "1",
				"--audio-ctx", "full", "--no-vad-gate", "--no-speech-threshold", "1", "-o", "json", world.jfk)
			if code != 0 {
				t.Fatalf("yaz-decode exit %d: %s", code, stderr)
			}
			var got jsonDoc
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("yaz-decode JSON: %v\n%s", err, stdout)
			}
			if diff := cmp.Diff(wantSegs, got.Segments); diff != "" {
				t.Errorf("yaz-decode segments differ from whisper-cli's (-cli +yaz):\n%s", diff)
			}
		})
	}
}
