package mcpserve

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
)

// TestLocalProgressIsAudio: the local decoder's
// progress is milliseconds of audio done of the file's milliseconds
// (total), so a host that resets its timeout on progress sees how far it
// is; it used to be percent of 100.
func TestLocalProgressIsAudio(t *testing.T) {
	noDaemon(t)
	opt := baseOptions(t)
	opt.Decoder = fakeDecoder(t, "printf '\\rdecoding [===   ]  50%% 1s\\n' >&2\nprintf '\\rdecoding [======] 100%% 2s\\n' >&2\necho '"+transcriptJSON+"'\n")
	s, _ := startSession(t, opt)
	s.initialize("2025-06-18")
	_, resp := s.request("tools/call", map[string]any{"name": "transcribe",
		"arguments": map[string]any{"path": wavFile(t, t.TempDir(), "a.wav")}, // 1000 ms
		"_meta":     map[string]any{"progressToken": "p"}})
	testwait.Recv(t, resp, "the transcript")
	type note struct {
		Progress float64  `json:"progress"`
		Total    *float64 `json:"total"`
	}
	want := []float64{0, 500, 1000}
	var got []note
	deadline := time.After(testwait.Hang) // a notification may trail the result
	for len(got) < len(want) {
		var m message
		select {
		case m = <-s.notes:
		case <-deadline:
			t.Fatalf("waiting for progress notifications: %+v within %v of the result, want %v ms of a total of 1000", got, testwait.Hang, want)
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
		if n.Total == nil || *n.Total != 1000 || n.Progress != want[i] {
			t.Errorf("progress %d = %v of %v, want %v of 1000 (ms of audio)", i, n.Progress, n.Total, want[i])
		}
	}
}
