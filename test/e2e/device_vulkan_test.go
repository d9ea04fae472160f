//go:build yaz_vulkan

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
)

// TestDictationOnVulkanDevice: with decode.device = "gpu" the daemon's
// decoder runs on the Vulkan device (Mesa's lavapipe here: see
// cmd/yaz-decode/internal/asr/vulkan_test.go), says so in its log and in
// yazsesd status, and a hold is typed into the focused window as on the
// CPU.
func TestDictationOnVulkanDevice(t *testing.T) {
	t.Parallel()
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	speech := speechWAV(t, 3*time.Second)
	d := startDaemon(t, dictationConfig(speech, false).With("decode.device", q("gpu")), x.DaemonEnv()...)
	c := d.Client()
	d.WaitRunning("decode")
	if dd := d.Status().DecodeDevice; dd.Setting != "gpu" || dd.Device == nil || dd.Device.Backend != "Vulkan" || dd.Device.Kind != "software" {
		t.Errorf("status decode_device = %+v (device %+v), want gpu on the Vulkan software device", dd, dd.Device)
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

// TestConfigCheckVulkanDevice: config check finds the Vulkan device
// (lavapipe) for decode.device = "gpu" and names it; "gpu:N" of the CPU
// is the key's error.
func TestConfigCheckVulkanDevice(t *testing.T) {
	t.Parallel()
	ctx := testwait.Context(t)
	out, stderr, code := command(t, ctx, nil, "yazsesd", "config", "check", configWithDevice(t, "gpu"))
	if code != 0 || !strings.Contains(out, `decode.device "gpu" → Vulkan0 (`) || !strings.Contains(out, "software)") {
		t.Errorf("config check with decode.device gpu: exit %d, stdout %q, stderr %q; want the Vulkan software device named", code, out, stderr)
	}
}
