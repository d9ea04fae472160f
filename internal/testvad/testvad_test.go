package testvad

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// TestDir: the folder is $YAZ_TEST_MODELS, else the cache's
// yazses/test-models (XDG_CACHE_HOME when absolute, else ~/.cache), as the
// Makefile and scripts/test-models.sh name it.
func TestDir(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"YAZ_TEST_MODELS": "/m", "XDG_CACHE_HOME": "/c", "HOME": "/h"}, "/m"},
		{map[string]string{"XDG_CACHE_HOME": "/c", "HOME": "/h"}, "/c/yazses/test-models"},
		{map[string]string{"XDG_CACHE_HOME": "rel", "HOME": "/h"}, "/h/.cache/yazses/test-models"},
		{map[string]string{"HOME": "/h"}, "/h/.cache/yazses/test-models"},
	} {
		if got := dirFrom(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("dirFrom(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}
}

// fakeTB records what Path would fail or skip a test with (testing.TB
// cannot be implemented outside package testing except by embedding it;
// every method need may call is overridden here).
type fakeTB struct {
	testing.TB
	failures []string
	skips    []string
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Fatal(args ...any) { f.failures = append(f.failures, fmt.Sprint(args...)) }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failures = append(f.failures, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Skip(args ...any) { f.skips = append(f.skips, fmt.Sprint(args...)) }
func (f *fakeTB) Skipf(format string, args ...any) {
	f.skips = append(f.skips, fmt.Sprintf(format, args...))
}

// TestMissingIsOneLine: with the cache folder empty (and this checkout's
// ../shared/models beside it, which the lookup must not read), the lookup
// fails with one line naming the file, the folder and `make setup`; the
// first test that needs it fails with that line, the later ones are
// skipped with a short reference to it (the binary has failed already).
func TestMissingIsOneLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "test-models")
	_, err := Find(dir)
	if err == nil {
		t.Fatalf("Find(%s) found a model in a folder that does not exist", dir)
	}
	line := err.Error()
	for _, want := range []string{File, dir, "run `make setup`"} {
		if !strings.Contains(line, want) {
			t.Errorf("error %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "\n") {
		t.Errorf("error is %d lines, want one: %q", strings.Count(line, "\n")+1, line)
	}

	var r reporter
	f := &fakeTB{TB: t}
	for range 3 {
		r.need(f, "", err)
	}
	if len(f.failures) != 1 || f.failures[0] != line || len(f.skips) != 2 {
		t.Fatalf("failures %q, skips %q; want the whole line once, then two references", f.failures, f.skips)
	}
	for _, later := range f.skips {
		if !strings.Contains(later, "failed on it already") || !strings.Contains(later, "make setup") {
			t.Errorf("later skip %q, want a short reference naming make setup", later)
		}
	}
	if got := r.need(f, "/m/"+File, nil); got != "/m/"+File || len(f.failures) != 1 || len(f.skips) != 2 {
		t.Errorf("need with the model = %q (failures %q, skips %q), want its path and nothing more", got, f.failures, f.skips)
	}
}

// TestWrongFileRefused: a file of the right name and size but other
// bytes is not the model.
func TestWrongFileRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, File), make([]byte, Size), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Find(dir)
	if err == nil || !strings.Contains(err.Error(), "is not the pinned file") || !strings.Contains(err.Error(), "make setup") {
		t.Fatalf("Find with a zeroed file: %v, want refused naming make setup", err)
	}
}

func scripts() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "scripts")
}

// setupRun runs scripts/test-models.sh with HOME and a cache of its own,
// shared pointing at a models folder, and the model hub at hub.
func setupRun(t *testing.T, shared, hub string) (dest, stderr string) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(filepath.Join(scripts(), "test-models.sh"))
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "XDG_CACHE_HOME=" + filepath.Join(home, "cache"),
		"YAZ_SHARED_MODELS=" + shared, "YAZ_MODEL_BASE_URL=" + hub}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("test-models.sh: %v\n%s", err, errb.String())
	}
	if out.Len() != 0 {
		t.Errorf("test-models.sh wrote %q on stdout, want nothing", out.String())
	}
	return filepath.Join(home, "cache", "yazses", "test-models"), errb.String()
}

// closedURL is an address on which nothing listens.
func closedURL(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	return url
}

// TestSetupScript: make setup's scripts/test-models.sh puts the model into
// the folder Find reads, from the shared folder when it is there, else
// from the hub (fetch-model.sh silero-v6.2.0, checked against the same
// pin); with neither it says so in one line, exits 0 and puts nothing
// there; a shared copy with other bytes is not used.
func TestSetupScript(t *testing.T) {
	real := Bytes(t)
	sharedDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(sharedDir, File), real, 0o444); err != nil {
		t.Fatal(err)
	}
	none := filepath.Join(t.TempDir(), "shared", "models")

	t.Run("from shared", func(t *testing.T) {
		dest, stderr := setupRun(t, sharedDir, closedURL(t))
		if _, err := Find(dest); err != nil {
			t.Fatalf("after the copy: %v (stderr %q)", err, stderr)
		}
	})

	t.Run("from the hub", func(t *testing.T) {
		var mu sync.Mutex
		var paths []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			paths = append(paths, r.URL.Path)
			mu.Unlock()
			if r.URL.Path != "/"+File {
				http.NotFound(w, r)
				return
			}
			w.Write(real)
		}))
		defer srv.Close()
		dest, stderr := setupRun(t, none, srv.URL)
		if _, err := Find(dest); err != nil {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("after the download: %v (stderr %q, requests %q)", err, stderr, paths)
		}
		if left, _ := filepath.Glob(filepath.Join(dest, "*.part*")); len(left) > 0 {
			t.Errorf("left %v behind", left)
		}
	})

	t.Run("offline", func(t *testing.T) {
		dest, stderr := setupRun(t, none, closedURL(t))
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if len(lines) != 1 || !strings.Contains(stderr, "no "+File) || !strings.Contains(stderr, "make setup") || !strings.Contains(stderr, dest) {
			t.Errorf("stderr %q, want one line saying the model is missing, where, and make setup", stderr)
		}
		if left, _ := filepath.Glob(filepath.Join(dest, "*")); len(left) > 0 {
			t.Errorf("left %v behind", left)
		}
	})

	t.Run("wrong shared copy", func(t *testing.T) {
		bad := t.TempDir()
		if err := os.WriteFile(filepath.Join(bad, File), make([]byte, Size), 0o644); err != nil {
			t.Fatal(err)
		}
		dest, stderr := setupRun(t, bad, closedURL(t))
		if _, err := os.Stat(filepath.Join(dest, File)); err == nil {
			t.Errorf("a shared copy with other bytes was put in place (stderr %q)", stderr)
		}
		if !strings.Contains(stderr, "is not the pinned file") {
			t.Errorf("stderr %q, want the shared copy refused", stderr)
		}
	})
}
