package readme

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testmodel"
)

// hubServer serves body for every path as the model hub serves a file:
// HEAD and GET with ranges, and, when announce is set, the X-Linked-Size
// and X-Linked-Etag headers (the size and sha256 the hub announces) for
// announced. It counts the GETs and the ranged ones.
func hubServer(t *testing.T, body []byte, announce bool, announced []byte) (url string, gets, ranged *atomic.Int64) {
	t.Helper()
	gets, ranged = new(atomic.Int64), new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if announce {
			w.Header().Set("X-Linked-Size", fmt.Sprint(len(announced)))
			w.Header().Set("X-Linked-Etag", fmt.Sprintf("%q", fmt.Sprintf("%x", sha256.Sum256(announced))))
		}
		if r.Method == http.MethodGet {
			gets.Add(1)
			if r.Header.Get("Range") != "" {
				ranged.Add(1)
			}
		}
		http.ServeContent(w, r, "model.bin", time.Time{}, bytes.NewReader(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, gets, ranged
}

// TestFetchParakeet: the Parakeet entries of yaz-fetch-model are listed
// and fetched from the Parakeet repository; with no pinned checksum, a
// download is checked against the size and sha256 the server announces and
// the ggml magic, the sha256 written is printed, and the help says plainly
// that these entries are not pinned. A bad download never lands under the
// model's name; an interrupted one resumes.
func TestFetchParakeet(t *testing.T) {
	inst := install(t)
	prog := filepath.Join(inst.bin, "yaz-fetch-model")
	var model bytes.Buffer
	if err := testmodel.Write(&model, testmodel.ParakeetMini, 1); err != nil {
		t.Fatal(err)
	}
	body := model.Bytes()
	sum := fmt.Sprintf("%x", sha256.Sum256(body))
	const name = "parakeet-tdt-0.6b-v3-q8_0"
	file := "ggml-" + name + ".bin"
	run := func(t *testing.T, base string) (result, string) {
		t.Helper()
		models := filepath.Join(t.TempDir(), "models")
		r := runScript(t, []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin", "YAZ_MODEL_DIR=" + models, "YAZ_PARAKEET_BASE_URL=" + base},
			t.TempDir(), prog, name)
		return r, models
	}

	r := runScript(t, []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}, t.TempDir(), prog, "--help")
	for _, want := range []string{"parakeet-tdt-0.6b-v3-f16", "NOT pinned", "https://huggingface.co/ggml-org/parakeet-GGUF/resolve/main"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--help does not say %q:\n%s", want, r.stdout)
		}
	}
	r = runScript(t, []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}, t.TempDir(), prog, "--list")
	if !strings.Contains(r.stdout, "ggml-parakeet-tdt-0.6b-v3-f16.bin") || !strings.Contains(r.stdout, file) {
		t.Errorf("--list lacks the Parakeet models:\n%s", r.stdout)
	}

	t.Run("announced", func(t *testing.T) {
		url, gets, _ := hubServer(t, body, true, body)
		r, models := run(t, url)
		dest := filepath.Join(models, file)
		if r.code != 0 || strings.TrimSpace(r.stdout) != dest || gets.Load() != 1 {
			t.Fatalf("exit %d, stdout %q, %d downloads; want 0, the path, 1\n%s", r.code, r.stdout, gets.Load(), r.stderr)
		}
		if !strings.Contains(r.stderr, file+" sha256 "+sum+" (as the server announced; not pinned)") {
			t.Errorf("stderr does not print the sha256 written:\n%s", r.stderr)
		}
		if got, _ := os.ReadFile(dest); !bytes.Equal(got, body) {
			t.Error("the file written is not what was served")
		}
		if left, _ := filepath.Glob(dest + ".part*"); len(left) != 0 {
			t.Errorf("left %v behind", left)
		}
	})
	t.Run("nothing announced", func(t *testing.T) {
		url, _, _ := hubServer(t, body, false, nil)
		r, models := run(t, url)
		if r.code != 0 || !strings.Contains(r.stderr, "sha256 "+sum+" (the server announced no checksum: compare it yourself; not pinned)") {
			t.Errorf("exit %d, stderr %q; want 0 and the sha256 with the warning", r.code, r.stderr)
		}
		if _, err := os.Stat(filepath.Join(models, file)); err != nil {
			t.Error(err)
		}
	})
	for _, tc := range []struct {
		name      string
		body      []byte
		announced []byte
		says      string
	}{
		{"wrong content", append(bytes.Clone(body[:len(body)-1]), body[len(body)-1]^1), body, "checksum mismatch for " + file + ": the server announced sha256 " + sum},
		{"short", body[:len(body)/2], body, "size mismatch for " + file},
		{"not ggml", []byte("<html>rate limited</html>"), []byte("<html>rate limited</html>"), file + " is not a ggml model file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, _, _ := hubServer(t, tc.body, true, tc.announced)
			r, models := run(t, url)
			if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, tc.says) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1 and %q", r.code, r.stdout, r.stderr, tc.says)
			}
			if _, err := os.Stat(filepath.Join(models, file)); err == nil {
				t.Error("the bad download was put in place")
			}
			if _, err := os.Stat(filepath.Join(models, file+".part.bad")); err != nil {
				t.Errorf("the bad download was not kept aside: %v", err)
			}
		})
	}
	t.Run("resume", func(t *testing.T) {
		url, _, ranged := hubServer(t, body, true, body)
		models := filepath.Join(t.TempDir(), "models")
		os.MkdirAll(models, 0o755)
		os.WriteFile(filepath.Join(models, file+".part"), body[:len(body)/3], 0o644)
		r := runScript(t, []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin", "YAZ_MODEL_DIR=" + models, "YAZ_PARAKEET_BASE_URL=" + url},
			t.TempDir(), prog, name)
		got, _ := os.ReadFile(filepath.Join(models, file))
		if r.code != 0 || ranged.Load() != 1 || !bytes.Equal(got, body) {
			t.Errorf("exit %d, %d ranged requests, file intact %v; want 0, 1, true\n%s", r.code, ranged.Load(), bytes.Equal(got, body), r.stderr)
		}
	})
	t.Run("offline", func(t *testing.T) {
		base := closedURL(t)
		r, models := run(t, base)
		want := "yaz-fetch-model: download of " + base + "/" + file + " failed (offline? behind a proxy?)"
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, stderr %q; want 1 and %q", r.code, r.stderr, want)
		}
		if left, _ := filepath.Glob(filepath.Join(models, "*")); len(left) > 0 {
			t.Errorf("left %v behind", left)
		}
	})
}

// writeParakeetModel stands in for yaz-fetch-model
// parakeet-tdt-0.6b-v3-q8_0: a generated Parakeet model (parakeet-mini)
// under that name in the models folder, for the README's examples that use
// it.
func (s *session) writeParakeetModel(t *testing.T) {
	model := filepath.Join(s.home, ".local", "share", "yazses", "models", "ggml-parakeet-tdt-0.6b-v3-q8_0.bin")
	if err := os.MkdirAll(filepath.Dir(model), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := testmodel.WriteFile(model, testmodel.ParakeetMini, 1); err != nil {
		t.Fatal(err)
	}
}
