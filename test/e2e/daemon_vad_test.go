package e2e

import (
	"path/filepath"
	"testing"
	"time"
)

// sileroConfig is baseConfig with the daemon's detector set to the real
// Silero model.
func sileroConfig(t testing.TB) toml {
	return baseConfig().with("vad.engine", q("silero")).with("vad.model", q(sileroModel(t)))
}

// TestDaemonVADChild: with [vad] selecting Silero the daemon runs the
// detector child (children.vad, `yaz-decode --vad-stream`) and lists it in
// status like the others; with the energy detector there is none; with a
// missing model it is left down with vad_model_missing, as the decoder is.
func TestDaemonVADChild(t *testing.T) {
	t.Parallel()
	t.Run("silero", func(t *testing.T) {
		t.Parallel()
		d := startDaemon(t, sileroConfig(t))
		d.waitRunning("vad")
		if c := d.child("vad"); c.PID == 0 || c.Restarts != 0 {
			t.Errorf("status of vad = %+v, want running once", c)
		}
	})
	t.Run("energy", func(t *testing.T) {
		t.Parallel()
		d := startDaemon(t, baseConfig().with("vad.engine", q("energy")))
		for _, c := range d.status().Children {
			if c.Name == "vad" {
				t.Errorf("status lists a vad child %+v with vad.engine = \"energy\"", c)
			}
		}
	})
	t.Run("missing", func(t *testing.T) {
		t.Parallel()
		missing := filepath.Join(t.TempDir(), "none.bin")
		d := newDaemon(t, baseConfig().with("vad.engine", q("silero")).with("vad.model", q(missing)))
		d.start()
		d.waitRunning("gate", "speak")
		d.waitFor(30*time.Second, "the vad child left down", func() bool {
			for _, c := range d.status().Children {
				if c.Name == "vad" && c.State == "exited" {
					return true
				}
			}
			return false
		})
		if c := d.child("vad"); c.Cause != "vad_model_missing" || c.Restarts != 0 {
			t.Errorf("status of vad = %+v, want exited with cause vad_model_missing, never restarted", c)
		}
	})
}
