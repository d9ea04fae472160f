// Package testbin builds the repository's programs once for every test
// package of a run, and finds what the end-to-end tests share: the
// repository root, the jfk.wav sample and whisper-cli.
//
// `go build -o DIR ./cmd/...` relinks every program each time (about 5 s of
// CPU here even with a warm build cache), and test/e2e and test/adversarial
// each needed them. Build keys a folder under the temporary directory by
// the build IDs of the packages (`go list -export`, which changes when any
// source, dependency or flag that goes into them changes), builds into it
// once under a file lock, and hands the same folder to every later caller.
//
// The programs it builds never look in the user's /run/user/$UID: the
// daemon socket's fallback folder (lib/daemonapi, used when XDG_RUNTIME_DIR
// is not set, as MCP hosts start a server) is linked in as UserRunRoot of
// the build folder, so a test runs beside the user's own yazsesd without
// reaching it or touching its folder.
package testbin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Packages are the programs Build builds: every command and the fake
// decoder.
var Packages = []string{"./cmd/...", "./internal/fakedecode"}

// ldflags link the build folder's UserRunRoot (%s) into lib/daemonapi's
// variable that holds /run/user.
const ldflags = "-X 'github.com/yazses/yazses/lib/daemonapi.userRunRoot=%s'"

// UserRunRoot is the folder that the programs built into dir (by Build)
// take for /run/user: the per-user runtime folder they fall back to
// without XDG_RUNTIME_DIR is UserRunRoot(dir)/$UID. Build does not make
// it; a test that needs the folder makes it as logind would.
func UserRunRoot(dir string) string { return filepath.Join(dir, "run") }

// Root is the repository's root folder.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Build returns a folder that holds the programs of Packages, built from
// the current sources. Concurrent callers (test packages run in parallel)
// wait for one build.
func Build() (string, error) {
	root := Root()
	list := exec.Command("go", append([]string{"list", "-export", "-f", "{{.ImportPath}} {{.BuildID}}"}, Packages...)...)
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("go list -export: %w", err)
	}
	sum := sha256.Sum256([]byte(root + "\n" + os.Getenv("GOFLAGS") + "\n" + ldflags + "\n" + string(out)))
	base := filepath.Join(os.TempDir(), fmt.Sprintf("yazses-testbin-%d", os.Geteuid()))
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(base, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	dir := filepath.Join(base, hex.EncodeToString(sum[:12]))
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		now := time.Now()
		os.Chtimes(dir, now, now) // in use: not pruned
		return dir, nil
	}
	prune(base, 24*time.Hour)
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	build := exec.Command("go", append([]string{"build", "-ldflags", fmt.Sprintf(ldflags, UserRunRoot(dir)), "-o", tmp + "/"}, Packages...)...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("go build %s: %w\n%s", strings.Join(Packages, " "), err, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o600); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	return dir, nil
}

// prune removes builds not used for age (called under the lock).
func prune(base string, age time.Duration) {
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > age {
			os.RemoveAll(filepath.Join(base, e.Name()))
		}
	}
}

// JFK is samples/jfk.wav of the whisper.cpp Go bindings in the module
// cache (11 s of real speech, 16 kHz mono).
func JFK() (string, error) {
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMODCACHE: %w", err)
	}
	p := filepath.Join(strings.TrimSpace(string(modcache)),
		"github.com/ggerganov/whisper.cpp/bindings/go@v0.0.0-20260227185758-9453b4b9be9b/samples/jfk.wav")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("jfk.wav sample: %w (run go mod download)", err)
	}
	return p, nil
}

// Program builds one pure-Go program of cmd/ (CGO_ENABLED=0) into a
// temporary folder of the test and returns its path: for the tests of a
// program's own packages, which need none of the others.
func Program(t testing.TB, name string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	build := exec.Command("go", "build", "-o", out, "./cmd/"+name)
	build.Dir = Root()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/%s: %v\n%s", name, err, b)
	}
	return out
}
