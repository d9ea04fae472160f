package mcpserve

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
	"github.com/yazses/yazses/lib/pcm"
)

// TestTranscribeCutShort: a file cut short (its header declares 2 s, it
// holds 1 s, as after an interrupted download) is a transcript with a
// warning the caller sees, not an error, whichever decodes it: the daemon
// (its result's warning) or yaz-mcp's own decoder, which reads the file as
// far as it goes. The warning is in the structured content and in a text
// item after the transcript's; a whole file has neither.
func TestTranscribeCutShort(t *testing.T) {
	dir := t.TempDir()
	whole := wavFile(t, dir, "whole.wav")
	cut := filepath.Join(dir, "cut.wav")
	if err := os.WriteFile(cut, append(pcm.WAVHeader(64000), make([]byte, 32000)...), 0o644); err != nil {
		t.Fatal(err)
	}
	fakeDaemon(t, map[string]jsonrpc.Handler{
		daemonapi.MethodTranscribe: func(ctx context.Context, params json.RawMessage) (any, error) {
			var p daemonapi.TranscribeParams
			json.Unmarshal(params, &p)
			r := daemonapi.TranscribeResult{Text: "from the daemon", Segments: []daemonapi.Segment{{StartMs: 0, EndMs: 1000, Text: "from the daemon"}}, AudioMs: 1000, DecodeMs: 5}
			if p.Path == cut {
				r.Warning = daemonapi.WarningCutShort
			}
			return r, nil
		},
	})
	run := func(opt Options, path string) toolResult {
		t.Helper()
		s, _ := startSession(t, opt)
		s.initialize("2025-06-18")
		r := s.tool("transcribe", map[string]any{"path": path})
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
				t.Errorf("%s: warning %q, content %+v; want none", name, got.Warning, r.Content)
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
	opt.Decoder = fakeDecoder(t, serveFake)
	check("on the daemon, cut short", run(opt, cut), "from the daemon", true)
	check("on the daemon, whole", run(opt, whole), "from the daemon", false)
	opt.UseDaemon = false
	check("locally, cut short", run(opt, cut), "hello there", true)
	check("locally, whole", run(opt, whole), "hello there", false)
}
