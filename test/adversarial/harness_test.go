package adversarial

// The daemon harness is internal/testdaemon's (shared with test/e2e),
// without PulseAudio here: the speaker plays to the null backend and the
// microphone reads a WAV file.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testbin"
	"github.com/yazses/yazses/internal/testdaemon"
	"github.com/yazses/yazses/internal/testmodel"
)

var world struct {
	bin    string // built binaries
	model  string // the mini model
	answer string // a spoken answer, played in by yaz-capture --file
}

func TestMain(m *testing.M) {
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "adversarial setup:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	tmp, err := os.MkdirTemp("", "yazses-adversarial-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	if world.bin, err = testbin.Build(); err != nil {
		return 0, err
	}
	world.model = filepath.Join(tmp, "ggml-mini.bin")
	if err := testmodel.WriteFile(world.model, testmodel.Mini, 1); err != nil {
		return 0, err
	}
	world.answer = filepath.Join(tmp, "answer.wav")
	out, err := exec.Command(bin("yaz-speak"), "--out", world.answer, "--format", "wav", "Yes, go ahead.").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("yaz-speak: %v: %s", err, out)
	}
	return m.Run(), nil
}

func bin(name string) string { return filepath.Join(world.bin, name) }

// config is ask_human on, one question an hour, the null speaker, the
// answer file as microphone, and the mini model.
func config() testdaemon.Config {
	arr := testdaemon.Arr
	return testdaemon.Config{
		"mcp":    {"ask_human": "true"},
		"budget": {"ask_human_per_hour": "1"},
		"ask":    {"guard_ms": "100", "answer_silence_ms": "800"},
		"decode": {"model": testdaemon.Q(world.model), "threads": "1"},
		"children": {
			"speak":   arr(bin("yaz-speak"), "--serve", "--backend", "null"),
			"capture": arr(bin("yaz-capture"), "--file", world.answer),
			"decode":  arr(bin("yaz-decode"), "--serve"),
			"gate":    arr(bin("yaz-gate")),
		},
	}
}

// daemon is one yazsesd with its own HOME and runtime folder
// (internal/testdaemon, shared with test/e2e).
type daemon = testdaemon.Daemon

// startDaemon starts yazsesd and waits until its gate, speaker and decoder
// run. It is stopped (SIGTERM) when the test ends, and the test fails if
// any of its processes outlives it.
func startDaemon(t *testing.T) *daemon {
	t.Helper()
	return testdaemon.Start(t, world.bin, config())
}

// ctl runs `yazsesd ctl ARGS…` as a separate process, as a compositor
// binding would, for up to a minute.
func ctl(d *daemon, args ...string) (stdout, stderr string, code int) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return d.Ctl(ctx, args...)
}
