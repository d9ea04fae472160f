package e2e

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRefusedReloadShowsInStatus: a SIGHUP reload of a file with an error
// is refused, and `status` says so with the line of the problem ("config:
// reload refused at line N: …") instead of "ready" until a reload is
// taken; then it says "ready" again. (The refusal was only in the log.)
func TestRefusedReloadShowsInStatus(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	d := startDaemon(t, cfg)
	d.WaitFor(30*time.Second, "the daemon ready", func() bool { return d.Status().Health == "ready" })
	hup := func() {
		t.Helper()
		if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	d.WriteConfig(cfg.With("dictation.paste_over_chars", "-1"))
	line := 0
	data, _ := os.ReadFile(d.CfgPath)
	for i, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "paste_over_chars = ") {
			line = i + 1
		}
	}
	hup()
	d.WaitLog(10*time.Second, "the refused reload", func(m map[string]any) bool {
		return strings.Contains(m["msg"].(string), "reload refused")
	})
	want := "config: reload refused at line " + strconv.Itoa(line) + ": dictation.paste_over_chars: must be between 0 and 1000000, got -1"
	if h := d.Status().Health; line == 0 || h != want {
		t.Errorf("status health after a refused reload = %q, want %q", h, want)
	}
	d.WriteConfig(cfg.With("dictation.paste_over_chars", "200"))
	hup()
	d.WaitFor(10*time.Second, "the config.reloaded audit event", func() bool { return d.Count("config.reloaded", "") >= 1 })
	if h := d.Status().Health; h != "ready" {
		t.Errorf("status health after a good reload = %q, want ready", h)
	}
	for _, r := range d.LogRecords() {
		if r["msg"] == "reload: these settings need a restart of yazsesd" {
			t.Errorf("the reload of dictation.paste_over_chars said it needs a restart: %v", r)
		}
	}
}
