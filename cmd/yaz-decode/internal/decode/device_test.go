package decode

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDeviceErrors: a --device that is no device spelling is a usage error
// (exit 2); gpu:N past ggml's devices is one clear line and exit 1, in
// every build, before any audio is read.
func TestDeviceErrors(t *testing.T) {
	dir := t.TempDir()
	model := miniModel(t, dir)
	wav := writeWAV(t, filepath.Join(dir, "a.wav"), speech(time.Second))
	for _, tc := range []struct {
		device string
		code   int
		want   string
	}{
		{"gpu:99", 1, "gpu:99"},
		{"vulkan", 2, "want auto, cpu, gpu or gpu:N"},
	} {
		stdout, stderr, code := runMain(nil, "-m", model, "-t", "2", "--device", tc.device, wav)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != tc.code || stdout != "" || !strings.Contains(stderr, tc.want) || (tc.code == 1 && len(lines) != 1) {
			t.Errorf("--device %s: exit %d, stdout %q, stderr %q; want exit %d and one line naming %q", tc.device, code, stdout, stderr, tc.code, tc.want)
		}
	}
}

// TestListDevicesCPU: --list-devices shows the CPU in every build, and the
// device auto takes.
func TestListDevicesCPU(t *testing.T) {
	stdout, stderr, code := runMain(nil, "--list-devices")
	if code != 0 || !strings.HasPrefix(stdout, "INDEX") || !strings.Contains(stdout, " cpu ") || !strings.Contains(stdout, "\nauto: ") {
		t.Fatalf("--list-devices: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
