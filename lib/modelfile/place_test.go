package modelfile

import "testing"

func TestPaths(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/data")
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
