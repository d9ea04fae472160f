package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testwait"
)

// stubCmake configures by writing CMakeCache.txt and builds by writing the
// four outputs. A build says it began by touching $STUB/in-build, then
// waits for $STUB/release; a build that starts while another is under way
// fails as the real one did (two builds writing one archive). Each build
// appends a line to $STUB/builds. STUB_FAIL=1 makes the build fail.
const stubCmake = `#!/bin/bash
set -e
stub=$STUB
if [ "$1" = "-S" ]; then
  mkdir -p "$4"
  echo "CMAKE_HOME_DIRECTORY:INTERNAL=$2" > "$4/CMakeCache.txt"
  echo "-- Configuring done (stub)"
  exit 0
fi
[ "$1" = "--build" ] || exit 2
build=$2
# The CUDA module's own build: ggml-cuda alone, in its folder.
case " $* " in *" --target ggml-cuda "*)
  mkdir -p "$build/ggml/src/ggml-cuda"
  echo "[ 40%] Building CUDA object ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/mmq.cu.o"
  touch "$build/ggml/src/ggml-cuda/libggml-cuda.a"
  # The CUDA libraries CMake found (NVIDIA's installer's folder).
  mkdir -p "$stub/cuda/lib64/stubs"
  for v in cudart cublas cublasLt; do touch "$stub/cuda/lib64/lib$v.so"; echo "CUDA_${v}_LIBRARY:FILEPATH=$stub/cuda/lib64/lib$v.so" >> "$build/CMakeCache.txt"; done
  touch "$stub/cuda/lib64/stubs/libcuda.so"
  echo "CUDA_cuda_driver_LIBRARY:FILEPATH=$stub/cuda/lib64/stubs/libcuda.so" >> "$build/CMakeCache.txt"
  echo "$build" >> "$stub/cuda-builds"
  exit 0 ;;
esac
echo "$$" >> "$stub/builds"
if ! mkdir "$stub/building" 2>/dev/null; then
  echo "ar: unable to copy file 'libparakeet.a': another build is writing it" >&2
  exit 1
fi
echo "[  5%] Building C object ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o"
echo "ggml.c:1:1: warning: compiler noise" >&2
# The Vulkan shader generator's own build counts to 100% inside the library's.
echo "[ 50%] Building CXX object CMakeFiles/vulkan-shaders-gen.dir/vulkan-shaders-gen.cpp.o"
echo "[100%] Linking CXX executable vulkan-shaders-gen"
if [ "${STUB_FAIL:-}" = 1 ]; then
  echo "whisper.cpp:42:1: error: stub compile failure" >&2
  rmdir "$stub/building"
  exit 1
fi
touch "$stub/in-build"
for _ in $(seq 1200); do [ -e "$stub/release" ] && break; sleep 0.1; done
mkdir -p "$build/src" "$build/bin"
touch "$build/src/libwhisper.a" "$build/src/libparakeet.a"
printf '#!/bin/sh\n' > "$build/bin/whisper-cli"
printf '#!/bin/sh\n' > "$build/bin/parakeet-cli"
chmod +x "$build/bin/whisper-cli" "$build/bin/parakeet-cli"
echo "[ 55%] Building CXX object src/CMakeFiles/whisper.dir/whisper.cpp.o"
echo "[100%] Linking CXX static library libwhisper.a"
echo "[100%] Built target whisper"
# Each later target counts from 0 again.
echo "[  1%] Performing build step for 'vulkan-shaders-gen'"
echo "[ 98%] Building CXX object examples/CMakeFiles/common.dir/common.cpp.o"
echo "[100%] Built target parakeet-cli"
rmdir "$stub/building"
`

// world is one cache folder, a whisper.cpp source stand-in and the stub.
type world struct {
	cache, stub string
	env         []string
}

