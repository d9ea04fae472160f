package modelfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPaths(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/data")
	t.Setenv("XDG_DATA_DIRS", t.TempDir())
	for got, want := range map[string]string{
		DefaultPath():    "/data/yazses/models/ggml-base.en.bin",
		DefaultVADPath(): "/data/yazses/models/ggml-silero-v5.1.2.bin",
		Path("tiny.en"):  "/data/yazses/models/ggml-tiny.en.bin",
	} {
		if got != want {
			t.Errorf("path %q, want %q", got, want)
		}
	}
	t.Setenv("XDG_DATA_HOME", "relative/is/ignored")
	t.Setenv("HOME", "/home/u")
	if got, want := DefaultVADPath(), "/home/u/.local/share/yazses/models/ggml-silero-v5.1.2.bin"; got != want {
		t.Errorf("DefaultVADPath() = %q, want %q", got, want)
	}
}

// TestDefaultVADPathPackaged: the user's own Silero model first; where
// there is none, the first packaged one of $XDG_DATA_DIRS (the newest
// name first); where neither is, the user's path, to fetch it to.
func TestDefaultVADPathPackaged(t *testing.T) {
	data, sys1, sys2 := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	t.Setenv("XDG_DATA_DIRS", "relative/ignored:"+sys1+":"+sys2)
	own := filepath.Join(data, "yazses", "models", "ggml-silero-v5.1.2.bin")
	if got := DefaultVADPath(); got != own {
		t.Errorf("with no model anywhere: %s, want the user's %s", got, own)
	}
	put := func(p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("model"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	older := filepath.Join(sys2, "yazses", "models", "ggml-silero-v5.1.2.bin")
	put(older)
	if got := DefaultVADPath(); got != older {
		t.Errorf("packaged in the second folder: %s, want %s", got, older)
	}
	newer := filepath.Join(sys1, "yazses", "models", "ggml-silero-v6.2.0.bin")
	put(newer)
	if got := DefaultVADPath(); got != newer {
		t.Errorf("packaged in both: %s, want the first folder's %s", got, newer)
	}
	put(own)
	if got := DefaultVADPath(); got != own {
		t.Errorf("the user's own and packaged ones: %s, want the user's %s", got, own)
	}
}
