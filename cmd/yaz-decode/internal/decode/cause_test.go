package decode

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testmodel"
)

// TestStartupCause: a model that is missing or is not a whisper model ends
// a supervised decoder (--serve) with exit 125 and exactly one JSON ERROR
// record whose cause names the kind and whose message names the file and
// the fix (contract 2). Outside supervision the same message is the one
// error line, with exit 1. A file whisper.cpp would choke on (a Silero VAD
// model, a truncated model) never reaches it.
func TestStartupCause(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "ggml-tiny.en.bin")
	text := filepath.Join(dir, "ggml-base.en.bin")
	os.WriteFile(text, []byte("<html>404 Not Found</html>\n"), 0o644)
	vad := filepath.Join(dir, "ggml-silero-v6.2.0.bin")
	os.WriteFile(vad, []byte("lmgg\x0a\x00\x00\x00silero-16k\x06\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00"), 0o644)
	var b bytes.Buffer
	if err := testmodel.Write(&b, testmodel.Mini, 1); err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "ggml-small.en.bin")
	os.WriteFile(cut, b.Bytes()[:b.Len()*2/3], 0o644)

	tests := []struct {
		model, cause string
		msg          []string
	}{
		{missing, "model_missing", []string{"model not found: " + missing + " — fetch one with yaz-fetch-model tiny.en"}},
		{text, "model_invalid", []string{text, "not a ggml model file", `"<html>404 Not Fo"`, "yaz-fetch-model base.en"}},
		{vad, "model_invalid", []string{vad, "is a Silero VAD model", "not a whisper or Parakeet model"}},
		{cut, "model_invalid", []string{cut, "truncated", "fetch it again with yaz-fetch-model small.en"}},
	}
	for _, tt := range tests {
		t.Run(tt.cause+"/"+filepath.Base(tt.model), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(context.Background(), []string{"--serve", "--log-format", "json", "-m", tt.model},
				strings.NewReader(""), &out, &errb)
			if code != 125 {
				t.Errorf("exit %d, want 125 (do not restart)", code)
			}
			lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
			if len(lines) != 1 {
				t.Fatalf("stderr has %d lines, want one JSON record:\n%s", len(lines), errb.String())
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
				t.Fatalf("stderr %q is not a JSON record: %v", lines[0], err)
			}
			msg, _ := rec["msg"].(string)
			if rec["level"] != "ERROR" || rec["cause"] != tt.cause {
				t.Errorf("record %v, want level ERROR and cause %s", rec, tt.cause)
			}
			for _, m := range tt.msg {
				if !strings.Contains(msg, m) {
					t.Errorf("message %q does not say %q", msg, m)
				}
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q, want nothing", out.String())
			}
			// A person at a terminal gets the same words once, exit 1.
			out.Reset()
			errb.Reset()
			code = Main(context.Background(), []string{"-m", tt.model, filepath.Join(dir, "a.wav")},
				strings.NewReader(""), &out, &errb)
			got := strings.TrimSpace(errb.String())
			if code != 1 || got != "yaz-decode: error: "+msg {
				t.Errorf("unsupervised: exit %d, stderr %q; want 1 and %q", code, got, "yaz-decode: error: "+msg)
			}
		})
	}
}
