package decode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/decodetest"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/transcript"
	"github.com/yazses/yazses/lib/pcm"
)

// cutWAV writes a 16 kHz mono WAV file whose header declares declared of
// audio and whose data holds samples (fewer): a download that stopped.
func cutWAV(t *testing.T, path string, samples []int16, declared time.Duration) string {
	t.Helper()
	data := append(pcm.WAVHeader(int64(2*pcm.Samples(declared))), pcm.Encode(nil, samples)...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTruncatedFile: a WAV file cut short (its header declares more audio
// than it holds, as after an interrupted download) is transcribed as far as
// it goes, as whisper-cli does: the transcript is the one of a whole file
// holding the same audio, a warning on stderr says the file was cut short,
// -o json says "truncated": true, and the exit status is 0. Both ways of
// reading a file: the energy detector's pieces and Silero's spans; the cut
// in the middle of a frame too.
func TestTruncatedFile(t *testing.T) {
	dir := t.TempDir()
	model := decodetest.MiniModel(t, dir)
	audio := append(decodetest.Speech(2*time.Second), append(decodetest.Silence(time.Second), decodetest.Speech(1500*time.Millisecond)...)...)
	whole := decodetest.WriteWAV(t, filepath.Join(dir, "whole.wav"), audio)
	cut := cutWAV(t, filepath.Join(dir, "cut.wav"), audio, 10*time.Second)
	odd := filepath.Join(dir, "odd.wav")
	b, err := os.ReadFile(cut)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(odd, append(b, 0x7f), 0o644); err != nil { // half a sample more
		t.Fatal(err)
	}
	for _, vad := range [][]string{{"--vad", "energy"}, {"--vad", "silero", "--vad-model", sileroModel(t)}} {
		t.Run(vad[1], func(t *testing.T) {
			args := append([]string{"-m", model, "-t", "2", "-o", "json"}, vad...)
			want, stderr, code := runMain(nil, append(args, whole)...)
			var wantDoc transcript.JSONDoc
			if code != 0 || json.Unmarshal([]byte(want), &wantDoc) != nil || wantDoc.Text == "" {
				t.Fatalf("the whole file: exit %d, stdout %q, stderr %q: want a transcript to compare with", code, want, stderr)
			}
			if strings.Contains(stderr, "cut short") {
				t.Errorf("the whole file: stderr %q says it was cut short", stderr)
			}
			for _, path := range []string{cut, odd} {
				out, stderr, code := runMain(nil, append(args, path)...)
				var doc struct {
					transcript.JSONDoc
					Truncated bool `json:"truncated"`
				}
				if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
					t.Fatalf("%s: exit %d, stdout %q, stderr %q; want exit 0 and a transcript", filepath.Base(path), code, out, stderr)
				}
				if doc.Text != wantDoc.Text || doc.AudioMs != wantDoc.AudioMs || !doc.Truncated {
					t.Errorf("%s: text %q, audio_ms %d, truncated %v; want the whole file's %q, %d, and true", filepath.Base(path), doc.Text, doc.AudioMs, doc.Truncated, wantDoc.Text, wantDoc.AudioMs)
				}
				warn := "yaz-decode: warning: " + path + ": the file is cut short"
				if !strings.Contains(stderr, warn) || !strings.Contains(stderr, "transcribed the 4.5 s it holds") {
					t.Errorf("%s: stderr %q; want %q and what was transcribed", filepath.Base(path), stderr, warn)
				}
			}
			// The file on stdin: what it holds, and a WARN record.
			b, err := os.ReadFile(cut)
			if err != nil {
				t.Fatal(err)
			}
			out, stderr, code := runMain(b, append([]string{"-m", model, "-t", "2"}, vad...)...)
			if code != 0 || strings.TrimSpace(out) == "" || !strings.Contains(stderr, "level=WARN") || !strings.Contains(stderr, "cut short") {
				t.Errorf("on stdin: exit %d, stdout %q, stderr %q; want a transcript and a warning", code, out, stderr)
			}
			// Text output: the same words, and the same warning.
			out, stderr, code = runMain(nil, append([]string{"-m", model, "-t", "2"}, append(vad, cut)...)...)
			if code != 0 || strings.TrimSpace(out) != wantDoc.Text || !strings.Contains(stderr, "cut short") {
				t.Errorf("text output: exit %d, stdout %q, stderr %q; want %q and the warning", code, out, stderr, wantDoc.Text)
			}
		})
	}
}
