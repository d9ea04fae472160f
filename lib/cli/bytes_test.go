package cli

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestArgumentsByteForByte: Linux file names are bytes, not text. A name
// that is not UTF-8 reaches the program as given, byte for byte, as a
// positional argument, a string flag (either spelling), a path flag (made
// absolute, nothing else) and from the environment; kong's own string
// mapper went through JSON and turned such bytes into U+FFFD.
func TestArgumentsByteForByte(t *testing.T) {
	const bad = "bad\xffname\xc3.wav"
	t.Setenv("YAZ_TEST_BYTES", "env\xfe")
	var c struct {
		Files []string `arg:"" optional:""`
		Out   string   `short:"o"`
		Dir   string   `type:"path"`
		Env   string   `env:"YAZ_TEST_BYTES"`
		Def   string   `type:"path" default:"${def}"`
	}
	_, code, done := Parse("t", "test", &c, []string{"-o", "o" + bad, "--dir=d" + bad, bad, "x,\\" + bad},
		io.Discard, io.Discard, map[string]string{"def": "/tmp/def\xfd"})
	if done {
		t.Fatalf("Parse ended the run with %d", code)
	}
	want := []string{bad, "x,\\" + bad}
	if diff := cmp.Diff(want, c.Files); diff != "" {
		t.Errorf("positional arguments (-want +got):\n%s", diff)
	}
	abs, _ := filepath.Abs("d" + bad)
	for _, tc := range []struct{ name, got, want string }{
		{"-o", c.Out, "o" + bad},
		{"--dir (path)", c.Dir, abs},
		{"$YAZ_TEST_BYTES", c.Env, "env\xfe"},
		{"a path default", c.Def, "/tmp/def\xfd"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}
