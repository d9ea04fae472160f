// Package testvad finds the real Silero VAD model the tests use
// (ggml-silero-v6.2.0.bin, the file whisper.cpp keeps for its own VAD
// tests) in the one folder the tests read: $YAZ_TEST_MODELS, which the
// Makefile exports, else $XDG_CACHE_HOME/yazses/test-models (default
// ~/.cache/yazses/test-models), the whisper.cpp cache's sibling.
//
// `make setup` puts the model there (scripts/test-models.sh: from
// ../shared/models when a checkout has it beside it, else from the model
// hub). The tests never read ../shared themselves, and the model is never
// copied into the repository.
//
// When the model is missing, the first test of a package that needs it
// fails with one line that says what to run, and the others are skipped
// with a reference to it: the package fails, and a user offline sees one
// instruction per package (go test prints no skips without -v), not one
// per test. A skip here never makes a run pass: it comes only after a
// failure in the same test binary. Tests only.
package testvad

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// The pinned test asset.
const (
	File   = "ggml-silero-v6.2.0.bin"
	Size   = 885098
	SHA256 = "2aa269b785eeb53a82983a20501ddf7c1d9c48e33ab63a41391ac6c9f7fb6987"
	// Env names the folder; the Makefile exports it.
	Env = "YAZ_TEST_MODELS"
	// Fix is what puts the model in place.
	Fix = "make setup"
)

// dir is the folder, read when the test binary starts (before any test
// changes HOME or XDG_CACHE_HOME with t.Setenv).
var dir = dirFrom(os.Getenv)

// dirFrom is the folder for an environment: $YAZ_TEST_MODELS, else
// $XDG_CACHE_HOME/yazses/test-models, else $HOME/.cache/yazses/test-models
// (scripts/test-models.sh decides the same way).
func dirFrom(getenv func(string) string) string {
	if d := getenv(Env); d != "" {
		return d
	}
	cache := getenv("XDG_CACHE_HOME")
	if cache == "" || !filepath.IsAbs(cache) {
		cache = filepath.Join(getenv("HOME"), ".cache")
	}
	return filepath.Join(cache, "yazses", "test-models")
}

// Dir is the folder the tests read the model from.
func Dir() string { return dir }

// Find returns the model's path in dir after checking its size and
// SHA-256. Its error is one line that names the file, the folder and the
// command to run.
func Find(dir string) (string, error) {
	p := filepath.Join(dir, File)
	b, err := os.ReadFile(p)
	if err != nil {
		if os.IsNotExist(err) {
			return "", fmt.Errorf("the real Silero VAD model %s is not in %s: run `%s` (it copies it from ../shared/models or downloads it; %s names another folder)", File, dir, Fix, Env)
		}
		return "", fmt.Errorf("the real Silero VAD model: %w: run `%s`", err, Fix)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); len(b) != Size || got != SHA256 {
		return "", fmt.Errorf("the real Silero VAD model %s is not the pinned file (%d bytes, sha256 %s; want %d bytes, %s): remove it and run `%s`", p, len(b), got, Size, SHA256, Fix)
	}
	return p, nil
}

// found is Find(Dir()), once per test binary.
var found = sync.OnceValues(func() (string, error) { return Find(dir) })

// reporter fails the first test that finds the model missing with the
// whole line and skips the rest with a reference to it (the test binary
// has failed by then).
type reporter struct{ told atomic.Bool }

var report reporter

func (r *reporter) need(t testing.TB, path string, err error) string {
	t.Helper()
	if err == nil {
		return path
	}
	if r.told.CompareAndSwap(false, true) {
		t.Fatal(err.Error())
	} else {
		t.Skipf("needs the real Silero VAD model, which is missing: this package failed on it already (run `%s`)", Fix)
	}
	return ""
}

// Path is the model's path; when the model is missing it fails t, or
// skips it after an earlier test of this binary has failed on it.
func Path(t testing.TB) string {
	t.Helper()
	p, err := found()
	return report.need(t, p, err)
}

// Bytes is the model's content, or fails (or skips) t as Path does.
func Bytes(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(Path(t))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
