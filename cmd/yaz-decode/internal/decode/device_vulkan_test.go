//go:build yaz_vulkan

package decode

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/decodetest"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/devices"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
)

// These run on Mesa's lavapipe, the software Vulkan device (see
// cmd/yaz-decode/internal/asr/vulkan_test.go).

// TestListDevicesVulkan: --list-devices shows lavapipe as a software
// Vulkan device and says auto keeps the CPU.
func TestListDevicesVulkan(t *testing.T) {
	stdout, stderr, code := runMain(nil, "--list-devices")
	if code != 0 {
		t.Fatalf("--list-devices: exit %d: %s", code, stderr)
	}
	var lp string
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) > 6 && f[1] == "Vulkan" && f[3] == "software" && strings.Contains(l, "llvmpipe") {
			lp = l
		}
	}
	if lp == "" || !strings.Contains(stdout, "\nauto: CPU\n") {
		t.Fatalf("--list-devices:\n%s\nwant lavapipe as a software Vulkan device and auto: CPU (is mesa-vulkan-drivers installed?)", stdout)
	}
}

// TestGPUMeansHardware: --device gpu takes a hardware GPU, never a
// software device (lavapipe, slower than the CPU): with none, as here, it
// decodes on the CPU with a WARN line that says so, in devices' list (a
// "warning:" line; the JSON's warning) and on serve's readiness line
// (yazsesd status shows it). gpu:N of lavapipe takes it, with a warning
// that it is slower than the CPU.
func TestGPUMeansHardware(t *testing.T) {
	dir := t.TempDir()
	model := decodetest.MiniModel(t, dir)
	wav := decodetest.WriteWAV(t, filepath.Join(dir, "a.wav"), decodetest.Speech(2*time.Second))
	const noGPU = "--device gpu: no hardware GPU found: decoding on the CPU"

	stdout, stderr, code := runMain(nil, "devices", "--device", "gpu")
	if code != 0 || !strings.Contains(stdout, "\ngpu: CPU\n") || !strings.Contains(stdout, "\nwarning: "+noGPU) {
		t.Errorf("devices --device gpu: exit %d, stdout %q, stderr %q; want gpu: CPU and a warning line", code, stdout, stderr)
	}
	stdout, _, code = runMain(nil, "devices", "-f", "json", "--device", "gpu")
	var list devices.List
	if code != 0 || json.Unmarshal([]byte(stdout), &list) != nil || list.Chosen == nil || list.Chosen.Kind != "cpu" || !strings.Contains(list.Warning, noGPU) {
		t.Errorf("devices -f json --device gpu: exit %d, %q; want the CPU chosen and the warning", code, stdout)
	}

	stdout, stderr, code = runMain(nil, "-m", model, "-t", "2", "--device", "gpu", wav)
	if code != 0 || strings.TrimSpace(stdout) == "" || !strings.Contains(stderr, "level=WARN") || !strings.Contains(stderr, noGPU) ||
		strings.Contains(stderr, "decoding on Vulkan") {
		t.Errorf("--device gpu: exit %d, stdout %q, stderr %q; want a transcript decoded on the CPU and a WARN line", code, stdout, stderr)
	}

	lp := decodetest.LavapipeSpec(t)
	stdout, stderr, code = runMain(nil, "-m", model, "-t", "2", "--device", lp, wav)
	if code != 0 || strings.TrimSpace(stdout) == "" || !strings.Contains(stderr, "decoding on Vulkan") ||
		!strings.Contains(stderr, "level=WARN") || !strings.Contains(stderr, "is a software device: it runs on the CPU and decodes slower than the CPU itself") {
		t.Errorf("--device %s: exit %d, stdout %q, stderr %q; want lavapipe and a warning that it is slower than the CPU", lp, code, stdout, stderr)
	}

	for _, tc := range []struct{ spec, kind, warn string }{{"gpu", "cpu", noGPU}, {lp, "software", "slower than the CPU"}} {
		ready := serveReady(t, "-m", model, "-t", "2", "--device", tc.spec)
		if ready.Device.Kind != tc.kind || !strings.Contains(ready.Warning, tc.warn) {
			t.Errorf("serve --device %s: readiness line %+v; want the %s device and a warning %q", tc.spec, ready, tc.kind, tc.warn)
		}
	}
}

