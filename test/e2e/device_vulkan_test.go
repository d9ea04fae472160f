//go:build yaz_vulkan

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/devices"
)

// lavapipe is the decode.device that names Mesa's lavapipe, the software
// Vulkan device (see cmd/yaz-decode/internal/asr/vulkan_test.go): gpu:N,
// its index in yaz-decode devices. "gpu" means a hardware GPU and never
// takes it.
func lavapipe(t *testing.T) string {
	t.Helper()
	out, stderr, code := command(t, testwait.Context(t), nil, "yaz-decode", "devices", "-f", "json")
	var list devices.List
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("yaz-decode devices -f json: exit %d, %q, %s", code, out, stderr)
	}
	for _, d := range list.Devices {
		if d.Backend == "Vulkan" && d.Kind == "software" {
			return fmt.Sprintf("gpu:%d", d.Index)
		}
	}
	t.Fatalf("no software Vulkan device in %+v (is mesa-vulkan-drivers installed?)", list.Devices)
	return ""
}

// TestDictationOnVulkanDevice: with decode.device naming the Vulkan
// device by its index (Mesa's lavapipe here) the daemon's decoder runs on
// it, says so in its log and in yazsesd status, with the warning that it
// is slower than the CPU, and a hold is typed into the focused window as
// on the CPU.
func TestDictationOnVulkanDevice(t *testing.T) {
	t.Parallel()
	lp := lavapipe(t)
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	speech := speechWAV(t, 3*time.Second)
	d := startDaemon(t, dictationConfig(speech, false).With("decode.device", q(lp)), x.DaemonEnv()...)
	c := d.Client()
	d.WaitRunning("decode")
	if dd := d.Status().DecodeDevice; dd.Setting != lp || dd.Device == nil || dd.Device.Backend != "Vulkan" || dd.Device.Kind != "software" ||
		!strings.Contains(dd.Warning, "slower than the CPU") {
		t.Errorf("status decode_device = %+v (device %+v), want %s on the Vulkan software device, with a warning", dd, dd.Device, lp)
	}
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	r := d.stopHold(c)
	if r.Outcome != "typed" || r.Chars == 0 {
		t.Fatalf("hold.stop = %+v, want typed text\n%s", r, d.LogTail(20))
	}
	onDevice := false
	for _, m := range d.LogRecords() {
		if m["child"] == "decode" && strings.HasPrefix(m["msg"].(string), "decoding on Vulkan") && m["kind"] == "software" {
			onDevice = true
		}
	}
	if !onDevice {
		t.Errorf("the decoder's log names no Vulkan device:\n%s", d.LogTail(30))
	}
	if got := rec.settled(t); strings.TrimSpace(got) == "" {
		t.Errorf("the window received nothing")
	}
}

// TestGPUWithoutHardwareGPU: decode.device = "gpu" on a machine whose only
// Vulkan device is a software one (here: lavapipe) decodes on the CPU, and
// yazsesd status says so with the warning: dictation works, and the user
// who asked for a GPU sees why it is not used.
func TestGPUWithoutHardwareGPU(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, baseConfig().With("decode.device", q("gpu")))
	d.WaitRunning("decode") // ready: it has named its device
	const warn = "--device gpu: no hardware GPU found: decoding on the CPU"
	if dd := d.Status().DecodeDevice; dd.Device == nil || dd.Device.Name != "CPU" || !strings.Contains(dd.Warning, warn) {
		t.Errorf("status decode_device = %+v (device %+v), want the CPU and the warning %q", dd, dd.Device, warn)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	text, err := execIn(ctx, d, "status").Output()
	if want := "gpu → CPU; warning: " + warn; err != nil || !strings.Contains(string(text), want) {
		t.Errorf("yazsesd status: %v; want %q in\n%s", err, want, text)
	}
}

// TestConfigCheckVulkanDevice: config check says that decode.device =
// "gpu" takes the CPU here, with the warning that there is no hardware
// GPU; "gpu:N" of lavapipe names it, with the warning that it is slower
// than the CPU; "gpu:N" of the CPU is the key's error (TestConfigCheckDevice).
func TestConfigCheckVulkanDevice(t *testing.T) {
	t.Parallel()
	ctx := testwait.Context(t)
	out, stderr, code := command(t, ctx, nil, "yazsesd", "config", "check", configWithDevice(t, "gpu"))
	if code != 0 || !strings.Contains(out, `decode.device "gpu" → CPU`) ||
		!strings.Contains(out, `decode.device "gpu": warning: --device gpu: no hardware GPU found: decoding on the CPU`) {
		t.Errorf("config check with decode.device gpu: exit %d, stdout %q, stderr %q; want the CPU named, with a warning", code, out, stderr)
	}
	lp := lavapipe(t)
	out, stderr, code = command(t, ctx, nil, "yazsesd", "config", "check", configWithDevice(t, lp))
	if code != 0 || !strings.Contains(out, `decode.device "`+lp+`" → Vulkan0 (`) || !strings.Contains(out, "software)") ||
		!strings.Contains(out, "is a software device: it runs on the CPU and decodes slower than the CPU itself") {
		t.Errorf("config check with decode.device %s: exit %d, stdout %q, stderr %q; want the Vulkan software device named, with a warning", lp, code, out, stderr)
	}
}
