package localdecode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/internal/testvad"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/filedecode"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/wav"
)

// realDecoder builds the real yaz-decode and writes the generated mini
// model into dir; it returns them and the path of jfk.wav.
func realDecoder(t *testing.T, dir string) (bin, model, jfk string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..", "..")
	bin = filepath.Join(dir, "yaz-decode")
	// A guard against a build that never ends, not a speed requirement:
	// yaz-decode links whisper.cpp.
	buildCtx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	build := exec.CommandContext(buildCtx, "go", "build", "-o", bin, "./cmd/yaz-decode")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/yaz-decode: %v\n%s", err, out)
	}
	model = filepath.Join(dir, "ggml-mini.bin")
	if err := testmodel.WriteFile(model, testmodel.Mini, 1); err != nil {
		t.Fatal(err)
	}
	mod, err := exec.CommandContext(testwait.Context(t), "go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	jfk = filepath.Join(strings.TrimSpace(string(mod)),
		"github.com/ggerganov/whisper.cpp/bindings/go@v0.0.0-20260227185758-9453b4b9be9b/samples/jfk.wav")
	if _, err := os.Stat(jfk); err != nil {
		t.Fatal(err)
	}
	return bin, model, jfk
}

// flags are the real decoder's flags for model, on 2 threads, with the
// voice detector v.
func flags(model string, v config.VAD) []string {
	d := config.Default().Decode
	d.Model, d.Threads = model, 2
	return filedecode.Flags(d, v)
}

// TestRealDecoderLengths runs the real yaz-decode serve over file lengths
// from 1 to 100 s (those past 30 s in several pieces): each gives a
// transcript of the whole file, and progress rises to its length.
func TestRealDecoderLengths(t *testing.T) {
	dir := t.TempDir()
	bin, model, jfk := realDecoder(t, dir)
	f32, _, err := wav.ReadFile16k(jfk, 60*pcm.SampleRate)
	if err != nil {
		t.Fatal(err)
	}
	one := pcm.FromFloat32(nil, f32)
	for _, secs := range []int{1, 29, 31, 45, 66, 100} {
		t.Run(fmt.Sprintf("%ds", secs), func(t *testing.T) {
			n := secs * pcm.SampleRate
			samples := make([]int16, 0, n)
			for len(samples) < n {
				samples = append(samples, one[:min(len(one), n-len(samples))]...)
			}
			path := filepath.Join(dir, fmt.Sprintf("%ds.wav", secs))
			data := append(pcm.WAVHeader(int64(2*len(samples))), pcm.Encode(nil, samples)...)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ctx := testwait.Context(t)
			var got []int64
			res, err := Run(ctx, Options{Command: []string{bin, "serve"}, Flags: flags(model, config.VAD{Engine: "energy"}), Model: model}, f,
				func(ms int64) { got = append(got, ms) }, nil)
			if err != nil {
				t.Fatalf("Run on %d s: %v", secs, err)
			}
			if res.AudioMs != int64(secs)*1000 {
				t.Errorf("audio_ms = %d, want %d", res.AudioMs, secs*1000)
			}
			if want := (secs + 29) / 30; res.Pieces < want || len(got) != res.Pieces {
				t.Errorf("%d pieces, %d progress reports, want at least %d pieces and one report each", res.Pieces, len(got), want)
			}
			for i, p := range got {
				if p <= 0 || p > int64(secs)*1000 || i > 0 && p <= got[i-1] {
					t.Errorf("progress %v does not rise within the file's %d ms", got, secs*1000)
					break
				}
			}
			if len(got) > 0 && got[len(got)-1] != int64(secs)*1000 {
				t.Errorf("progress ends at %d, want %d", got[len(got)-1], secs*1000)
			}
			if res.Text == "" {
				t.Errorf("no text")
			}
		})
	}
}

