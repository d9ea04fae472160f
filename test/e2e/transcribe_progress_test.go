package e2e

import (
	"context"
	"github.com/yazses/yazses/internal/testwait"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yazses/yazses/lib/wav"
)

// progressStep is one progress report: done of total.
type progressStep struct{ done, total float64 }

// checkAudioProgress fails unless steps are audio progress: every one of
// total, rising, from 0 to total, one at least after each 30 s piece.
func checkAudioProgress(t *testing.T, what string, steps []progressStep, total float64) {
	t.Helper()
	pieces := int(total+29999) / 30000
	if len(steps) < 1+pieces {
		t.Errorf("%s: %d progress reports %v, want at least %d (0, then one per 30 s piece)", what, len(steps), steps, 1+pieces)
	}
	if len(steps) == 0 {
		return
	}
	if steps[0].done != 0 || steps[len(steps)-1].done != total {
		t.Errorf("%s: progress %v, want it to start at 0 and end at the total %v", what, steps, total)
	}
	for i, s := range steps {
		if s.total != total {
			t.Errorf("%s: progress %d is %v of %v, want a total of %v (ms of audio in the file)", what, i, s.done, s.total, total)
		}
		if i > 0 && s.done <= steps[i-1].done {
			t.Errorf("%s: progress does not rise: %v", what, steps)
		}
	}
}

// TestTranscribeProgressIsAudio (the daemon's path): a
// transcribe through the daemon reports progress as milliseconds of audio
// done of the file's milliseconds, as the local path does: 0 when the
// file is opened and the end of each 30 s piece once it is decoded, up to
// the total. Through the real yaz-mcp, an MCP client (the official Go SDK)
// gets those as its progress notifications, each with its total, so a host
// that resets its timeout on progress sees how far it is. (It used to be
// elapsed seconds with no total.)
func TestTranscribeProgressIsAudio(t *testing.T) {
	t.Parallel()
	speech, _, err := wav.ReadFile16k(world.jfk, 60*sr)
	if err != nil {
		t.Fatal(err)
	}
	var audio []float32
	for len(audio) < 70*sr {
		audio = append(audio, speech[:min(len(speech), 70*sr-len(audio))]...)
	}
	file := writeWAVFile(t, filepath.Join(t.TempDir(), "seventy.wav"), audio)
	const total = 70000.0
	d := startDaemon(t, baseConfig().With("children.decode", arr(bin("fakedecode"))), "YAZ_FAKE_TEXT=piece of {audio_ms}")
	d.WaitRunning("decode")

	t.Run("daemon", func(t *testing.T) {
		c := d.Client()
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var steps []progressStep
		r, err := c.TranscribeProgress(ctx, file, func(done, total int64) {
			steps = append(steps, progressStep{float64(done), float64(total)})
		})
		if err != nil {
			t.Fatalf("transcribe.stream: %v\n%s", err, d.LogTail(20))
		}
		if _, pieces := pieceMs(t, r.Text); pieces != 3 || r.AudioMs != int64(total) {
			t.Errorf("transcribe.stream = %q of %d ms, want 3 pieces of %v ms", r.Text, r.AudioMs, total)
		}
		checkAudioProgress(t, "daemon progress", steps, total)
		t.Logf("daemon progress: %v", steps)
	})
	t.Run("mcp", func(t *testing.T) {
		var mu sync.Mutex
		var steps []progressStep
		ended := make(chan struct{})
		opts := &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			if req.Params.ProgressToken != "seventy" {
				return
			}
			steps = append(steps, progressStep{req.Params.Progress, req.Params.Total})
			if req.Params.Progress >= total && ended != nil {
				close(ended)
				ended = nil
			}
		}}
		cs, _, stderr := sdkSession(t, hostEnv(d.Dir, "XDG_RUNTIME_DIR="+d.Runtime, "YAZ_LOG_LEVEL=debug"), "2025-11-25", opts)
		mu.Lock()
		end := ended
		mu.Unlock()
		params := &sdk.CallToolParams{Name: "transcribe", Arguments: map[string]any{"path": file}}
		params.SetProgressToken("seventy")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := cs.CallTool(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		tr := checkTranscript(t, res, int64(total))
		// yaz-mcp logs the line beside its answer: it may come after it.
		if testwait.Until(testwait.Context(t), func() bool { return strings.Contains(stderr.String(), "transcribed on the daemon") }, stderr) != nil {
			t.Fatalf("transcribe did not use the daemon's decoder:\n%s", stderr.String())
		}
		if _, pieces := pieceMs(t, tr.Text); pieces != 3 {
			t.Errorf("the transcript %q has %d pieces, want 3 (70 s in pieces of at most 30 s)", tr.Text, pieces)
		}
		select { // a notification may trail its result
		case <-end:
		case <-time.After(10 * time.Second):
		}
		mu.Lock()
		got := slices.Clone(steps)
		mu.Unlock()
		checkAudioProgress(t, "MCP progress", got, total)
		t.Logf("MCP progress notifications: %v", got)
	})
}
