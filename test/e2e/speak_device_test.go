package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
)

// TestSpeakDeviceConfigCheck: `yazsesd config check` takes a speak.device
// and refuses one with control characters, with its line, as it does
// capture.device.
func TestSpeakDeviceConfigCheck(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.toml")
	if err := os.WriteFile(good, []byte("[decode]\nmodel = "+q(world.mini)+"\n[speak]\nrate = 200\ndevice = \"alsa_output.usb-headset.analog-stereo\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := command(t, ctx, nil, "yazsesd", "config", "check", good); code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("config check with a speak.device: exit %d, %q %q; want 0, ok", code, out, stderr)
	}
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[speak]\n\ndevice = \"yaz\\u001b[2J\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := "bad.toml:3: speak.device: must not contain control characters"
	if _, stderr, code := command(t, ctx, nil, "yazsesd", "config", "check", bad); code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("config check with a control character in speak.device: exit %d, %q; want 1 and %q", code, stderr, want)
	}
}

// TestSpeakDeviceReachesTheVoice: the daemon hands speak.device to its
// speaker (yaz-speak --device). A device that does not exist makes the
// question fail before any sound: unavailable tts_unavailable, the slot
// released, and the speaker's own log names the device. (That the voice
// plays on a device that does exist, and only there, the echo tests show:
// they hear the question on the monitor of the sink speak.device names.)
func TestSpeakDeviceReachesTheVoice(t *testing.T) {
	d := startDaemon(t, baseConfig().With("speak.device", q("no-such-sink")))
	r := d.Ask("Can you hear me?", 20)
	if r.Result != daemonapi.Unavailable || r.Reason != daemonapi.ReasonTTSUnavailable {
		t.Errorf("ask with speak.device naming no device = %+v, want unavailable tts_unavailable", r)
	}
	if n := d.Count("ask.released", daemonapi.ReasonTTSUnavailable); n != 1 {
		t.Errorf("audit: %d ask.released tts_unavailable, want 1 (nothing was heard)", n)
	}
	// The speaker's record comes through its stderr and may trail the
	// result: wait for it (a while, then fail).
	named := func() bool {
		for _, m := range d.LogRecords() {
			if e, _ := m["err"].(string); m["child"] == "speak" && strings.Contains(e, `"no-such-sink"`) {
				return true
			}
		}
		return false
	}
	if !d.Await(10*time.Second, named) {
		t.Errorf("the speaker's log does not name the device \"no-such-sink\"\n%s", d.LogTail(20))
	}
}
