package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSetupWhisperGPUChoice: YAZ_GPU and the tools found choose the
// configuration and its build folder (--build-dir, --features), with a
// stub glslc and pkg-config on PATH standing for the Vulkan build's tools;
// asking for a backend whose tools are missing is one line and exit 1; a
// Vulkan build configures with -DGGML_VULKAN=ON in build-vulkan and leaves
// the CPU folder alone.
func TestSetupWhisperGPUChoice(t *testing.T) {
	w := newWorld(t, "YAZ_GPU=auto")
	src := w.getenv("WHISPER_CPP_DIR")
	bin := strings.Split(w.getenv("PATH"), ":")[0] // the stub cmake's folder
	query := func(t *testing.T, extra ...string) (string, string, error) {
		t.Helper()
		cmd := exec.Command(script(), extra[0])
		cmd.Env = append(append([]string{}, w.env...), extra[1:]...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return strings.TrimSpace(out.String()), errb.String(), err
	}
	expect := func(t *testing.T, what, env, want string) {
		t.Helper()
		got, stderr, err := query(t, what, env)
		if err != nil || got != want {
			t.Errorf("%s %s = %q, %v (%s); want %q", env, what, got, err, stderr, want)
		}
	}
	// No tools at all (PATH has the stub cmake only, and /usr/bin: a
	// pkg-config that fails stands in front of the real one).
	writeExe(t, filepath.Join(bin, "pkg-config"), "#!/bin/sh\nexit 1\n")
	expect(t, "--build-dir", "YAZ_GPU=auto", w.cache+"/build")
	expect(t, "--features", "YAZ_GPU=auto", "cpu")
	if _, stderr, err := query(t, "--build-dir", "YAZ_GPU=vulkan"); err == nil || !strings.Contains(stderr, "glslc, libvulkan-dev and spirv-headers") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("YAZ_GPU=vulkan without the tools: %v, stderr %q; want one line naming them and a failure", err, stderr)
	}
	// The tools, but a source without ggml-vulkan: auto builds the CPU.
	writeExe(t, filepath.Join(bin, "pkg-config"), "#!/bin/sh\nexit 0\n")
	writeExe(t, filepath.Join(bin, "glslc"), "#!/bin/sh\nexit 0\n")
	expect(t, "--features", "YAZ_GPU=auto", "cpu")
	// And with it: Vulkan, in a folder of its own; none still the CPU.
	if err := os.MkdirAll(filepath.Join(src, "ggml", "src", "ggml-vulkan"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "ggml", "src", "ggml-vulkan", "CMakeLists.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	expect(t, "--build-dir", "YAZ_GPU=auto", w.cache+"/build-vulkan")
	expect(t, "--features", "YAZ_GPU=auto", "cpu vulkan")
	expect(t, "--build-dir", "YAZ_GPU=none", w.cache+"/build")
	if _, stderr, err := query(t, "--build-dir", "YAZ_GPU=cuda"); err == nil || !strings.Contains(stderr, "nvcc") {
		t.Errorf("YAZ_GPU=cuda without nvcc: %v, stderr %q; want a failure naming nvcc", err, stderr)
	}
	if _, stderr, err := query(t, "--build-dir", "YAZ_GPU=metal"); err == nil || !strings.Contains(stderr, "want auto, none, vulkan") {
		t.Errorf("YAZ_GPU=metal: %v, stderr %q; want a failure listing the values", err, stderr)
	}

	// A build: the stub cmake records its arguments; the CPU folder stays
	// untouched.
	cmake := filepath.Join(bin, "cmake")
	orig, err := os.ReadFile(cmake)
	if err != nil {
		t.Fatal(err)
	}
	args := filepath.Join(w.stub, "configure-args")
	writeExe(t, cmake, strings.Replace(string(orig), `if [ "$1" = "-S" ]; then`, `if [ "$1" = "-S" ]; then
  echo "$@" > "`+args+`"`, 1))
	if err := os.WriteFile(filepath.Join(w.stub, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := w.start(t)
	r.wait(t, "setup-whisper.sh (Vulkan)")
	got, err := os.ReadFile(args)
	if err != nil || !strings.Contains(string(got), "-DGGML_VULKAN=ON") || !strings.Contains(string(got), w.cache+"/build-vulkan") {
		t.Errorf("configure arguments %q (%v): want -DGGML_VULKAN=ON in build-vulkan", got, err)
	}
	if _, err := os.Stat(filepath.Join(w.cache, "build")); err == nil {
		t.Errorf("the Vulkan build made the CPU folder %s", filepath.Join(w.cache, "build"))
	}
	if _, err := os.Stat(filepath.Join(w.cache, "build-vulkan", "src", "libwhisper.a")); err != nil {
		t.Errorf("no libraries in build-vulkan: %v", err)
	}
}

// getenv is the value of key in the world's environment.
func (w *world) getenv(key string) string {
	for _, kv := range w.env {
		if k, v, _ := strings.Cut(kv, "="); k == key {
			return v
		}
	}
	return ""
}

func writeExe(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestSetupWhisperCUDAArch: YAZ_CUDA_ARCH builds ggml-cuda for that one
// GPU architecture (CMAKE_CUDA_ARCHITECTURES), in a folder of its own, so
// a build for every architecture and one for a single one never share a
// folder; without it the folder and the flags are as before.
func TestSetupWhisperCUDAArch(t *testing.T) {
	w := newWorld(t, "YAZ_GPU=cuda")
	src := w.getenv("WHISPER_CPP_DIR")
	bin := strings.Split(w.getenv("PATH"), ":")[0]
	writeExe(t, filepath.Join(bin, "nvcc"), "#!/bin/sh\nexit 0\n")
	if err := os.MkdirAll(filepath.Join(src, "ggml", "src", "ggml-cuda"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "ggml", "src", "ggml-cuda", "CMakeLists.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ arch, dir string }{{"", "build-cuda"}, {"90", "build-cuda-sm90"}} {
		cmd := exec.Command(script(), "--build-dir")
		cmd.Env = append(append([]string{}, w.env...), "YAZ_CUDA_ARCH="+tc.arch)
		out, err := cmd.Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != filepath.Join(w.cache, tc.dir) {
			t.Errorf("YAZ_CUDA_ARCH=%q --build-dir = %q, %v; want %s", tc.arch, got, err, filepath.Join(w.cache, tc.dir))
		}
	}
	cmd := exec.Command(script(), "--build-dir")
	cmd.Env = append(append([]string{}, w.env...), "YAZ_CUDA_ARCH=sm_90")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "YAZ_CUDA_ARCH") {
		t.Errorf("YAZ_CUDA_ARCH=sm_90: %v, %q; want one line asking for the number (90)", err, out)
	}

	cmake := filepath.Join(bin, "cmake")
	orig, err := os.ReadFile(cmake)
	if err != nil {
		t.Fatal(err)
	}
	args := filepath.Join(w.stub, "configure-args")
	writeExe(t, cmake, strings.Replace(string(orig), `if [ "$1" = "-S" ]; then`, `if [ "$1" = "-S" ]; then
  echo "$@" > "`+args+`"`, 1))
	if err := os.WriteFile(filepath.Join(w.stub, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w.env = append(w.env, "YAZ_CUDA_ARCH=90")
	r := w.start(t)
	r.wait(t, "setup-whisper.sh (CUDA, sm_90)")
	got, err := os.ReadFile(args)
	if err != nil || !strings.Contains(string(got), "-DGGML_CUDA=ON") || !strings.Contains(string(got), "-DCMAKE_CUDA_ARCHITECTURES=90") ||
		!strings.Contains(string(got), w.cache+"/build-cuda-sm90") {
		t.Errorf("configure arguments %q (%v): want -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 in build-cuda-sm90", got, err)
	}
}
