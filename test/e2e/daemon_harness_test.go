package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testdaemon"
	"github.com/yazses/yazses/internal/testwait"
)

// The daemon harness is internal/testdaemon's (shared with
// test/adversarial); these names keep the tests short.

// toml is a configuration as table → key → raw TOML value.
type toml = testdaemon.Config

var (
	q       = testdaemon.Q   // q quotes a TOML string
	arr     = testdaemon.Arr // arr writes a TOML array of strings
	hostEnv = testdaemon.HostEnv
)

// baseConfig is what every daemon test starts from: ask_human on, one
// question per hour, the generated model, speech into the PulseAudio null
// sink, and the answer played in by yaz-capture --file.
func baseConfig() toml {
	return toml{
		"mcp":    {"ask_human": "true"},
		"budget": {"ask_human_per_hour": "1"},
		"ask":    {"guard_ms": "100", "answer_silence_ms": "800"},
		"decode": {"model": q(world.mini), "threads": "1"},
		// The text alone, as the tests that check what arrived byte for
		// byte want it; TestDictationTypesExactTextIntoFocusedWindow
		// types with the default separator.
		"dictation": {"separator": q("")},
		"children": {
			"speak":   arr(bin("yaz-speak"), "--serve", "--backend", "pulseaudio"),
			"capture": arr(bin("yaz-capture"), "--file", answerWAV()),
			"decode":  arr(bin("yaz-decode"), "--serve"),
			"gate":    arr(bin("yaz-gate")),
		},
	}
}

func bin(name string) string { return filepath.Join(world.bin, name) }

var answerOnce struct {
	sync.Once
	path string
	err  error
}

// answerWAV is a spoken answer (espeak-ng), made once for the suite.
func answerWAV() string {
	answerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "yazses-answer-")
		if err != nil {
			answerOnce.err = err
			return
		}
		p := filepath.Join(dir, "answer.wav")
		out, err := exec.Command(bin("yaz-speak"), "--out", p, "--format", "wav", "Yes, go ahead and deploy it.").CombinedOutput()
		if err != nil {
			answerOnce.err = fmt.Errorf("yaz-speak: %v: %s", err, out)
		}
		answerOnce.path = p
	})
	if answerOnce.err != nil {
		panic(answerOnce.err)
	}
	return answerOnce.path
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer = testwait.Buffer

// daemon is one yazsesd under test (testdaemon.Daemon), with the e2e
// tests' own helpers.
type daemon struct{ *testdaemon.Daemon }

// startDaemon starts yazsesd with cfg and waits until its gate, speaker
// and decoder are running. It is stopped (SIGTERM) when the test ends,
// and the test fails if any of its processes outlives it.
func startDaemon(t testing.TB, cfg toml, env ...string) *daemon {
	t.Helper()
	return &daemon{testdaemon.Start(t, world.bin, cfg, env...)}
}

// newDaemon prepares a daemon without starting it.
func newDaemon(t testing.TB, cfg toml, env ...string) *daemon {
	t.Helper()
	return &daemon{testdaemon.New(t, world.bin, cfg, env...)}
}

// waitSpoken waits until the audit holds n ask.spoken events: the n-th
// question's audio has been handed to the sound server (the daemon charges
// the slot then), so it is playing.
func waitSpoken(d *daemon, n int) {
	d.T.Helper()
	d.WaitFor(30*time.Second, fmt.Sprintf("%d questions audible (ask.spoken)", n), func() bool { return d.Count("ask.spoken", "") >= n })
}
