package readme

import (
	"bytes"
	"context"
	"crypto/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testmodel"
)

// closedURL is an http URL on which nothing listens: a download from it
// fails at once, as offline.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// lyingServer serves random bytes for every model: what a broken mirror or
// a tampered download looks like. It counts the requests.
func lyingServer(t *testing.T) (url string, hits *atomic.Int64) {
	t.Helper()
	hits = new(atomic.Int64)
	body := make([]byte, 64<<10)
	if _, err := rand.Read(body); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, hits
}

type result struct {
	stdout, stderr string
	code           int
}

// runScript runs prog to its end, within hang (demo.sh transcribes with a
// generated model; a fetch reads from a local server).
func runScript(t *testing.T, env []string, dir, prog string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	cmd := bounded(ctx, prog, args...)
	cmd.Env = env
	cmd.Dir = dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		t.Fatalf("%s: %v", prog, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s %q: still running after %v (killed)\nstderr:\n%s", prog, args, hang, tail(stderr.String()))
	}
	return result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

// TestFetchModelCLI: yaz-fetch-model's --help, usage errors and --list,
// which marks the models that are in the models folder.
func TestFetchModelCLI(t *testing.T) {
	inst := install(t)
	prog := filepath.Join(inst.bin, "yaz-fetch-model")
	home := t.TempDir()
	models := filepath.Join(home, ".local", "share", "yazses", "models")
	env := []string{"HOME=" + home, "PATH=/usr/bin:/bin"}

	r := runScript(t, env, home, prog, "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "usage: yaz-fetch-model NAME") || !strings.Contains(r.stdout, "tiny.en") || r.stderr != "" {
		t.Errorf("--help: exit %d, stdout %q, stderr %q; want 0 and the usage with the names on stdout", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{nil, {"nope"}, {"--bogus"}, {"base.en", "tiny.en"}} {
		r := runScript(t, env, home, prog, args...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, "yaz-fetch-model: ") || !strings.Contains(r.stderr, "usage:") || r.stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and what was wrong, then the usage, on stderr", args, r.code, r.stdout, r.stderr)
		}
	}

	list := func() map[string]string {
		t.Helper()
		r := runScript(t, env, home, prog, "--list")
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("--list: exit %d, stderr %q", r.code, r.stderr)
		}
		marks := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			f := regexp.MustCompile(`^(\S+)\s+(\S+)\s+(\S+)\s*(.*)$`).FindStringSubmatch(line)
			if f == nil || f[3] != "ggml-"+f[1]+".bin" {
				t.Fatalf("--list line %q: want NAME SIZE FILE [MARK]", line)
			}
			marks[f[1]] = f[4]
		}
		return marks
	}
	marks := list()
	if len(marks) < 8 || marks["base.en"] != "" || marks["tiny.en"] != "" {
		t.Errorf("--list with no models: %q", marks)
	}
	if err := os.MkdirAll(models, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ggml-tiny.en.bin", "ggml-small.bin.part"} {
		if err := os.WriteFile(filepath.Join(models, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	marks = list()
	for name, want := range map[string]string{"tiny.en": "installed", "base.en": "", "tiny": "", "small": "partly downloaded (run again to resume)"} {
		if marks[name] != want {
			t.Errorf("--list marks %s %q, want %q", name, marks[name], want)
		}
	}
}

// TestFetchModelOffline: without a network the download fails at once with
// one line that names the address and what to do, and leaves nothing behind.
func TestFetchModelOffline(t *testing.T) {
	inst := install(t)
	home := t.TempDir()
	models := filepath.Join(home, "models")
	base := closedURL(t)
	r := runScript(t, []string{"HOME=" + home, "PATH=/usr/bin:/bin", "YAZ_MODEL_DIR=" + models, "YAZ_MODEL_BASE_URL=" + base},
		home, filepath.Join(inst.bin, "yaz-fetch-model"), "tiny.en")
	if r.code != 1 || r.stdout != "" {
		t.Errorf("offline: exit %d, stdout %q; want 1 and nothing", r.code, r.stdout)
	}
	want := "yaz-fetch-model: download of " + base + "/ggml-tiny.en.bin failed (offline? behind a proxy?)"
	if !strings.Contains(r.stderr, want) {
		t.Errorf("offline: stderr %q, want %q", r.stderr, want)
	}
	if left, _ := filepath.Glob(filepath.Join(models, "*")); len(left) > 0 {
		t.Errorf("offline: left %v behind", left)
	}
}

// TestFetchModelVerifies: a download whose SHA-1 is not the published one
// is never put in place.
func TestFetchModelVerifies(t *testing.T) {
	inst := install(t)
	home := t.TempDir()
	models := filepath.Join(home, "models")
	url, hits := lyingServer(t)
	r := runScript(t, []string{"HOME=" + home, "PATH=/usr/bin:/bin", "YAZ_MODEL_DIR=" + models, "YAZ_MODEL_BASE_URL=" + url},
		home, filepath.Join(inst.bin, "yaz-fetch-model"), "tiny.en")
	if r.code != 1 || !strings.Contains(r.stderr, "checksum mismatch for ggml-tiny.en.bin") {
		t.Errorf("bad download: exit %d, stderr %q; want 1 and a checksum mismatch", r.code, r.stderr)
	}
	if hits.Load() == 0 {
		t.Error("the server was never asked")
	}
	if _, err := os.Stat(filepath.Join(models, "ggml-tiny.en.bin")); err == nil {
		t.Error("the unverified download was put in place")
	}
	if _, err := os.Stat(filepath.Join(models, "ggml-tiny.en.bin.part.bad")); err != nil {
		t.Errorf("the bad download was not kept aside: %v", err)
	}
}

// TestDemo: make demo's script without a network falls back to a generated
// model with the message it always printed; with a download that fails its
// checksum it does the same; with a model in the folder it fetches nothing
// and uses it. Each time jfk.wav is transcribed.
func TestDemo(t *testing.T) {
	inst := install(t)
	demo := func(t *testing.T, base string, dataHome string) result {
		env := append(os.Environ(), "BIN="+inst.build, "XDG_DATA_HOME="+dataHome, "YAZ_MODEL_BASE_URL="+base, "YAZ_MODEL=", "YAZ_MODEL_DIR=")
		r := runScript(t, env, world.root, filepath.Join(world.root, "scripts", "demo.sh"))
		if r.code != 0 {
			t.Fatalf("demo.sh: exit %d\n%s", r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, "00:00:00,000 --> ") || !strings.Contains(r.stdout, `{"start_ms":`) {
			t.Errorf("demo.sh printed no subtitles or no stream JSON for jfk.wav:\n%s", r.stdout)
		}
		return r
	}
	const fallback = "No real model found: using a generated random-weight model (the words will be gibberish)."
	t.Run("offline", func(t *testing.T) {
		data := t.TempDir()
		base := closedURL(t)
		r := demo(t, base, data)
		for _, want := range []string{"fetching tiny.en", "download of " + base + "/ggml-tiny.en.bin failed (offline?", fallback} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
			}
		}
		if left, _ := filepath.Glob(filepath.Join(data, "yazses", "models", "*")); len(left) > 0 {
			t.Errorf("left %v behind", left)
		}
	})
	t.Run("checksum", func(t *testing.T) {
		data := t.TempDir()
		url, hits := lyingServer(t)
		r := demo(t, url, data)
		for _, want := range []string{"checksum mismatch for ggml-tiny.en.bin", fallback} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
			}
		}
		if hits.Load() == 0 {
			t.Error("the demo never tried to fetch tiny.en")
		}
	})
	t.Run("model present", func(t *testing.T) {
		data := t.TempDir()
		model := filepath.Join(data, "yazses", "models", "ggml-tiny.en.bin")
		if err := os.MkdirAll(filepath.Dir(model), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := testmodel.WriteFile(model, testmodel.Mini, 1); err != nil {
			t.Fatal(err)
		}
		url, hits := lyingServer(t)
		r := demo(t, url, data)
		if !strings.Contains(r.stderr, "Model: "+model) || strings.Contains(r.stderr, fallback) {
			t.Errorf("demo did not use %s:\n%s", model, r.stderr)
		}
		if hits.Load() != 0 {
			t.Errorf("the demo fetched a model although one was there (%d requests)", hits.Load())
		}
	})
}

// TestFetchVADModel: yaz-fetch-model silero-v5.1.2 fetches the Silero VAD
// model from its own hub repository (ggml-org/whisper-vad), resumes a
// partial download with a range request, and puts nothing in place that
// is not exactly the pinned size and SHA-256. (The success path needs the
// real ggml-silero-v5.1.2.bin, which no test here has.)
func TestFetchVADModel(t *testing.T) {
	inst := install(t)
	prog := filepath.Join(inst.bin, "yaz-fetch-model")
	const file, size = "ggml-silero-v5.1.2.bin", 885098
	run := func(t *testing.T, env ...string) (result, string) {
		t.Helper()
		home := t.TempDir()
		models := filepath.Join(home, "models")
		env = append([]string{"HOME=" + home, "PATH=/usr/bin:/bin", "YAZ_MODEL_DIR=" + models}, env...)
		return runScript(t, env, home, prog, "silero-v5.1.2"), models
	}
	placed := func(t *testing.T, models string) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(models, file)); err == nil {
			t.Error("an unverified download was put in place")
		}
	}

	t.Run("list", func(t *testing.T) {
		home := t.TempDir()
		models := filepath.Join(home, ".local", "share", "yazses", "models")
		env := []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
		r := runScript(t, env, home, prog, "--list")
		if !regexp.MustCompile(`(?m)^silero-v5\.1\.2 +864KiB +` + regexp.QuoteMeta(file) + `$`).MatchString(r.stdout) {
			t.Errorf("--list lacks the VAD model:\n%s", r.stdout)
		}
		os.MkdirAll(models, 0o755)
		os.WriteFile(filepath.Join(models, file), []byte("x"), 0o644)
		r = runScript(t, env, home, prog, "--list")
		if !regexp.MustCompile(`(?m)^silero-v5\.1\.2 .* installed$`).MatchString(r.stdout) {
			t.Errorf("--list does not mark the VAD model installed:\n%s", r.stdout)
		}
	})

	t.Run("hub address", func(t *testing.T) {
		// A proxy on which nothing listens: the address the script asks for
		// shows in its error, and nothing leaves the machine.
		proxy := closedURL(t)
		r, models := run(t, "https_proxy="+proxy, "HTTPS_PROXY="+proxy)
		want := "yaz-fetch-model: download of https://huggingface.co/ggml-org/whisper-vad/resolve/main/" + file + " failed (offline? behind a proxy?)"
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, stdout %q, stderr %q; want 1 and %q", r.code, r.stdout, r.stderr, want)
		}
		if left, _ := filepath.Glob(filepath.Join(models, "*")); len(left) > 0 {
			t.Errorf("left %v behind", left)
		}
	})

	// A server that serves body for the VAD file (with ranges, as the hub
	// does) and records the Range headers it is asked for.
	serve := func(t *testing.T, body []byte) (string, *[]string) {
		var ranges []string
		var mu sync.Mutex
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/"+file {
				http.NotFound(w, r)
				return
			}
			mu.Lock()
			ranges = append(ranges, r.Header.Get("Range"))
			mu.Unlock()
			http.ServeContent(w, r, file, time.Time{}, bytes.NewReader(body))
		}))
		t.Cleanup(srv.Close)
		return srv.URL, &ranges
	}
	random := func(n int) []byte {
		b := make([]byte, n)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		return b
	}

	t.Run("resume, then checksum", func(t *testing.T) {
		body := random(size)
		url, ranges := serve(t, body)
		home := t.TempDir()
		models := filepath.Join(home, "models")
		os.MkdirAll(models, 0o755)
		part := filepath.Join(models, file+".part")
		os.WriteFile(part, body[:300000], 0o644)
		r := runScript(t, []string{"HOME=" + home, "PATH=/usr/bin:/bin", "YAZ_MODEL_DIR=" + models, "YAZ_MODEL_BASE_URL=" + url}, home, prog, "silero-v5.1.2")
		if r.code != 1 || !strings.Contains(r.stderr, "checksum mismatch for "+file+" (want sha256 29940d98d42b91fbd05ce489f3ecf7c72f0a42f027e4875919a28fb4c04ea2cf)") {
			t.Errorf("exit %d, stderr %q; want 1 and a SHA-256 mismatch", r.code, r.stderr)
		}
		if len(*ranges) != 1 || (*ranges)[0] != "bytes=300000-" {
			t.Errorf("requests with ranges %q, want one from byte 300000", *ranges)
		}
		if got, err := os.ReadFile(part + ".bad"); err != nil || !bytes.Equal(got, body) {
			t.Errorf("the resumed download (kept aside) is not the served file: %d bytes, %v", len(got), err)
		}
		placed(t, models)
	})

	t.Run("complete part is only checked", func(t *testing.T) {
		url, ranges := serve(t, random(size))
		home := t.TempDir()
		models := filepath.Join(home, "models")
		os.MkdirAll(models, 0o755)
		os.WriteFile(filepath.Join(models, file+".part"), random(size), 0o644)
		r := runScript(t, []string{"HOME=" + home, "PATH=/usr/bin:/bin", "YAZ_MODEL_DIR=" + models, "YAZ_MODEL_BASE_URL=" + url}, home, prog, "silero-v5.1.2")
		if r.code != 1 || !strings.Contains(r.stderr, "checksum mismatch for "+file) || len(*ranges) != 0 {
			t.Errorf("exit %d, stderr %q, %d requests; want 1, a checksum mismatch and no request", r.code, r.stderr, len(*ranges))
		}
		placed(t, models)
	})

	t.Run("size", func(t *testing.T) {
		url, _ := serve(t, random(64<<10))
		r, models := run(t, "YAZ_MODEL_BASE_URL="+url)
		want := "size mismatch for " + file + ": 65536 bytes, want 885098; the download was moved to " + filepath.Join(models, file+".part.bad")
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, stderr %q; want 1 and %q", r.code, r.stderr, want)
		}
		placed(t, models)
	})
}
