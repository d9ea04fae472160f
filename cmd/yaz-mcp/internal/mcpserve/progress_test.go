package mcpserve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/pcm"
)

// TestLocalProgressIsAudio: the local decoder's
// progress is milliseconds of audio done of the file's milliseconds
// (total), so a host that resets its timeout on progress sees how far it
// is (it used to be percent of 100): at 0 and after each piece, as on the
// daemon; a silent 35 s file is a piece of 30 s and one of 5 s.
func TestLocalProgressIsAudio(t *testing.T) {
	noDaemon(t)
	opt := baseOptions(t)
	opt.Decoder = fakeDecoder(t, "echo '"+answerJSON+"'\necho '"+strings.Replace(answerJSON, `"utt":1`, `"utt":2`, 1)+"'\ncat >/dev/null\n")
	file := filepath.Join(t.TempDir(), "a.wav")
	if err := os.WriteFile(file, append(pcm.WAVHeader(35*32000), make([]byte, 35*32000)...), 0o644); err != nil {
		t.Fatal(err)
	}
	s, _ := startSession(t, opt)
	s.initialize("2025-06-18")
	_, resp := s.request("tools/call", map[string]any{"name": "transcribe",
		"arguments": map[string]any{"path": file},
		"_meta":     map[string]any{"progressToken": "p"}})
	testwait.Recv(t, resp, "the transcript")
	type note struct {
		Progress float64  `json:"progress"`
		Total    *float64 `json:"total"`
	}
	want := []float64{0, 30000, 35000}
	var got []note
	deadline := time.After(testwait.Hang) // a notification may trail the result
	for len(got) < len(want) {
		var m message
		select {
		case m = <-s.notes:
		case <-deadline:
			t.Fatalf("waiting for progress notifications: %+v within %v of the result, want %v ms of a total of 35000", got, testwait.Hang, want)
		}
		if m.Method != "notifications/progress" {
			continue
		}
		var n note
		if err := json.Unmarshal(m.Params, &n); err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	for i, n := range got {
		if n.Total == nil || *n.Total != 35000 || n.Progress != want[i] {
			t.Errorf("progress %d = %v of %v, want %v of 35000 (ms of audio)", i, n.Progress, n.Total, want[i])
		}
	}
}
