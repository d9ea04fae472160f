package mcpserve

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
)

// TestTranscribeCutShort: a file cut short (an interrupted download) is a
// transcript with a warning the caller sees, not an error, whichever
// decodes it: the daemon (its result's warning) or the local yaz-decode
// ("truncated": true in its JSON). The warning is in the structured
// content and in a text item after the transcript's; a whole file has
// neither.
func TestTranscribeCutShort(t *testing.T) {
	var whole atomic.Bool // the daemon's file is whole
	fakeDaemon(t, map[string]jsonrpc.Handler{
		daemonapi.MethodTranscribe: func(ctx context.Context, params json.RawMessage) (any, error) {
			r := daemonapi.TranscribeResult{Text: "from the daemon", Segments: []daemonapi.Segment{{StartMs: 0, EndMs: 2000, Text: "from the daemon"}}, AudioMs: 2000, DecodeMs: 5}
			if !whole.Load() {
				r.Warning = daemonapi.WarningCutShort
			}
			return r, nil
		},
	})
	wav := wavFile(t, t.TempDir(), "a.wav")
	cut := strings.TrimSuffix(transcriptJSON, "}") + `,"truncated":true}`
	run := func(opt Options) toolResult {
		t.Helper()
		s, _ := startSession(t, opt)
		s.initialize("2025-06-18")
		r := s.tool("transcribe", map[string]any{"path": wav})
		s.close()
		return r
	}
	check := func(name string, r toolResult, text string, warn bool) {
		t.Helper()
		var got Transcript
		if r.IsError || json.Unmarshal(r.StructuredContent, &got) != nil || got.Text != text {
			t.Fatalf("%s: %+v; want the transcript %q", name, r, text)
		}
		if !warn {
			if got.Warning != "" || len(r.Content) != 1 {
				t.Errorf("%s: a whole file: warning %q, content %+v; want none", name, got.Warning, r.Content)
			}
			return
		}
		if got.Warning != daemonapi.WarningCutShort {
			t.Errorf("%s: structured warning %q, want %q", name, got.Warning, daemonapi.WarningCutShort)
		}
		if len(r.Content) != 2 || r.Content[0].Text != text || !strings.Contains(r.Content[1].Text, "the file is cut short") {
			t.Errorf("%s: content %+v; want the transcript, then the warning", name, r.Content)
		}
	}
	opt := baseOptions(t)
	opt.Decoder = fakeDecoder(t, "echo '"+cut+"'\n")
	check("on the daemon", run(opt), "from the daemon", true)
	whole.Store(true)
	check("on the daemon, a whole file", run(opt), "from the daemon", false)
	opt.UseDaemon = false
	check("locally", run(opt), "hello there", true)
	opt.Decoder = fakeDecoder(t, "echo '"+transcriptJSON+"'\n")
	check("locally, a whole file", run(opt), "hello there", false)
}
