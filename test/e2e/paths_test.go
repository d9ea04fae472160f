package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNonUTF8Paths: Linux file names are bytes. Every program that takes a
// path opens the file it was given, byte for byte, when the name is not
// UTF-8 (before, yaz-decode $'bad\xffname.wav' looked for
// bad\uFFFDname.wav): yaz-decode's files and --output-dir, yaz-speak's
// --output, yaz-capture's --file and yazsesd's configuration file (config
// init, config check, run -c). (yaz-mcp's
// transcribe path comes in JSON, which is UTF-8 only.)
func TestNonUTF8Paths(t *testing.T) {
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	exists := func(t *testing.T, path string) os.FileInfo {
		t.Helper()
		st, err := os.Stat(path)
		if err != nil {
			ents, _ := os.ReadDir(filepath.Dir(path))
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Fatalf("%q was not written: %v (the folder holds %q)", path, err, names)
		}
		return st
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	jfk := writeWAVFile(t, at("jfk\xff.wav"), jfkSamples(t))

	t.Run("yaz-decode", func(t *testing.T) {
		out := at("subs\xfe")
		stdout, stderr, code := command(t, ctx, nil, "yaz-decode", "-m", world.mini, "-t", "2", "--vad", "energy", jfk)
		if code != 0 || strings.TrimSpace(stdout) == "" {
			t.Fatalf("yaz-decode %q: exit %d, stdout %q\n%s", jfk, code, stdout, tail(stderr, 5))
		}
		_, stderr, code = command(t, ctx, nil, "yaz-decode", "-m", world.mini, "-t", "2", "--vad", "energy", "-o", "srt", "--output-dir", out, jfk)
		if code != 0 {
			t.Fatalf("yaz-decode --output-dir %q: exit %d\n%s", out, code, tail(stderr, 5))
		}
		exists(t, filepath.Join(out, "jfk\xff.srt"))
	})
	t.Run("yaz-speak", func(t *testing.T) {
		out := at("said\xff.raw")
		_, stderr, code := command(t, ctx, nil, "yaz-speak", "--out", out, "hello")
		if code != 0 {
			t.Fatalf("yaz-speak --out %q: exit %d\n%s", out, code, tail(stderr, 5))
		}
		if st := exists(t, out); st.Size() == 0 {
			t.Errorf("%q is empty", out)
		}
	})
	t.Run("yaz-capture", func(t *testing.T) {
		in := writeWAVFile(t, at("in\xff.wav"), zeros(0.2))
		stdout, stderr, code := command(t, ctx, nil, "yaz-capture", "--backend", "null", "--file", in)
		if code != 0 || len(stdout) != 2*sr/5 {
			t.Fatalf("yaz-capture --file %q: exit %d, %d bytes on stdout, want %d\n%s", in, code, len(stdout), 2*sr/5, tail(stderr, 5))
		}
	})
	t.Run("yazsesd", func(t *testing.T) {
		cfg := at("yazses\xff.toml")
		stdout, stderr, code := command(t, ctx, nil, "yazsesd", "config", "init", cfg)
		if code != 0 {
			t.Fatalf("yazsesd config init %q: exit %d\n%s%s", cfg, code, stdout, tail(stderr, 5))
		}
		exists(t, cfg)
		broken := at("broken\xfe.toml")
		if err := os.WriteFile(broken, []byte("[nope\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		// yazsesd run reads its file before anything else, and ends on a
		// broken one (its own runtime folder, in case it went further).
		rt := filepath.Join(dir, "run")
		if err := os.Mkdir(rt, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Setenv("XDG_RUNTIME_DIR", rt)
		for _, args := range [][]string{{"config", "check", broken}, {"run", "-c", broken}} {
			stdout, stderr, code := command(t, ctx, nil, "yazsesd", args...)
			// "[nope" lacks its "]" on line 1 (TOML syntax errors at a
			// line's end were reported a line late, as line 2).
			if code == 0 || !strings.Contains(stderr, broken+":1: toml") {
				t.Errorf("yazsesd %q: exit %d, want the file's error at its line 1:\n%s%s", args, code, stdout, tail(stderr, 5))
			}
		}
	})
}
