package decode

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/decodetest"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/stream"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/transcript"
	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
)

// parakeetModel writes the generated parakeet-mini model into dir under
// name.
func parakeetModel(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := testmodel.WriteFile(p, testmodel.ParakeetMini, 1); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestParakeetModes: a Parakeet model works in every mode through the same
// --model flag: files in every output format, a stream on stdin, and
// --serve; the JSON claims no language (Parakeet does not say which it
// heard).
func TestParakeetModes(t *testing.T) {
	dir := t.TempDir()
	model := parakeetModel(t, dir, "ggml-parakeet-mini.bin")
	wav := decodetest.WriteWAV(t, filepath.Join(dir, "a.wav"), decodetest.Speech(4*time.Second))

	stdout, stderr, code := runMain(nil, "-m", model, "-t", "2", "-o", "json", wav)
	if code != 0 {
		t.Fatalf("files json: exit %d: %s", code, stderr)
	}
	var doc transcript.JSONDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("json output %q: %v", stdout, err)
	}
	if doc.Text == "" || len(doc.Segments) == 0 || doc.Language != "" || doc.AudioMs != 4000 {
		t.Errorf("json doc %+v: want text, segments, audio_ms 4000 and no language", doc)
	}
	for _, s := range doc.Segments {
		if s.StartMs < 0 || s.EndMs > 4000 || s.EndMs < s.StartMs {
			t.Errorf("segment %+v outside the 4 s of audio", s)
		}
	}
	if strings.Contains(stderr, "WARN") {
		t.Errorf("defaults gave warnings: %s", stderr)
	}
	for format, want := range map[string]string{"txt": doc.Text + "\n", "srt": "00:00:0", "vtt": "WEBVTT\n\n"} {
		stdout, stderr, code := runMain(nil, "-m", model, "-t", "2", "-o", format, wav)
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("-o %s: exit %d, stdout %q, want %q: %s", format, code, stdout, want, stderr)
		}
	}

	// Stream: a pause splits two utterances, each printed on its own line.
	var in []int16
	in = append(in, decodetest.Speech(2*time.Second)...)
	in = append(in, decodetest.Silence(2*time.Second)...)
	in = append(in, decodetest.Speech(2*time.Second)...)
	stdout, stderr, code = runMain(pcm.Encode(nil, in), "-m", model, "-t", "2", "--json")
	if code != 0 {
		t.Fatalf("stream: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 {
		t.Errorf("stream printed %d lines, want 2:\n%s", len(lines), stdout)
	}
	for _, l := range lines {
		var sl stream.StreamLine
		if err := json.Unmarshal([]byte(l), &sl); err != nil || sl.Text == "" {
			t.Errorf("stream line %q: %v", l, err)
		}
	}

	// --serve.
	var frames bytes.Buffer
	w := frame.NewWriter(&frames)
	w.Audio(decodetest.Speech(3 * time.Second))
	w.End()
	stdout, stderr, code = runMain(frames.Bytes(), "--serve", "-m", model, "-t", "2")
	if code != 0 {
		t.Fatalf("serve: exit %d: %s", code, stderr)
	}
	var res frame.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Utt != 1 || res.Text == "" || res.Error != "" {
		t.Errorf("serve result %q (%v): want utterance 1 with text", stdout, err)
	}
}

// TestParakeetSettingsThatDoNotApply: whisper-only settings given with a
// Parakeet model are never ignored in silence. --prompt, --beam-size,
// --audio-ctx and --no-speech-threshold each get one warning and decoding
// goes on; a language other than en or auto is refused (exit 1, or under
// a supervisor exit 125 with cause language_unsupported), since the output
// would be whatever language the model heard.
func TestParakeetSettingsThatDoNotApply(t *testing.T) {
	dir := t.TempDir()
	model := parakeetModel(t, dir, "ggml-parakeet-mini.bin")
	wav := decodetest.WriteWAV(t, filepath.Join(dir, "a.wav"), decodetest.Speech(3*time.Second))
	plain, _, code := runMain(nil, "-m", model, "-t", "2", wav)
	if code != 0 || strings.TrimSpace(plain) == "" {
		t.Fatalf("plain run: exit %d, stdout %q", code, plain)
	}
	for _, tc := range []struct {
		args []string
		warn string
	}{
		{[]string{"--prompt", "Kubernetes, Grafana"}, "--prompt is not supported with a Parakeet model: ignored"},
		{[]string{"--beam-size", "5"}, "--beam-size is not supported with a Parakeet model: ignored"},
		{[]string{"--audio-ctx", "full"}, "--audio-ctx is not supported with a Parakeet model: ignored"},
		{[]string{"--audio-ctx", "512"}, "--audio-ctx is not supported with a Parakeet model: ignored"},
		{[]string{"--no-speech-threshold", "1"}, "--no-speech-threshold is not supported with a Parakeet model: ignored"},
	} {
		args := append([]string{"-m", model, "-t", "2"}, tc.args...)
		stdout, stderr, code := runMain(nil, append(args, wav)...)
		if code != 0 || stdout != plain {
			t.Errorf("%q: exit %d, stdout %q; want 0 and the same text as without it", tc.args, code, stdout)
		}
		if strings.Count(stderr, tc.warn) != 1 || !strings.Contains(stderr, "level=WARN") {
			t.Errorf("%q: stderr %q, want one warning %q", tc.args, stderr, tc.warn)
		}
		if strings.Contains(stderr, plain[:min(len(plain), 8)]) {
			t.Errorf("%q: the warning carries transcript text: %s", tc.args, stderr)
		}
	}
	// The same settings at their defaults, as the daemon passes them, say
	// nothing.
	_, stderr, _ := runMain(nil, "-m", model, "-t", "2", "-l", "en", "--beam-size", "1", "--audio-ctx", "auto", wav)
	if strings.Contains(stderr, "WARN") {
		t.Errorf("defaults gave warnings: %s", stderr)
	}
	for _, lang := range []string{"auto", "en"} {
		if stdout, stderr, code := runMain(nil, "-m", model, "-t", "2", "-l", lang, wav); code != 0 || stdout != plain {
			t.Errorf("-l %s: exit %d, stdout %q: %s", lang, code, stdout, stderr)
		}
	}
	for _, lang := range []string{"de", "fr"} {
		stdout, stderr, code := runMain(nil, "-m", model, "-t", "2", "-l", lang, wav)
		if code != 1 || stdout != "" || !strings.Contains(stderr, `language "`+lang+`": a Parakeet model has no language selection`) ||
			!strings.Contains(stderr, "set auto") {
			t.Errorf("-l %s: exit %d, stdout %q, stderr %q; want 1 and why", lang, code, stdout, stderr)
		}
		var out, errb bytes.Buffer
		code = Main(t.Context(), []string{"--serve", "--log-format", "json", "-m", model, "-l", lang}, strings.NewReader(""), &out, &errb)
		var rec map[string]any
		if code != 125 || json.Unmarshal(errb.Bytes(), &rec) != nil || rec["cause"] != "language_unsupported" {
			t.Errorf("--serve -l %s: exit %d, stderr %q; want 125 and cause language_unsupported", lang, code, errb.String())
		}
	}
}