// TestRealDecoderVAD: the [vad] settings reach the real yaz-decode. With
// Silero and the real model, noise that starts abruptly after silence (the
// energy detector's blind spot) gives an empty transcript; a Silero model
// that is not there fails the run, which it would not if the flag were
// lost; the energy detector needs no model.
func TestRealDecoderVAD(t *testing.T) {
	dir := t.TempDir()
	bin, model, _ := realDecoder(t, dir)
	vad := testvad.Path(t)
	// 3 s of digital silence, then 7 s of loud noise.
	samples := make([]int16, 10*pcm.SampleRate)
	rng := uint32(1)
	for i := 3 * pcm.SampleRate; i < len(samples); i++ {
		rng = rng*1664525 + 1013904223
		samples[i] = int16(int32(rng>>16)-32768) / 8
	}
	path := filepath.Join(dir, "noise.wav")
	if err := os.WriteFile(path, append(pcm.WAVHeader(int64(2*len(samples))), pcm.Encode(nil, samples)...), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "none.bin")
	for _, tc := range []struct {
		name string
		vad  config.VAD
		fail bool
	}{
		{"silero", config.VAD{Engine: "silero", Model: vad, Threshold: 0.5}, false},
		{"silero without its model", config.VAD{Engine: "silero", Model: missing}, true},
		{"energy", config.VAD{Engine: "energy", Model: missing}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ctx := testwait.Context(t)
			res, err := Run(ctx, Options{Command: []string{bin, "serve"}, Flags: flags(model, tc.vad), Model: model}, f, nil, nil)
			switch {
			case tc.fail && !errors.Is(err, ErrDecodeFailed):
				t.Errorf("Run = %v, want ErrDecodeFailed", err)
			case !tc.fail && err != nil:
				t.Errorf("Run = %v", err)
			case tc.name == "silero" && (res.Text != "" || len(res.Segments) != 0 || res.AudioMs != 10000):
				t.Errorf("Silero on noise: %+v, want 10 s and no text", res)
			}
		})
	}
}

// TestRealDecoderPromptPrivate: the real yaz-decode serve gets the
// vocabulary prompt on stdin (a Prompt frame with the piece) and decodes
// jfk.wav exactly as it does with the same text on its command line (and not as it does without one), while no process shows the prompt in its
// command line or environment (read with the decoder stopped, SIGSTOP, so
// it cannot end before /proc is read).
func TestRealDecoderPromptPrivate(t *testing.T) {
	const marker = "PROMPT-MARKER-8812 Kubernetes"
	dir := t.TempDir()
	bin, model, jfk := realDecoder(t, dir)
	decode := func(opt Options, started func(int)) Result {
		t.Helper()
		f, err := os.Open(jfk)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		// Every window decoded and every segment kept: the generated
		// model then prints words, and a prompt changes them.
		opt.Command = append([]string{bin, "serve", "--no-vad-gate", "--no-speech-threshold=1"}, opt.Command...)
		opt.Model, opt.Flags = model, flags(model, config.VAD{Engine: "energy"})
		res, err := Run(testwait.Context(t), opt, f, nil, started)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return res
	}
	look := func(pid int) {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Errorf("stop the decoder: %v", err)
			return
		}
		defer syscall.Kill(pid, syscall.SIGCONT)
		if found := privateIn(marker); len(found) > 0 {
			t.Errorf("the prompt is readable in %v while the decoder (pid %d) runs", found, pid)
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err != nil || len(b) == 0 {
			t.Errorf("the decoder %d had ended before /proc was read (%v): nothing was checked", pid, err)
		}
	}
	private := decode(Options{Prompt: marker}, look)
	public := decode(Options{Command: []string{"--prompt=" + marker}}, nil)
	if private.Text != public.Text {
		t.Errorf("with the prompt on stdin: %q; with it on the command line: %q", private.Text, public.Text)
	}
	if none := decode(Options{}, nil); none.Text == private.Text {
		t.Errorf("the same text %q with the prompt and without: the prompt did not reach the decoder", none.Text)
	}
}

// TestRealDecoderCutShort: jfk.wav cut short (its header still declares
// the whole of it, as after an interrupted download) gives the real
// yaz-decode serve's transcript of the part it holds, marked truncated,
// the same text as that part in a whole file.
func TestRealDecoderCutShort(t *testing.T) {
	dir := t.TempDir()
	bin, model, jfk := realDecoder(t, dir)
	f32, _, err := wav.ReadFile16k(jfk, 60*pcm.SampleRate)
	if err != nil {
		t.Fatal(err)
	}
	all := pcm.FromFloat32(nil, f32)
	part := all[:len(all)*6/10]
	run := func(name string, declared int) Result {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, append(pcm.WAVHeader(int64(2*declared)), pcm.Encode(nil, part)...), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		res, err := Run(testwait.Context(t), Options{Command: []string{bin, "serve"}, Flags: flags(model, config.VAD{Engine: "energy"}), Model: model}, f, nil, nil)
		if err != nil {
			t.Fatalf("Run on %s: %v", name, err)
		}
		return res
	}
	whole := run("part.wav", len(part))
	cut := run("cut.wav", len(all))
	if whole.Truncated || !cut.Truncated || cut.Text != whole.Text || whole.Text == "" || cut.AudioMs != whole.AudioMs {
		t.Errorf("cut short: %q (%d ms, truncated %v); the same audio whole: %q (%d ms, truncated %v); want the same text, only the first truncated",
			cut.Text, cut.AudioMs, cut.Truncated, whole.Text, whole.AudioMs, whole.Truncated)
	}
}
