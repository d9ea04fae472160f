package asr

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/internal/testwait"
)

// ggml finds its devices once per process, and the GPU backends are opened
// with them (the Vulkan loader, the CUDA module), so each case of the
// device tests that changes what a process finds is a fresh process: this
// test binary again (or a copy of it), running TestDevicesChild in the
// environment the case gives it.

// deviceReport is what TestDevicesChild found.
type deviceReport struct {
	Devices    []string // ggml's names: CPU, Vulkan0, CUDA0
	Notes      []string // Notes(): a GPU backend installed but not available
	Auto       string   // the device auto takes
	GPUMissing bool     // gpu found no hardware GPU: it decodes on the CPU
	GPUWarning string   // what gpu then says
	Lavapipe   bool     // Mesa's lavapipe driver is mapped into the process
}

// deviceChild runs TestDevicesChild as exe (os.Args[0], or a copy of this
// test binary) with env added, and returns its report.
func deviceChild(t *testing.T, exe string, env ...string) deviceReport {
	t.Helper()
	cmd := exec.CommandContext(testwait.Context(t), exe, "-test.run=^TestDevicesChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), append([]string{"YAZ_ASR_CHILD=1"}, env...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the child (%s): %v\nstdout:\n%s\nstderr:\n%s", strings.Join(env, " "), err, out, stderr.String())
	}
	i := bytes.IndexByte(out, '{')
	var r deviceReport
	if i < 0 || json.NewDecoder(bytes.NewReader(out[i:])).Decode(&r) != nil {
		t.Fatalf("the child printed no report: %s", out)
	}
	return r
}

// TestDevicesChild is the device tests' child process: it lists the
// devices (after NoGPU when YAZ_ASR_NOGPU=1, as --device cpu and
// --vad-stream do), chooses auto and gpu, decodes on the device auto took,
// and prints what it found.
func TestDevicesChild(t *testing.T) {
	if os.Getenv("YAZ_ASR_CHILD") != "1" {
		return // run by deviceChild only
	}
	if os.Getenv("YAZ_ASR_NOGPU") == "1" {
		NoGPU()
	}
	if g, ok := os.LookupEnv("YAZ_ASR_GPU_NODES"); ok {
		gpuNodes = []string{g}
	}
	var r deviceReport
	var auto Device
	var err error
	if os.Getenv("YAZ_ASR_AUTO_FIRST") == "1" {
		// As a decode under --device auto: auto chooses before anything
		// has listed the devices.
		if auto, err = SelectDevice("auto"); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range Devices() {
		r.Devices = append(r.Devices, d.Name)
	}
	r.Notes = Notes()
	if auto, err = SelectDevice("auto"); err != nil {
		t.Fatal(err)
	}
	r.Auto = auto.Name
	gpu, _, warn, err := SelectDeviceFor("gpu", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !gpu.GPU() {
		r.GPUMissing, r.GPUWarning = true, warn
	}
	m, err := LoadOn(writeModel(t, testmodel.Mini), auto, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Transcribe(context.Background(), speechLike(2), Options{Threads: 2}); err != nil {
		t.Fatal(err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	r.Lavapipe = bytes.Contains(maps, []byte("libvulkan_lvp"))
	json.NewEncoder(os.Stdout).Encode(r)
}

// writeModel writes a generated whisper model of size into a temporary
// folder and returns its path.
func writeModel(t *testing.T, size testmodel.Size) string {
	t.Helper()
	path := t.TempDir() + "/model.bin"
	if err := testmodel.WriteFile(path, size, 1); err != nil {
		t.Fatal(err)
	}
	return path
}
