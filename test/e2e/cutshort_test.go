package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/wav"
)

// TestTranscribeCutShort: a WAV file cut short (jfk.wav's first 7 s under
// a header that declares all 11 s, as after an interrupted download) gets
// the same text from yaz-decode, from the daemon's transcribe and from
// yaz-mcp's transcribe, whether yaz-mcp decodes it itself or on the
// daemon, each with a warning its caller sees and none of them an error.
func TestTranscribeCutShort(t *testing.T) {
	t.Parallel()
	f32, _, err := wav.ReadFile16k(world.jfk, 60*pcm.SampleRate)
	if err != nil {
		t.Fatal(err)
	}
	all := pcm.FromFloat32(nil, f32)
	part := all[:7*pcm.SampleRate]
	cut := filepath.Join(t.TempDir(), "cut.wav")
	if err := os.WriteFile(cut, append(pcm.WAVHeader(int64(2*len(all))), pcm.Encode(nil, part)...), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, stderr, code := command(t, ctx, nil, "yaz-decode", "-m", world.mini, "-t", "2", cut)
	text := strings.TrimSpace(out)
	if code != 0 || text == "" || !strings.Contains(stderr, "the file is cut short") {
		t.Fatalf("yaz-decode: exit %d, stdout %q, stderr %q; want the transcript of what the file holds and a warning", code, out, stderr)
	}

	d := startDaemon(t, baseConfig().With("decode.threads", "2"))
	r, err := d.Client().Transcribe(ctx, cut)
	if err != nil || r.Text != text || r.Warning != daemonapi.WarningCutShort || r.AudioMs != 7000 {
		t.Errorf("the daemon's transcribe: %+v, %v; want yaz-decode's text %q, 7000 ms and the warning", r, err, text)
	}

	for _, via := range []struct {
		name string
		env  []string
	}{
		{"yaz-mcp alone", mcpEnv(t, false, world.mini)},
		{"yaz-mcp on the daemon", hostEnv(d.Dir, "XDG_RUNTIME_DIR="+d.Runtime)},
	} {
		cs, _, _ := sdkSession(t, via.env, "", nil)
		res := callTool(t, cs, "transcribe", map[string]any{"path": cut})
		cs.Close()
		var tr struct {
			mcpTranscript
			Warning string `json:"warning"`
		}
		structuredInto(t, res, &tr)
		if res.IsError || tr.Text != text || tr.Warning != daemonapi.WarningCutShort || !strings.Contains(resultText(res), "[warning: the file is cut short") {
			t.Errorf("%s: %q (error %v), structured %+v; want yaz-decode's text %q and the warning", via.name, resultText(res), res.IsError, tr, text)
		}
	}
}
