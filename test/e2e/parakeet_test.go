package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/wav"
)

// The Parakeet TDT engine's share of the world: the generated
// parakeet-mini model and whisper.cpp's own parakeet-cli, made once for
// the tests that need them.
var pk struct {
	once  sync.Once
	model string // parakeet-mini
	cli   string // parakeet-cli, from $YAZ_PARAKEET_CLI (make test sets it)
	err   error
}

func parakeet(t testing.TB) (model, cli string) {
	t.Helper()
	pk.once.Do(func() {
		pk.model = filepath.Join(world.models, "ggml-parakeet-mini.bin")
		if pk.err = testmodel.WriteFile(pk.model, testmodel.ParakeetMini, 1); pk.err != nil {
			return
		}
		pk.cli = os.Getenv("YAZ_PARAKEET_CLI")
		if pk.cli == "" {
			pk.err = os.ErrNotExist
			return
		}
		_, pk.err = os.Stat(pk.cli)
	})
	if pk.err != nil {
		t.Fatalf("Parakeet model or parakeet-cli ($YAZ_PARAKEET_CLI=%q; run the tests through make test): %v", pk.cli, pk.err)
	}
	return pk.model, pk.cli
}

// TestMatchesParakeetCLI is whisper.cpp's own parakeet-cli as an oracle:
// with the same threads, yaz-decode prints exactly the text parakeet-cli
// prints for jfk.wav with the generated random-weight Parakeet model, in
// text and in JSON. Any scaling, framing or parameter difference changes
// a random model's words at once.
func TestMatchesParakeetCLI(t *testing.T) {
	model, cli := parakeet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, cli, "-m", model, "-t", "2", "-np", world.jfk)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("parakeet-cli: %v\n%s", err, tail(errb.String(), 10))
	}
	want := strings.TrimSpace(out.String())
	if len(strings.Fields(want)) < 3 {
		t.Fatalf("parakeet-cli printed %q: too little for the oracle to prove anything", want)
	}
	stdout, stderr, code := command(t, ctx, nil, "yaz-decode", "-m", model, "-t", "2", "--no-vad-gate", world.jfk)
	if code != 0 {
		t.Fatalf("yaz-decode: exit %d\n%s", code, tail(stderr, 10))
	}
	if got := strings.TrimSpace(stdout); got != want {
		t.Errorf("yaz-decode printed\n%q\nparakeet-cli printed\n%q", got, want)
	}
	stdout, stderr, code = command(t, ctx, nil, "yaz-decode", "-m", model, "-t", "2", "--no-vad-gate", "-o", "json", world.jfk)
	if code != 0 {
		t.Fatalf("yaz-decode -o json: exit %d\n%s", code, tail(stderr, 10))
	}
	var doc jsonDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Text != want {
		t.Errorf("yaz-decode -o json text\n%q\nparakeet-cli printed\n%q", doc.Text, want)
	}
	for _, s := range doc.Segments {
		if s.StartMs < 0 || s.EndMs > 11000 || s.EndMs < s.StartMs {
			t.Errorf("segment %+v outside jfk.wav's 11 s", s)
		}
	}
}

