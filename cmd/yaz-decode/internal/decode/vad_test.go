package decode

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/decodetest"
	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/internal/testvad"
	"github.com/yazses/yazses/lib/pcm"
)

// sileroModel is the real Silero VAD model, from the tests' model cache
// (internal/testvad: make setup puts it there).
func sileroModel(t testing.TB) string {
	t.Helper()
	return testvad.Path(t)
}

// records are the JSON log records of stderr.
func records(t *testing.T, stderr string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("stderr line %q is not a JSON record: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// TestVADSelection: --vad auto takes Silero when its model file is there
// and the energy detector otherwise, saying which in one INFO record (for
// energy, with the command that fetches the model); --vad energy never
// loads the model; YAZ_VAD and YAZ_VAD_MODEL say the same as the flags.
func TestVADSelection(t *testing.T) {
	dir := t.TempDir()
	model := decodetest.MiniModel(t, dir)
	wav := decodetest.WriteWAV(t, filepath.Join(dir, "a.wav"), decodetest.Speech(2*time.Second))
	real := sileroModel(t)
	missing := filepath.Join(dir, "models", "ggml-silero-v5.1.2.bin")
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		vad     string
		saysAll []string
	}{
		{"auto without model", []string{"--vad-model", missing}, nil, "energy", []string{"voice detector: energy", "yaz-fetch-model silero-v5.1.2"}},
		{"auto with model", []string{"--vad-model", real}, nil, "silero", []string{"voice detector: Silero VAD"}},
		{"energy", []string{"--vad", "energy", "--vad-model", real}, nil, "energy", []string{"--vad energy"}},
		{"silero", []string{"--vad", "silero", "--vad-model", real}, nil, "silero", []string{"Silero"}},
		{"env", nil, map[string]string{"YAZ_VAD": "silero", "YAZ_VAD_MODEL": real}, "silero", []string{"Silero"}},
	}
	for _, tt := range tests {
		for _, mode := range []string{"files", "stream"} {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				for k, v := range tt.env {
					t.Setenv(k, v)
				}
				args := append([]string{"-m", model, "-t", "2", "--log-format", "json"}, tt.args...)
				var stdin []byte
				if mode == "files" {
					args = append(args, wav)
				} else {
					stdin = pcmBytes(decodetest.Speech(2 * time.Second))
				}
				_, stderr, code := runMain(stdin, args...)
				if code != 0 {
					t.Fatalf("exit %d\n%s", code, stderr)
				}
				var says []map[string]any
				for _, r := range records(t, stderr) {
					if strings.HasPrefix(r["msg"].(string), "voice detector") {
						says = append(says, r)
					}
				}
				if len(says) != 1 {
					t.Fatalf("%d records say which detector runs, want 1:\n%s", len(says), stderr)
				}
				if says[0]["level"] != "INFO" || says[0]["vad"] != tt.vad {
					t.Errorf("record %v, want level INFO and vad %s", says[0], tt.vad)
				}
				for _, w := range tt.saysAll {
					if !strings.Contains(says[0]["msg"].(string), w) {
						t.Errorf("message %q does not say %q", says[0]["msg"], w)
					}
				}
			})
		}
	}
}

// TestVADModelUnusable: a VAD model that is missing (with --vad silero), a
// folder, cut short, random bytes or a whisper model ends yaz-decode before
// it decodes anything: one line naming the file at a terminal (exit 1),
// and under a supervisor one ERROR record with the cause vad_model_missing
// or vad_model_invalid and exit 125. With --vad auto a file that is there
// but unusable is the same error, not a silent fallback.
func TestVADModelUnusable(t *testing.T) {
	dir := t.TempDir()
	model := decodetest.MiniModel(t, dir)
	real, err := os.ReadFile(sileroModel(t))
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "none", "ggml-silero-v5.1.2.bin")
	folder := filepath.Join(dir, "folder.bin")
	os.Mkdir(folder, 0o755)
	cut := filepath.Join(dir, "cut.bin")
	os.WriteFile(cut, real[:len(real)*2/3], 0o644)
	random := filepath.Join(dir, "random.bin")
	junk := make([]byte, len(real))
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range junk {
		junk[i] = byte(rng.Uint32())
	}
	os.WriteFile(random, junk, 0o644)
	// A random file that starts like a VAD model.
	lookalike := filepath.Join(dir, "lookalike.bin")
	os.WriteFile(lookalike, append(append([]byte(nil), real[:64]...), junk[64:]...), 0o644)
	whisper := filepath.Join(dir, "ggml-tiny.bin")
	if err := testmodel.WriteFile(whisper, testmodel.Mini, 2); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, vad, cause string
		says                   []string
	}{
		{"missing", missing, "silero", "vad_model_missing", []string{"VAD model not found: " + missing, "yaz-fetch-model silero-v5.1.2"}},
		{"folder", folder, "silero", "vad_model_invalid", []string{folder, "not a regular file"}},
		{"folder/auto", folder, "auto", "vad_model_invalid", []string{folder}},
		{"truncated", cut, "silero", "vad_model_invalid", []string{cut, "truncated", "yaz-fetch-model silero-v5.1.2"}},
		{"random", random, "silero", "vad_model_invalid", []string{random, "not a ggml model file"}},
		{"lookalike", lookalike, "auto", "vad_model_invalid", []string{lookalike}},
		{"whisper", whisper, "silero", "vad_model_invalid", []string{whisper, "is a whisper model", "not a Silero VAD model"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(context.Background(), []string{"--serve", "--log-format", "json", "-m", model, "--vad", tt.vad, "--vad-model", tt.path},
				strings.NewReader(""), &out, &errb)
			if code != 125 {
				t.Errorf("--serve: exit %d, want 125 (do not restart)", code)
			}
			recs := records(t, errb.String())
			if len(recs) != 1 {
				t.Fatalf("stderr has %d records, want one:\n%s", len(recs), errb.String())
			}
			msg, _ := recs[0]["msg"].(string)
			if recs[0]["level"] != "ERROR" || recs[0]["cause"] != tt.cause {
				t.Errorf("record %v, want level ERROR and cause %s", recs[0], tt.cause)
			}
			for _, w := range tt.says {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not say %q", msg, w)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("message %q has more than one line", msg)
			}
			out.Reset()
			errb.Reset()
			code = Main(context.Background(), []string{"-m", model, "--vad", tt.vad, "--vad-model", tt.path},
				bytes.NewReader(pcmBytes(decodetest.Speech(time.Second))), &out, &errb)
			if got := strings.TrimSpace(errb.String()); code != 1 || got != "yaz-decode: error: "+msg {
				t.Errorf("stream mode: exit %d, stderr %q; want 1 and %q", code, got, "yaz-decode: error: "+msg)
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q, want nothing", out.String())
			}
		})
	}
}

func pcmBytes(s []int16) []byte { return pcm.Encode(nil, s) }