// TestDecodeOnVulkan: --device gpu:N of lavapipe decodes there in every
// mode, with both engines, says so on one INFO line, and the same file
// twice gives the same text; auto keeps the CPU (no such line).
func TestDecodeOnVulkan(t *testing.T) {
	dir := t.TempDir()
	wav := decodetest.WriteWAV(t, filepath.Join(dir, "a.wav"), decodetest.Speech(3*time.Second))
	var frames bytes.Buffer
	w := frame.NewWriter(&frames)
	w.Audio(decodetest.Speech(3 * time.Second))
	w.End()
	lp := decodetest.LavapipeSpec(t)
	for _, model := range []string{decodetest.MiniModel(t, dir), parakeetModel(t, dir, "ggml-parakeet-mini.bin")} {
		t.Run(filepath.Base(model), func(t *testing.T) {
			for _, mode := range []struct {
				name  string
				args  []string
				stdin []byte
			}{
				{"files", []string{wav}, nil},
				{"stream", []string{"--json"}, pcm.Encode(nil, decodetest.Speech(3*time.Second))},
				{"serve", []string{"--serve"}, frames.Bytes()},
			} {
				args := append([]string{"-m", model, "-t", "2", "--device", lp}, mode.args...)
				first, stderr, code := runMain(mode.stdin, args...)
				if code != 0 || strings.TrimSpace(first) == "" {
					t.Fatalf("%s --device %s: exit %d, stdout %q: %s", mode.name, lp, code, first, stderr)
				}
				if !strings.Contains(stderr, "level=INFO") || !strings.Contains(stderr, "decoding on Vulkan") || !strings.Contains(stderr, "kind=software") {
					t.Errorf("%s --device %s: stderr %q names no Vulkan device", mode.name, lp, stderr)
				}
				again, _, code := runMain(mode.stdin, args...)
				if code != 0 || withoutTime(again) != withoutTime(first) {
					t.Errorf("%s --device %s twice: %q then %q (exit %d)", mode.name, lp, first, again, code)
				}
			}
			_, stderr, code := runMain(nil, "-m", model, "-t", "2", wav)
			if code != 0 || strings.Contains(stderr, "decoding on") {
				t.Errorf("--device auto: exit %d, stderr %q: want the CPU, said at debug level only", code, stderr)
			}
		})
	}
}

// withoutTime drops the decode time from a --serve result line.
func withoutTime(out string) string {
	return decodeMs.ReplaceAllString(out, "")
}

var decodeMs = regexp.MustCompile(`,"decode_ms":[0-9]+`)

// TestNoVulkanDriver: with VK_ICD_FILENAMES pointing nowhere, auto
// decodes on the CPU, and so does --device gpu, with one WARN line that
// says so (a fresh process: ggml finds its devices once).
func TestNoVulkanDriver(t *testing.T) {
	if os.Getenv("YAZ_DECODE_VK_CHILD") == "1" {
		os.Exit(Main(t.Context(), strings.Fields(os.Getenv("YAZ_DECODE_VK_ARGS")), os.Stdin, os.Stdout, os.Stderr))
	}
	dir := t.TempDir()
	model := decodetest.MiniModel(t, dir)
	wav := decodetest.WriteWAV(t, filepath.Join(dir, "a.wav"), decodetest.Speech(2*time.Second))
	run := func(args string) (string, string, int) {
		cmd := exec.CommandContext(testwait.Context(t), os.Args[0], "-test.run=^TestNoVulkanDriver$", "-test.count=1")
		cmd.Env = append(os.Environ(), "YAZ_DECODE_VK_CHILD=1", "VK_ICD_FILENAMES=/nonexistent", "YAZ_DECODE_VK_ARGS="+args)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	if out, stderr, code := run("-m " + model + " -t 2 " + wav); code != 0 || strings.TrimSpace(out) == "" {
		t.Errorf("auto with no Vulkan driver: exit %d, stdout %q: %s", code, out, stderr)
	}
	out, stderr, code := run("-m " + model + " -t 2 --device gpu " + wav)
	warned := 0
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, "no hardware GPU found: decoding on the CPU") {
			warned++
		}
	}
	if code != 0 || strings.TrimSpace(out) == "" || warned != 1 {
		t.Errorf("--device gpu with no Vulkan driver: exit %d, stdout %q, stderr %q; want a transcript and one WARN line saying it decodes on the CPU", code, out, stderr)
	}
}
