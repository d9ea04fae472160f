package readme

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testwait"
)

// TestQuietWithoutSoundServer: yaz-capture and yaz-speak on a machine with
// no sound server reachable and no sound card say what is wrong in one line,
// with nothing from the sound libraries before it (there were about 35
// lines of "ALSA lib ..." here); at --log-level debug every other line is
// one of our slog records, alsa-lib's messages among them.
func TestQuietWithoutSoundServer(t *testing.T) {
	inst := install(t)
	home := t.TempDir()
	runtimeDir := filepath.Join(home, "run")
	if err := os.Mkdir(runtimeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"HOME=" + home, "PATH=" + inst.bin + ":/usr/bin:/bin",
		"XDG_RUNTIME_DIR=" + runtimeDir,                // empty: no sound server's socket
		"PULSE_SERVER=unix:" + runtimeDir + "/nowhere", // nothing listens there
		"ALSA_CARD=yaz-no-such-card",                   // no card, even on a machine with one
	}
	for _, args := range [][]string{
		{"yaz-capture", "--seconds", "1"},
		{"yaz-speak", "The build is green."},
	} {
		name := args[0]
		t.Run(name, func(t *testing.T) {
			for _, debug := range []bool{false, true} {
				argv := args[1:]
				if debug {
					argv = append(append([]string{}, argv...), "--log-level", "debug", "--log-format", "json")
				}
				cmd := bounded(testwait.Context(t), filepath.Join(inst.bin, name), argv...)
				cmd.Env = env
				cmd.Dir = home
				var stderr strings.Builder
				cmd.Stderr = &stderr
				err := cmd.Run()
				if code := cmd.ProcessState.ExitCode(); code != 1 {
					t.Fatalf("%s %v: exit %d (%v), want 1\n%s", name, argv, code, err, stderr.String())
				}
				lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
				last := lines[len(lines)-1]
				if !strings.HasPrefix(last, name+": error: ") || !strings.Contains(last, "device") {
					t.Errorf("%s %v: last stderr line %q, want the one error about the device", name, argv, last)
				}
				if !debug {
					if len(lines) != 1 {
						t.Errorf("%s %v: %d lines on stderr, want the one error:\n%s", name, argv, len(lines), stderr.String())
					}
					continue
				}
				alsa := 0
				for _, l := range lines[:len(lines)-1] {
					var rec struct{ Level, Msg string }
					if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Level == "" {
						t.Errorf("%s %v: stderr line is not a slog record: %q", name, argv, l)
						continue
					}
					if rec.Msg == "alsa-lib" {
						alsa++
					}
				}
				if alsa == 0 {
					t.Errorf("%s %v: alsa-lib's messages are not in the debug log:\n%s", name, argv, stderr.String())
				}
			}
		})
	}
}
