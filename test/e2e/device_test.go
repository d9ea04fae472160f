package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
