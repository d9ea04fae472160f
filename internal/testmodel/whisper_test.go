package testmodel_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ggerganov/whisper.cpp/bindings/go/pkg/whisper"
	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/lib/pcm"
)

const defaultWhisperCLI = "/root/.cache/yazses/whisper.cpp-1.9.1/build/bin/whisper-cli"

// whisperCLI returns whisper.cpp's CLI: $YAZ_WHISPER_CLI (set by
// scripts/env.sh), else the path `make setup` builds. CI always builds it, so
// a missing binary fails the test rather than skipping it.
func whisperCLI(t *testing.T) string {
	t.Helper()
	path := os.Getenv("YAZ_WHISPER_CLI")
	if path == "" {
		path = defaultWhisperCLI
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("whisper-cli not found at %s (set YAZ_WHISPER_CLI or run `make setup`): %v", path, err)
	}
	return path
}

// jfkWAV returns the 11 s speech sample that ships with the whisper.cpp Go
// bindings module.
func jfkWAV(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/ggerganov/whisper.cpp/bindings/go").Output()
	if err != nil {
		t.Fatalf("find the whisper.cpp bindings module: %v", err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "samples", "jfk.wav")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("jfk.wav sample: %v", err)
	}
	return path
}

// readWAV returns the samples of a 16 kHz mono s16 WAV file as float32.
func readWAV(t *testing.T, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		t.Fatalf("%s: not a RIFF/WAVE file", path)
	}
	le := binary.LittleEndian
	for off := 12; off+8 <= len(b); {
		id, n := string(b[off:off+4]), int(le.Uint32(b[off+4:]))
		body := b[off+8 : min(off+8+n, len(b))]
		switch id {
		case "fmt ":
			if le.Uint16(body[0:]) != 1 || le.Uint16(body[2:]) != 1 || le.Uint32(body[4:]) != 16000 || le.Uint16(body[14:]) != 16 {
				t.Fatalf("%s: want 16 kHz mono s16 PCM", path)
			}
		case "data":
			return pcm.ToFloat32(nil, pcm.Decode(nil, body))
		}
		off += 8 + n + n%2
	}
	t.Fatalf("%s: no data chunk", path)
	return nil
}

// cliResult is the part of whisper-cli's -ojf output the tests look at.
type cliResult struct {
	Transcription []struct {
		Text   string `json:"text"`
		Tokens []struct {
			Text string  `json:"text"`
			P    float64 `json:"p"`
		} `json:"tokens"`
	} `json:"transcription"`
}

var fallbacksRE = regexp.MustCompile(`fallbacks =\s+(\d+) p /\s+(\d+) h`)

// TestWhisperCLI loads generated models into whisper.cpp's own CLI and
// transcribes real speech: the file must load, inference must finish
// normally (no GGML_ASSERT abort), and the shaped decoder must end every
// segment with end-of-text without temperature fallbacks. The words are
// random and not checked.
func TestWhisperCLI(t *testing.T) {
	cli, wav := whisperCLI(t), jfkWAV(t)
	for _, size := range []testmodel.Size{testmodel.Mini, testmodel.TinyEn} {
		t.Run(size.String(), func(t *testing.T) {
			dir := t.TempDir()
			model := filepath.Join(dir, "model.bin")
			if err := testmodel.WriteFile(model, size, 1); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(cli, "-m", model, "-f", wav, "-t", "2", "-nt", "-ojf", "-of", filepath.Join(dir, "out"))
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			err := cmd.Run()
			elapsed := time.Since(start)
			if err != nil {
				t.Fatalf("whisper-cli: %v\nstderr:\n%s", err, tail(stderr.String(), 40))
			}
			log := stderr.String()
			for _, want := range []string{"whisper_print_timings:", "total time", "encode time"} {
				if !strings.Contains(log, want) {
					t.Errorf("whisper-cli stderr lacks %q:\n%s", want, tail(log, 40))
				}
			}
			for _, bad := range []string{"GGML_ASSERT", "error:", "failed to"} {
				if strings.Contains(log, bad) {
					t.Errorf("whisper-cli stderr contains %q:\n%s", bad, tail(log, 40))
				}
			}
			if m := fallbacksRE.FindStringSubmatch(log); m == nil || m[1] != "0" || m[2] != "0" {
				t.Errorf("whisper-cli fallbacks %v, want 0 p / 0 h (the decoder should be confident)", m)
			}
			if strings.TrimSpace(stdout.String()) == "" {
				t.Error("whisper-cli printed no text")
			}
			raw, err := os.ReadFile(filepath.Join(dir, "out.json"))
			if err != nil {
				t.Fatal(err)
			}
			var res cliResult
			if err := json.Unmarshal(raw, &res); err != nil {
				t.Fatalf("whisper-cli JSON: %v", err)
			}
			if len(res.Transcription) == 0 {
				t.Fatal("whisper-cli JSON has no segments")
			}
			for i, seg := range res.Transcription {
				n := len(seg.Tokens)
				if n < 3 || seg.Tokens[n-1].Text != "[_EOT_]" {
					t.Errorf("segment %d has %d tokens and does not end with end-of-text", i, n)
				}
				// The model's token limit per segment is n_text_ctx/2 = 224.
				if n > 100 {
					t.Errorf("segment %d has %d tokens, want a short segment", i, n)
				}
			}
			t.Logf("%v: whisper-cli on jfk.wav, 2 threads: %v", size, elapsed.Round(time.Millisecond))
		})
	}
}

