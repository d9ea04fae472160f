package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
)

// TestConfigCheckDevice: `yazsesd config check` asks the real yaz-decode
// whether decode.device exists (in every build: a gpu:N past the devices
// ggml finds is the key's error with its line; with Vulkan, see
// TestConfigCheckVulkanDevice).
func TestConfigCheckDevice(t *testing.T) {
	t.Parallel()
	ctx := testwait.Context(t)
	path := configWithDevice(t, "gpu:99")
	want := `config.toml:3: decode.device: "gpu:99": no device 99: ggml finds `
	if out, stderr, code := command(t, ctx, nil, "yazsesd", "config", "check", path); code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("config check with decode.device gpu:99: exit %d, stdout %q, stderr %q; want 1 and %q", code, out, stderr, want)
	}
}

// configWithDevice writes a config file with the mini model and
// decode.device = device on line 3.
func configWithDevice(t *testing.T, device string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte("[decode]\nmodel = "+q(world.mini)+"\ndevice = "+q(device)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStatusSaysWhyCUDAIsNotThere: a CUDA module the daemon's decoder
// cannot use (here YAZ_CUDA_MODULE names none; on a user's machine, the
// module with no NVIDIA driver) leaves the decoder on the CPU, and yazsesd
// status says why beside the device, as the decoder said on its readiness
// line: the user who built CUDA sees why it is not used where they look.
func TestStatusSaysWhyCUDAIsNotThere(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "yaz-ggml-cuda.so")
	d := startDaemon(t, baseConfig(), "YAZ_CUDA_MODULE="+missing, "VK_ICD_FILENAMES=/nonexistent")
	d.WaitRunning("decode") // ready: it has named its device
	note := "CUDA: YAZ_CUDA_MODULE=" + missing + ": no such file"
	if dd := d.Status().DecodeDevice; dd.Device == nil || dd.Device.Name != "CPU" || !slices.Equal(dd.Notes, []string{note}) {
		t.Errorf("status decode_device = %+v (device %+v), want the CPU and the note %q", dd, dd.Device, note)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	text, err := execIn(ctx, d, "status").Output()
	if want := "auto → CPU; not available: " + note; err != nil || !strings.Contains(string(text), want) {
		t.Errorf("yazsesd status: %v; want %q in\n%s", err, want, text)
	}
}
