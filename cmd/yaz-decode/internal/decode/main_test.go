package decode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/asr"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/decodetest"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/transcript"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
)

func runMain(stdin []byte, args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, bytes.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

// TestLanguageRefused: -l with a language other than English on an
// English-only model is refused with an error that says so, in every mode,
// instead of decoding English and labelling the output with the language
// asked for.
func TestLanguageRefused(t *testing.T) {
	dir := t.TempDir()
	model := decodetest.MiniModel(t, dir)
	wav := decodetest.WriteWAV(t, filepath.Join(dir, "a.wav"), decodetest.Speech(2*time.Second))
	var frames bytes.Buffer
	w := frame.NewWriter(&frames)
	w.Audio(decodetest.Speech(2 * time.Second))
	w.End()
	for _, mode := range []struct {
		name  string
		args  []string
		stdin []byte
	}{
		{"files", []string{"-o", "json", wav}, nil},
		{"stream", []string{"--json"}, pcm.Encode(nil, decodetest.Speech(2*time.Second))},
		{"serve", []string{"--serve"}, frames.Bytes()},
	} {
		for _, lang := range []string{"de", "fr", "german", "xx"} {
			t.Run(mode.name+"/"+lang, func(t *testing.T) {
				args := append([]string{"-m", model, "-t", "2", "-l", lang}, mode.args...)
				stdout, stderr, code := runMain(mode.stdin, args...)
				if code == 0 {
					t.Fatalf("-l %s on an English-only model: exit 0, stdout %q", lang, stdout)
				}
				if stdout != "" {
					t.Errorf("-l %s: stdout %q, want nothing", lang, stdout)
				}
				// Under --serve the message is a slog record (quotes escaped).
				named := strings.Contains(stderr, `"`+lang+`"`) || strings.Contains(stderr, `\"`+lang+`\"`)
				if !named || !strings.Contains(stderr, "language") {
					t.Errorf("-l %s: stderr %q does not name the language", lang, stderr)
				}
				if lang != "xx" && !strings.Contains(stderr, "English-only") {
					t.Errorf("-l %s: stderr %q does not say the model is English-only", lang, stderr)
				}
			})
		}
	}
	// English, and auto (English on this model), are decoded and labelled
	// with the language decoded.
	for _, lang := range []string{"en", "auto", "EN"} {
		stdout, stderr, code := runMain(nil, "-m", model, "-t", "2", "-l", lang, "-o", "json", wav)
		if code != 0 {
			t.Fatalf("-l %s: exit %d: %s", lang, code, stderr)
		}
		var doc transcript.JSONDoc
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Language != "en" {
			t.Errorf("-l %s: JSON language %q, want en", lang, doc.Language)
		}
	}
}

// TestOutputDir: --output-dir creates a missing folder (and its parents);
// a path that exists and is not a folder is named precisely.
func TestOutputDir(t *testing.T) {
	dir := t.TempDir()
	model := decodetest.MiniModel(t, dir)
	a := decodetest.WriteWAV(t, filepath.Join(dir, "a.wav"), decodetest.Speech(2*time.Second))
	b := decodetest.WriteWAV(t, filepath.Join(dir, "b.wav"), decodetest.Speech(3*time.Second))

	out := filepath.Join(dir, "subs", "2024")
	stdout, stderr, code := runMain(nil, "-m", model, "-t", "2", "-o", "srt", "--output-dir", out, a, b)
	if code != 0 {
		t.Fatalf("--output-dir missing: exit %d: %s", code, stderr)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing with --output-dir", stdout)
	}
	for _, p := range []string{filepath.Join(dir, "subs"), out} {
		st, err := os.Stat(p)
		if err != nil || !st.IsDir() {
			t.Fatalf("%s not created: %v", p, err)
		}
		if perm := st.Mode().Perm(); perm&^0o755 != 0 || perm&0o700 != 0o700 {
			t.Errorf("%s created with mode %v, want 0755 (less with a umask)", p, perm)
		}
	}
	for _, name := range []string{"a.srt", "b.srt"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	file := decodetest.WriteWAV(t, filepath.Join(dir, "taken"), nil)
	for _, tc := range []struct {
		path, want string
	}{
		{file, file + " exists and is not a folder"},
		{filepath.Join(file, "sub"), "--output-dir " + filepath.Join(file, "sub")},
	} {
		_, stderr, code := runMain(nil, "-m", model, "-o", "srt", "--output-dir", tc.path, a)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("--output-dir %s: exit %d, stderr %q; want a failure saying %q", tc.path, code, stderr, tc.want)
		}
		if strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("--output-dir %s: %d lines on stderr, want one", tc.path, strings.Count(stderr, "\n"))
		}
	}
}