// TestParakeetDeterministic: with a Parakeet model, the note (jfk.wav)
// decodes to the same segments alone, after a long file (66 s: two chunks)
// and after a short one, in files mode and in the resident --serve
// decoder, and both modes agree.
func TestParakeetDeterministic(t *testing.T) {
	model, _ := parakeet(t)
	note, long, short := determinismFiles(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var want []jsonSegment
	for _, h := range histories {
		files := append(h.before(long, short), note)
		args := append([]string{"-m", model, "-t", "2", "-o", "json"}, files...)
		stdout, stderr, code := command(t, ctx, nil, "yaz-decode", args...)
		if code != 0 {
			t.Fatalf("yaz-decode %v: exit %d\n%s", files, code, tail(stderr, 10))
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		var doc jsonDoc
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &doc); err != nil || doc.File != note || len(lines) != len(files) {
			t.Fatalf("%d documents for %d files, the last %q: %v", len(lines), len(files), lines[len(lines)-1], err)
		}
		if want == nil {
			want = doc.Segments
			if len(want) == 0 {
				t.Fatal("no segments for the note: the comparison proves nothing")
			}
			continue
		}
		if diff := cmp.Diff(want, doc.Segments); diff != "" {
			t.Errorf("the note decoded %s differs from the note decoded alone (-alone +now):\n%s", h.name, diff)
		}
	}

	read := func(path string) []int16 {
		f32, _, err := wav.ReadFile16k(path, 120*pcm.SampleRate)
		if err != nil {
			t.Fatal(err)
		}
		return pcm.FromFloat32(nil, f32)
	}
	order := []string{note, long, note, short, note}
	var in bytes.Buffer
	w := frame.NewWriter(&in)
	for _, p := range order {
		w.Audio(read(p))
		w.End()
	}
	cmd := exec.CommandContext(ctx, bin("yaz-decode"), "--serve", "-m", model, "-t", "2")
	cmd.Stdin = &in
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("yaz-decode --serve: %v\n%s", err, tail(errb.String(), 10))
	}
	sc := bufio.NewScanner(&out)
	i := 0
	for ; sc.Scan(); i++ {
		var r frame.Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Error != "" {
			t.Fatalf("result %q: %v", sc.Text(), err)
		}
		if order[i] != note {
			continue
		}
		var got []jsonSegment
		for _, s := range r.Segments {
			got = append(got, jsonSegment{StartMs: s.StartMs, EndMs: s.EndMs, Text: s.Text})
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("--serve utterance %d (the note) differs from files mode (-files +serve):\n%s", i+1, diff)
		}
	}
	if i != len(order) {
		t.Errorf("%d results for %d utterances", i, len(order))
	}
}

// TestParakeetBadInput: the real yaz-decode with broken and misnamed model
// files and with settings a Parakeet model does not have. A Parakeet file
// cut short and one with a zero n_audio_ctx end with one clear message,
// never a crash; a whisper model named like a Parakeet one and the reverse
// are decoded by the engine their content says; --language de is refused
// and --prompt warned about, as documented.
func TestParakeetBadInput(t *testing.T) {
	model, _ := parakeet(t)
	dir := t.TempDir()
	b, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "ggml-parakeet-tdt-0.6b-v3-f16.bin")
	os.WriteFile(cut, b[:len(b)/2], 0o644)
	zero := filepath.Join(dir, "ggml-parakeet-tdt-0.6b-v3-q8_0.bin")
	z := bytes.Clone(b)
	binary.LittleEndian.PutUint32(z[8:], 0)
	os.WriteFile(zero, z, 0o644)
	whisperNamedParakeet := filepath.Join(dir, "ggml-parakeet-tdt-0.6b-v3-q4_0.bin")
	mini, err := os.ReadFile(world.mini)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(whisperNamedParakeet, mini, 0o644)
	parakeetNamedWhisper := filepath.Join(dir, "ggml-base.en.bin")
	os.WriteFile(parakeetNamedWhisper, b, 0o644)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name string
		args []string
		code int
		says []string // on stderr
	}{
		{"cut short", []string{"-m", cut}, 1, []string{"yaz-decode: error: " + cut, "truncated", "fetch it again with yaz-fetch-model parakeet-tdt-0.6b-v3-f16"}},
		{"zero n_audio_ctx", []string{"-m", zero}, 1, []string{"yaz-decode: error: " + zero, "n_audio_ctx 0", "cannot allocate a state"}},
		{"whisper named Parakeet", []string{"-m", whisperNamedParakeet, "--log-level", "debug"}, 0, []string{"engine=whisper"}},
		{"Parakeet named whisper", []string{"-m", parakeetNamedWhisper, "--log-level", "debug"}, 0, []string{"engine=parakeet"}},
		{"language de", []string{"-m", model, "-l", "de"}, 1, []string{`language "de": a Parakeet model has no language selection`}},
		{"prompt", []string{"-m", model, "--prompt", "Kubernetes"}, 0, []string{"level=WARN", "--prompt is not supported with a Parakeet model: ignored"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"-t", "2"}, tc.args...), world.jfk)
			stdout, stderr, code := command(t, ctx, nil, "yaz-decode", args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, tail(stderr, 10))
			}
			for _, s := range tc.says {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr does not say %q:\n%s", s, tail(stderr, 10))
				}
			}
			if tc.code == 0 && strings.TrimSpace(stdout) == "" {
				t.Error("no transcript")
			}
			if tc.code != 0 && stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			for _, crash := range []string{"GGML_ASSERT", "SIGSEGV", "SIGABRT", "panic:"} {
				if strings.Contains(stderr, crash) {
					t.Errorf("stderr shows a crash (%s):\n%s", crash, tail(stderr, 10))
				}
			}
		})
	}
}
