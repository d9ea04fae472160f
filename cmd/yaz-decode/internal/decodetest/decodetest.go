// Package decodetest is what the tests of yaz-decode's packages share:
// speech-like and silent audio, jfk.wav, WAV files, the generated mini
// model, lavapipe's --device, and Recognizer, the unit tests' stand-in
// for whisper. It is imported by tests only.
package decodetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/asr"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/transcript"
	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/wav"
)

// Recognizer names each utterance by its length, so tests can tell which
// audio reached it; it is the unit tests' stand-in for whisper.
type Recognizer struct {
	mu      sync.Mutex
	Calls   []int    // the samples of each call, in order
	Prompts []string // the prompt of each call
	Fail    bool     // every call fails (with an error text that must not leak)
}

// Transcribe answers one segment whose text is the audio's length.
func (f *Recognizer) Transcribe(ctx context.Context, s []float32, opt asr.Options) (asr.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Calls = append(f.Calls, len(s))
	f.Prompts = append(f.Prompts, opt.Prompt)
	if f.Fail {
		return asr.Result{}, errors.New("whisper exploded: SECRET-MARKER")
	}
	d := pcm.Duration(len(s))
	return asr.Result{Segments: []transcript.Segment{{Start: 0, End: d, Text: " " + d.Round(100*time.Millisecond).String()}}}, nil
}

// Speech is a loud, speech-like burst: syllables of a 200 Hz harmonic tone,
// 180 ms each with 70 ms gaps (a steady tone is a hum, not speech).
func Speech(d time.Duration) []int16 {
	n := pcm.Samples(d)
	out := make([]int16, n)
	for i := range out {
		t := float64(i) / pcm.SampleRate
		phase := math.Mod(t, 0.25)
		if phase > 0.18 {
			continue
		}
		env := math.Sin(math.Pi * phase / 0.18)
		v := env * 0.25 * (math.Sin(2*math.Pi*200*t) + 0.5*math.Sin(2*math.Pi*400*t) + 0.3*math.Sin(2*math.Pi*800*t))
		out[i] = int16(v * 32767 / 1.8)
	}
	return out
}

// Silence is digital silence.
func Silence(d time.Duration) []int16 { return make([]int16, pcm.Samples(d)) }

// WriteWAV writes samples as a 16 kHz mono WAV file.
func WriteWAV(t *testing.T, path string, samples []int16) string {
	t.Helper()
	data := append(pcm.WAVHeader(int64(2*len(samples))), pcm.Encode(nil, samples)...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// JFK is jfk.wav from the whisper.cpp Go bindings module, as s16.
func JFK(t testing.TB) []int16 {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/ggerganov/whisper.cpp/bindings/go").Output()
	if err != nil {
		t.Fatalf("go list the whisper.cpp bindings: %v", err)
	}
	f, _, err := wav.ReadFile16k(filepath.Join(strings.TrimSpace(string(out)), "samples", "jfk.wav"), 60*pcm.SampleRate)
	if err != nil {
		t.Fatal(err)
	}
	return pcm.FromFloat32(nil, f)
}

// MiniModel writes the generated mini model (English-only) into dir.
func MiniModel(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "ggml-mini.bin")
	if err := testmodel.WriteFile(p, testmodel.Mini, 1); err != nil {
		t.Fatal(err)
	}
	return p
}

// LavapipeSpec is the --device that names lavapipe, Mesa's software
// Vulkan device: gpu:N, its index (the yaz_vulkan tests).
func LavapipeSpec(t *testing.T) string {
	t.Helper()
	for _, d := range asr.Devices() {
		if d.Backend == "Vulkan" && d.Kind == asr.KindSoftware {
			return fmt.Sprintf("gpu:%d", d.Index)
		}
	}
	t.Fatalf("no software Vulkan device in %+v (is mesa-vulkan-drivers installed?)", asr.Devices())
	return ""
}
