package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
)

// TestDaemonVADSettings: the [vad] table reaches the real decoder child.
// With engine "silero" and the real model the decoder runs Silero (its own
// log line, relabelled by the daemon, says so); with a VAD model that is
// missing or is a whisper model, the daemon keeps running, the decoder is
// left down with the cause vad_model_missing or vad_model_invalid and a
// message naming the file, `yazsesd status` says it, a hold is refused at
// hold.start with that cause, and `yazsesd config check` names the key's
// line first.
func TestDaemonVADSettings(t *testing.T) {
	t.Parallel()
	vm := sileroModel(t)
	t.Run("silero", func(t *testing.T) {
		t.Parallel()
		d := startDaemon(t, baseConfig().With("vad.engine", q("silero")).With("vad.model", q(vm)).With("vad.threshold", "0.6"))
		d.WaitFor(20*time.Second, "the decoder's detector line", func() bool {
			for _, r := range d.LogRecords() {
				if r["child"] == "decode" && r["msg"] == "voice detector: Silero VAD" && r["vad_model"] == vm {
					return true
				}
			}
			return false
		})
	})
	dir := t.TempDir()
	missing := filepath.Join(dir, "none", "ggml-silero-v5.1.2.bin")
	for _, bad := range []struct{ name, path, cause, says string }{
		{"missing", missing, "vad_model_missing", "VAD model not found: " + missing + " — fetch one with yaz-fetch-model silero-v5.1.2"},
		{"whisper", world.mini, "vad_model_invalid", world.mini + " is a whisper model"},
	} {
		t.Run(bad.name, func(t *testing.T) {
			t.Parallel()
			cfg := baseConfig().With("vad.engine", q("silero")).With("vad.model", q(bad.path))
			d := newDaemon(t, cfg)
			d.Start()
			d.WaitRunning("gate", "speak")
			d.WaitFor(30*time.Second, "the decoder left down", func() bool {
				for _, c := range d.Status().Children {
					if c.Name == "decode" && c.State == "exited" {
						return true
					}
				}
				return false
			})
			dc := d.Child("decode")
			if dc.Cause != bad.cause || !strings.HasPrefix(dc.Reason, bad.says) || dc.Restarts != 0 {
				t.Errorf("status of decode = %+v, want exited, never restarted, cause %s, reason %q", dc, bad.cause, bad.says)
			}
			if st := d.Status(); !strings.Contains(st.Health, bad.says) {
				t.Errorf("status health = %q, want the cause", st.Health)
			}
			// The hold is refused at its start (the decoder is down for
			// good): the person is not asked to speak first.
			c := d.Client()
			hctx, hcancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer hcancel()
			if r, err := c.Hold(hctx, daemonapi.MethodHoldStart); err != nil || r.Hold != daemonapi.HoldIdle || r.Outcome != "failed" || r.Cause != bad.cause || !strings.Contains(r.Reason, bad.says) {
				t.Errorf("hold.start = %+v, %v; want idle, failed with cause %s and the message", r, err, bad.cause)
			}
			for _, g := range []string{"gate", "speak"} {
				if s := d.Child(g); s.State != "running" {
					t.Errorf("child %s is %s, want running: a bad VAD model stops the decoder only", g, s.State)
				}
			}

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := execIn(ctx, d, "config", "check")
			out, err := cmd.CombinedOutput()
			data, _ := os.ReadFile(d.CfgPath)
			line, table := 0, ""
			for i, l := range strings.Split(string(data), "\n") {
				if strings.HasPrefix(l, "[") {
					table = l
				}
				if table == "[vad]" && strings.HasPrefix(l, "model = ") {
					line = i + 1
				}
			}
			if want := d.CfgPath + ":" + strconv.Itoa(line) + ": vad.model: " + bad.says; err == nil || line == 0 || !strings.Contains(string(out), want) {
				t.Errorf("yazsesd config check: %v\n%s\nwant it to fail with %q", err, out, want)
			}
		})
	}
}