// TestStartupErrorsWrapCauses: the errors that end yaz-decode before it
// decodes anything wrap asr's sentinels, so a supervisor hook can tell a
// missing model, a file that is not a model and an unsupported language
// apart.
func TestStartupErrorsWrapCauses(t *testing.T) {
	dir := t.TempDir()
	model := decodetest.MiniModel(t, dir)
	junk := filepath.Join(dir, "junk.bin")
	if err := os.WriteFile(junk, []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want error
	}{
		{[]string{"--serve", "-m", filepath.Join(dir, "none.bin")}, asr.ErrModelMissing},
		{[]string{"--serve", "-m", junk}, asr.ErrModelInvalid},
		{[]string{"--serve", "-m", model, "-l", "de"}, asr.ErrLanguageUnsupported},
		{[]string{"serve", "-m", junk}, asr.ErrModelInvalid},
		{[]string{"-m", junk, "a.wav"}, asr.ErrModelInvalid},
	} {
		c, cmd, code, errb := parse(t, tc.args...)
		if code != 0 {
			t.Fatalf("parse %q: exit %d: %s", tc.args, code, errb)
		}
		var out, stderr bytes.Buffer
		e := &env{ctx: context.Background(), log: discard, stdin: bytes.NewReader(nil), stdout: &out, stderr: &stderr}
		var err error
		if cmd == "serve" {
			err = c.Serve.Run(e)
		} else {
			err = c.Decode.Run(e)
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("run(%q) = %v, want it to wrap %v", tc.args, err, tc.want)
		}
	}
}

// TestPromptStdin: --prompt-stdin takes the vocabulary hint from one
// Prompt frame on stdin (how yaz-mcp passes a private prompt, on no command
// line) and decodes a file exactly as --prompt with the same text does;
// anything on stdin but a Prompt frame is refused.
func TestPromptStdin(t *testing.T) {
	dir := t.TempDir()
	model := decodetest.MiniModel(t, dir)
	wav := decodetest.WriteWAV(t, filepath.Join(dir, "a.wav"), decodetest.Speech(2*time.Second))
	const hint = "Kubernetes, YazSes, Grüße"
	prompt := func(typ byte, text string) []byte {
		var b bytes.Buffer
		if err := frame.NewWriter(&b).WriteFrame(frame.Frame{Type: typ, Payload: []byte(text)}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	// Every window decoded and every segment kept: the generated model
	// then prints words, and a prompt changes them.
	args := []string{"-m", model, "-t", "2", "-o", "json", "--no-vad-gate", "--no-speech-threshold=1"}
	byFlag, stderr, code := runMain(nil, append(args, "--prompt", hint, wav)...)
	if code != 0 {
		t.Fatalf("--prompt: exit %d: %s", code, stderr)
	}
	byFrame, stderr, code := runMain(prompt(frame.Prompt, hint), append(args, "--prompt-stdin", wav)...)
	if code != 0 {
		t.Fatalf("--prompt-stdin: exit %d: %s", code, stderr)
	}
	if byFrame != byFlag {
		t.Errorf("--prompt-stdin printed %q, --prompt the same text %q", byFrame, byFlag)
	}
	if none, _, _ := runMain(nil, append(args, wav)...); none == byFrame {
		t.Errorf("--prompt-stdin printed %q, as without a prompt: the prompt was not used", none)
	}
	for _, bad := range [][]byte{prompt(frame.Context, hint), pcm.Encode(nil, decodetest.Speech(time.Second)), {'P', 9, 0}} {
		stdout, stderr, code := runMain(bad, "-m", model, "--prompt-stdin", wav)
		if code != 1 || stdout != "" || !strings.Contains(stderr, "--prompt-stdin") {
			t.Errorf("stdin %.8q: exit %d, stdout %q, stderr %q; want exit 1 naming --prompt-stdin", bad, code, stdout, stderr)
		}
	}
}

// TestEmptyFile: a file of 0 bytes is said to be empty, with no advice to
// convert it (ffmpeg or sox would not find audio in it either); a file
// that is not WAV gets that advice.
func TestEmptyFile(t *testing.T) {
	dir := t.TempDir()
	model := decodetest.MiniModel(t, dir)
	empty := filepath.Join(dir, "empty.wav")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "notes.wav")
	if err := os.WriteFile(text, []byte("not audio\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, says, not string }{
		{empty, "is empty", "ffmpeg"},
		{text, "ffmpeg", "empty"},
	} {
		stdout, stderr, code := runMain(nil, "-m", model, tc.path)
		if code != 1 || stdout != "" || !strings.Contains(stderr, tc.says) || strings.Contains(stderr, tc.not) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 saying %q and not %q", filepath.Base(tc.path), code, stdout, stderr, tc.says, tc.not)
		}
	}
}
