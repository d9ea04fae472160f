package audio

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testwait"
)

// quietChildEnv marks the test binary started by TestNoBackendChatter.
const quietChildEnv = "YAZ_AUDIO_QUIET_CHILD"

// TestQuietHelperProcess is the child of TestNoBackendChatter (the os/exec
// helper-process pattern): it opens the capture device of a machine without
// a sound server, logging JSON at debug to stderr, and returns.
func TestQuietHelperProcess(t *testing.T) {
	if os.Getenv(quietChildEnv) != "1" {
		return
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	err := Capture(context.Background(), Config{Backend: os.Getenv("YAZ_AUDIO_BACKEND"), Log: log}, nil, func([]int16) {})
	if err == nil {
		t.Fatal("Capture without a sound server or a card succeeded")
	}
	log.Error("capture failed", "err", err)
}

// TestNoBackendChatter: with no sound server and no usable ALSA card,
// opening the capture device writes nothing to stderr but our own slog
// records: alsa-lib's messages (about 35 lines here, "ALSA lib confmisc.c:855:
// (parse_card) cannot find card '0'", ...) are routed to the logger at debug,
// not printed by the library.
func TestNoBackendChatter(t *testing.T) {
	for _, backend := range []string{"auto", "alsa"} {
		t.Run(backend, func(t *testing.T) {
			cmd := exec.CommandContext(testwait.Context(t), os.Args[0], "-test.run=^TestQuietHelperProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), quietChildEnv+"=1",
				"YAZ_AUDIO_BACKEND="+backend,
				"PULSE_SERVER=unix:/nonexistent/pulse/native", // no sound server reachable
				"XDG_RUNTIME_DIR="+t.TempDir(),                // an empty one, as without a session
				"HOME="+t.TempDir(),
				"ALSA_CARD=yaz-no-such-card", // no ALSA card either, even on a machine with one
			)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("child: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
			}
			var records, alsa int
			for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Errorf("stderr line is not one of our slog records: %q", line)
					continue
				}
				records++
				if rec["msg"] == "alsa-lib" {
					alsa++
					if rec["level"] != "DEBUG" {
						t.Errorf("alsa-lib message at %v, want DEBUG: %q", rec["level"], line)
					}
				}
			}
			if records == 0 {
				t.Error("no slog record at all; the child logged its error")
			}
			if alsa == 0 {
				t.Errorf("no alsa-lib message reached the logger at debug; stderr:\n%s", stderr.String())
			}
		})
	}
}