func newWorld(t *testing.T, extra ...string) *world {
	t.Helper()
	dir := t.TempDir()
	w := &world{cache: filepath.Join(dir, "cache", "whisper.cpp-1.9.1"), stub: filepath.Join(dir, "stub")}
	src := filepath.Join(dir, "src")
	stubBin := filepath.Join(dir, "bin")
	for _, d := range []string{filepath.Join(src, "include"), stubBin, w.stub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range []string{"whisper.h", "parakeet.h"} {
		if err := os.WriteFile(filepath.Join(src, "include", h), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(stubBin, "cmake"), []byte(stubCmake), 0o755); err != nil {
		t.Fatal(err)
	}
	w.env = append([]string{"HOME=" + dir, "PATH=" + stubBin + ":/usr/bin:/bin", "JOBS=2",
		"WHISPER_CACHE=" + w.cache, "WHISPER_CPP_DIR=" + src, "STUB=" + w.stub}, extra...)
	return w
}

// run is one run of setup-whisper.sh.
type run struct {
	cmd            *exec.Cmd
	stdout, stderr *testwait.Buffer
	done           chan struct{}
	ended          testwait.Signal
	err            error
}

func script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "scripts", "setup-whisper.sh")
}

func (w *world) start(t *testing.T) *run {
	t.Helper()
	r := &run{cmd: exec.Command(script()), stdout: &testwait.Buffer{}, stderr: &testwait.Buffer{}, done: make(chan struct{})}
	r.cmd.Env = w.env
	r.cmd.Stdout, r.cmd.Stderr = r.stdout, r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.err = r.cmd.Wait()
		close(r.done)
		r.ended.Notify()
	}()
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		testwait.Closed(t, r.done, "setup-whisper.sh's end after a kill")
	})
	return r
}

// wait waits for the run's end and fails t unless it succeeded.
func (r *run) wait(t *testing.T, name string) {
	t.Helper()
	testwait.Closed(t, r.done, name+"'s end")
	if r.err != nil {
		t.Errorf("%s: %v\nstderr:\n%s", name, r.err, r.stderr.String())
	}
}