// TestParakeetServePrompt: under --serve, a vocabulary prompt sent in a
// Prompt frame (the daemon's dictation.prompt) with a Parakeet model is
// reported once, not once per utterance, and every utterance is decoded.
func TestParakeetServePrompt(t *testing.T) {
	dir := t.TempDir()
	model := parakeetModel(t, dir, "ggml-parakeet-mini.bin")
	var frames bytes.Buffer
	w := frame.NewWriter(&frames)
	for range 3 {
		w.Prompt("Kubernetes")
		w.Audio(decodetest.Speech(2 * time.Second))
		w.End()
	}
	stdout, stderr, code := runMain(frames.Bytes(), "--serve", "-m", model, "-t", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := strings.Count(stdout, `"utt":`); n != 3 || strings.Contains(stdout, `"error"`) {
		t.Errorf("%d results, want 3 without error:\n%s", n, stdout)
	}
	if n := strings.Count(stderr, "a vocabulary prompt (dictation.prompt) is not supported with a Parakeet model: ignored"); n != 1 {
		t.Errorf("%d prompt warnings, want 1:\n%s", n, stderr)
	}
	if strings.Contains(stderr, "Kubernetes") {
		t.Errorf("the warning carries the prompt's text:\n%s", stderr)
	}
}

// TestParakeetBadFiles: a Parakeet file cut short, one with a zero
// n_audio_ctx, and files named like the other engine: the bad ones are
// refused with a message before whisper.cpp sees them (exit 125 under a
// supervisor), and the misnamed good ones are decoded by the engine their
// content says.
func TestParakeetBadFiles(t *testing.T) {
	dir := t.TempDir()
	good := parakeetModel(t, dir, "good.bin")
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "ggml-parakeet-tdt-0.6b-v3-f16.bin")
	os.WriteFile(cut, b[:len(b)*2/3], 0o644)
	zero := filepath.Join(dir, "ggml-parakeet-tdt-0.6b-v3-q8_0.bin")
	z := bytes.Clone(b)
	binary.LittleEndian.PutUint32(z[8:], 0)
	os.WriteFile(zero, z, 0o644)
	for _, tc := range []struct {
		model string
		msg   []string
	}{
		{cut, []string{cut, "truncated", "fetch it again with yaz-fetch-model parakeet-tdt-0.6b-v3-f16"}},
		{zero, []string{zero, "n_audio_ctx 0", "cannot allocate a state"}},
	} {
		var out, errb bytes.Buffer
		code := Main(t.Context(), []string{"--serve", "--log-format", "json", "-m", tc.model}, strings.NewReader(""), &out, &errb)
		var rec map[string]any
		if code != 125 || json.Unmarshal(errb.Bytes(), &rec) != nil || rec["cause"] != "model_invalid" {
			t.Errorf("%s: exit %d, stderr %q; want 125 and cause model_invalid", filepath.Base(tc.model), code, errb.String())
			continue
		}
		for _, m := range tc.msg {
			if msg, _ := rec["msg"].(string); !strings.Contains(msg, m) {
				t.Errorf("%s: message %q does not say %q", filepath.Base(tc.model), msg, m)
			}
		}
	}
	wav := decodetest.WriteWAV(t, filepath.Join(dir, "a.wav"), decodetest.Speech(3*time.Second))
	whisperNamedParakeet := filepath.Join(dir, "ggml-parakeet-tdt-0.6b-v3-f16-whisper.bin")
	if err := testmodel.WriteFile(whisperNamedParakeet, testmodel.Mini, 1); err != nil {
		t.Fatal(err)
	}
	parakeetNamedWhisper := parakeetModel(t, dir, "ggml-base.en.bin")
	for model, engine := range map[string]string{whisperNamedParakeet: "whisper", parakeetNamedWhisper: "parakeet"} {
		stdout, stderr, code := runMain(nil, "-m", model, "-t", "2", "--log-level", "debug", "--log-format", "json", wav)
		if code != 0 || strings.TrimSpace(stdout) == "" || !strings.Contains(stderr, `"engine":"`+engine+`"`) {
			t.Errorf("%s: exit %d, stdout %q; want it decoded by %s:\n%s", filepath.Base(model), code, stdout, engine, tail(stderr))
		}
	}
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}
