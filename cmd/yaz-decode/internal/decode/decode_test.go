package decode

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestMainUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"--help"}, 0, ""},
		{[]string{"--output", "docx", "a.wav"}, 2, "--output"},
		{[]string{"--serve", "a.wav"}, 2, "takes no files"},
		{[]string{"--prompt-stdin"}, 2, "--prompt-stdin needs files"},
		{[]string{"serve", "--prompt-stdin"}, 2, "--prompt-stdin"}, // not a flag of serve
		{[]string{"--prompt-stdin", "a.wav"}, 1, "--prompt-stdin: read the prompt frame: EOF"},
		{[]string{"--beam-size", "99", "a.wav"}, 2, "--beam-size"},
		{[]string{"--vad", "webrtc", "a.wav"}, 2, "--vad"},
		{[]string{"--vad-threshold", "1.5", "a.wav"}, 2, "--vad-threshold must be between 0.01 and 0.99"},
		{[]string{"--vad-threshold", "0", "a.wav"}, 2, "--vad-threshold must be between 0.01 and 0.99"},
		{[]string{"--vad-threshold", "NaN", "a.wav"}, 2, "--vad-threshold must be between 0.01 and 0.99"},
		{[]string{"-m", "/nonexistent/ggml-tiny.en.bin", "a.wav"}, 1, "yaz-fetch-model tiny.en"},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), tc.args, strings.NewReader(""), &out, &errb)
		if code != tc.code {
			t.Errorf("Main(%q) = %d, want %d; stderr %s", tc.args, code, tc.code, errb.String())
		}
		if tc.err != "" && !strings.Contains(errb.String(), tc.err) {
			t.Errorf("Main(%q) stderr = %q, want it to mention %q", tc.args, errb.String(), tc.err)
		}
		if n := strings.Count(strings.TrimSpace(errb.String()), "\n"); tc.code == 1 && n > 0 {
			t.Errorf("Main(%q) printed %d lines on stderr, want one", tc.args, n+1)
		}
	}
}