func (w *world) builds(t *testing.T) int {
	b, err := os.ReadFile(filepath.Join(w.stub, "builds"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// TestSetupWhisperLock: a second run against the same cache while the
// first builds says whom it waits for, waits, and reuses the first's
// build (one build); both print the cache. Without the lock the second
// build starts beside the first and fails as two builds into one archive
// did (`ar: unable to copy file 'libparakeet.a'`).
func TestSetupWhisperLock(t *testing.T) {
	w := newWorld(t)
	a := w.start(t)
	w.waitInBuild(t, a, "the first run")
	ctx := testwait.Context(t)
	b := w.start(t)
	if err := testwait.Until(ctx, func() bool {
		return strings.Contains(b.stderr.String(), "waiting for") || isClosed(b.done)
	}, b.stderr, &b.ended); err != nil {
		t.Fatalf("the second run neither waited nor ended: %v", err)
	}
	if err := os.WriteFile(filepath.Join(w.stub, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a.wait(t, "the first run")
	b.wait(t, "the second run")

	want := "setup-whisper: waiting for another build of " + w.cache + " to finish (pid " + strconv.Itoa(a.cmd.Process.Pid) + ","
	if !strings.Contains(b.stderr.String(), want) {
		t.Errorf("second run's stderr:\n%s\nwant a line with %q", b.stderr.String(), want)
	}
	if n := w.builds(t); n != 1 {
		t.Errorf("%d builds, want 1 (the second reuses the first's)", n)
	}
	for name, r := range map[string]*run{"first": a, "second": b} {
		if got := r.stdout.String(); got != w.cache+"\n" {
			t.Errorf("%s run's stdout %q, want the cache %s", name, got, w.cache)
		}
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestSetupWhisperProgress: the build prints a line per stage and the
// library's percentage in steps (not the shader generator's own 100%, nor
// the later targets counting again), then a line for the tools, and
// keeps the compiler's output out of the terminal, in build.log.
func TestSetupWhisperProgress(t *testing.T) {
	w := newWorld(t)
	if err := os.WriteFile(filepath.Join(w.stub, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := w.start(t)
	r.wait(t, "setup-whisper.sh")
	errs := r.stderr.String()
	buildLog := filepath.Join(w.cache, "build.log")
	for _, want := range []string{
		"setup-whisper: configuring whisper.cpp 1.9.1 in " + filepath.Join(w.cache, "build") + " (log: " + buildLog + ")",
		"setup-whisper: compiling whisper.cpp 1.9.1 with 2 jobs",
		"setup-whisper: compiling: 0%\nsetup-whisper: compiling: 50%\nsetup-whisper: compiling: 100%\n" +
			"setup-whisper: compiling the tools (whisper-cli, parakeet, parakeet-cli)\nsetup-whisper: whisper.cpp 1.9.1 built in ",
		"setup-whisper: whisper.cpp 1.9.1 built in ",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	for _, noise := range []string{"Building C", "compiler noise", "Configuring done"} {
		if strings.Contains(errs, noise) {
			t.Errorf("stderr has the compiler's %q:\n%s", noise, errs)
		}
	}
	logb, err := os.ReadFile(buildLog)
	if err != nil || !strings.Contains(string(logb), "compiler noise") || !strings.Contains(string(logb), "Configuring done") {
		t.Errorf("build.log = %q, %v; want the compiler's output", logb, err)
	}

	// A second run finds everything built: no build, no output but the cache.
	again := w.start(t)
	again.wait(t, "the second run")
	if n := w.builds(t); n != 1 || again.stdout.String() != w.cache+"\n" || again.stderr.String() != "" {
		t.Errorf("second run: %d builds, stdout %q, stderr %q; want 1, the cache, nothing", n, again.stdout.String(), again.stderr.String())
	}
}

// TestSetupWhisperFailure: a failed build says so, names build.log and
// shows its last lines (the error).
func TestSetupWhisperFailure(t *testing.T) {
	w := newWorld(t, "STUB_FAIL=1")
	r := w.start(t)
	testwait.Closed(t, r.done, "the run's end")
	errs := r.stderr.String()
	if r.err == nil || !strings.Contains(errs, "setup-whisper: building whisper.cpp failed; the compiler's output is in "+filepath.Join(w.cache, "build.log")) ||
		!strings.Contains(errs, "error: stub compile failure") {
		t.Errorf("exit %v, stderr:\n%s\nwant a failure naming build.log and showing the error", r.err, errs)
	}
	if r.stdout.String() != "" {
		t.Errorf("stdout %q, want nothing", r.stdout.String())
	}
}

// TestSetupWhisperProgressWhileBuilding: a progress line reaches the
// terminal while the build is still compiling, not when it has ended.
// Debian's awk (mawk) read the compiler's output in blocks of its own, so
// a 10-minute build showed nothing until its end and then every line at
// once.
func TestSetupWhisperProgressWhileBuilding(t *testing.T) {
	w := newWorld(t)
	r := w.start(t)
	w.waitInBuild(t, r, "the run")
	ctx := testwait.Context(t)
	// The stub build has printed its 5% and waits for release.
	if err := testwait.Until(ctx, func() bool {
		return strings.Contains(r.stderr.String(), "setup-whisper: compiling: 0%")
	}, r.stderr, &r.ended); err != nil {
		t.Errorf("no progress line while the build ran: %v\nstderr:\n%s", err, r.stderr.String())
	}
	if err := os.WriteFile(filepath.Join(w.stub, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.wait(t, "setup-whisper.sh")
}

// waitInBuild waits until r's stub build has begun (and printed its first
// lines), or fails t if r ends first.
func (w *world) waitInBuild(t *testing.T, r *run, name string) {
	t.Helper()
	inBuild, err := testwait.WatchFile(filepath.Join(w.stub, "in-build"))
	if err != nil {
		t.Fatal(err)
	}
	defer inBuild.Close()
	if err := testwait.Until(testwait.Context(t), func() bool {
		_, err := os.Stat(filepath.Join(w.stub, "in-build"))
		return err == nil
	}, inBuild, &r.ended); err != nil {
		t.Fatalf("%s did not reach its build: %v\nstderr:\n%s", name, err, r.stderr.String())
	}
}