// TestBindings loads a generated model through the whisper.cpp Go bindings
// and transcribes jfk.wav in-process with their defaults (greedy, with
// timestamps; the larger sizes with a trimmed audio context). Segments must
// stay short (the decoder ends them), and on the mini model a second run must
// give the same segments: with no temperature fallback, decoding is
// deterministic.
func TestBindings(t *testing.T) {
	samples := readWAV(t, jfkWAV(t))
	for _, size := range []testmodel.Size{testmodel.Mini, testmodel.TinyEn, testmodel.Tiny} {
		t.Run(size.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "model.bin")
			if err := testmodel.WriteFile(path, size, 1); err != nil {
				t.Fatal(err)
			}
			model, err := whisper.New(path)
			if err != nil {
				t.Fatalf("whisper.New: %v", err)
			}
			defer model.Close()
			if got, want := model.IsMultilingual(), size == testmodel.Tiny; got != want {
				t.Errorf("%v model: IsMultilingual() = %t, want %t", size, got, want)
			}
			transcribe := func() []string {
				ctx, err := model.NewContext()
				if err != nil {
					t.Fatalf("NewContext: %v", err)
				}
				ctx.SetThreads(2)
				if size != testmodel.Mini {
					// A trimmed audio context (about 10 s) keeps the larger
					// models cheap and exercises the path yaz-decode uses.
					ctx.SetAudioCtx(512)
				}
				if err := ctx.Process(samples, nil, nil, nil); err != nil {
					t.Fatalf("Process: %v", err)
				}
				var segs []string
				for {
					s, err := ctx.NextSegment()
					if err != nil {
						if !errors.Is(err, io.EOF) {
							t.Fatalf("NextSegment: %v", err)
						}
						break
					}
					if len(s.Tokens) > 100 {
						t.Errorf("segment %d has %d tokens, want a short segment", len(segs), len(s.Tokens))
					}
					segs = append(segs, fmt.Sprintf("%v-%v %d tokens %q", s.Start, s.End, len(s.Tokens), s.Text))
				}
				return segs
			}
			start := time.Now()
			first := transcribe()
			elapsed := time.Since(start)
			if len(first) == 0 {
				t.Fatal("no segments")
			}
			if len(first) > 10 {
				t.Errorf("%d segments for 11 s of audio, want a few", len(first))
			}
			if size == testmodel.Mini {
				if second := transcribe(); !equal(first, second) {
					t.Errorf("second transcription differs:\n%q\n%q", first, second)
				}
			}
			t.Logf("%v: bindings on jfk.wav, 2 threads: %v, %d segments", size, elapsed.Round(time.Millisecond), len(first))
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
