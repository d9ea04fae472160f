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
	expect := func(t *testing.T, what, env, want string) {
		t.Helper()
		got, stderr, err := w.query(t, what, env)
		if err != nil || got != want {
			t.Errorf("%s %s = %q, %v (%s); want %q", env, what, got, err, stderr, want)
		}
	}
	// No tools at all (PATH has the stub cmake only, and /usr/bin: a
	// pkg-config that fails stands in front of the real one).
	writeExe(t, filepath.Join(bin, "pkg-config"), "#!/bin/sh\nexit 1\n")
	expect(t, "--build-dir", "YAZ_GPU=auto", w.cache+"/build")
	expect(t, "--features", "YAZ_GPU=auto", "cpu")
	if _, stderr, err := w.query(t, "--build-dir", "YAZ_GPU=vulkan"); err == nil || !strings.Contains(stderr, "glslc, libvulkan-dev and spirv-headers") || strings.Count(stderr, "\n") != 1 {
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
	if _, stderr, err := w.query(t, "--build-dir", "YAZ_GPU=cuda"); err == nil || !strings.Contains(stderr, "nvcc") {
		t.Errorf("YAZ_GPU=cuda without nvcc: %v, stderr %q; want a failure naming nvcc", err, stderr)
	}
	if _, stderr, err := w.query(t, "--build-dir", "YAZ_GPU=metal"); err == nil || !strings.Contains(stderr, "want auto, none, vulkan") {
		t.Errorf("YAZ_GPU=metal: %v, stderr %q; want a failure listing the values", err, stderr)
	}

	// A build: the stub cmake records its arguments; the CPU folder stays
	// untouched.
	args := w.recordConfigure(t)
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

// cudaWorld is a world with nvcc on PATH (a stub), a source with
// ggml-cuda and ggml's version, and a g++ that records how the CUDA module
// is linked (into $STUB/link-args) and makes it.
func cudaWorld(t *testing.T, extra ...string) (*world, string) {
	t.Helper()
	w := newWorld(t, extra...)
	src := w.getenv("WHISPER_CPP_DIR")
	bin := strings.Split(w.getenv("PATH"), ":")[0]
	// nvcc --version as NVIDIA's says it, of the release in $NVCC_RELEASE (12.4).
	writeExe(t, filepath.Join(bin, "nvcc"), "#!/bin/sh\necho \"Cuda compilation tools, release ${NVCC_RELEASE:-12.4}, V${NVCC_RELEASE:-12.4}.99\"\n")
	writeExe(t, filepath.Join(bin, "g++"), `#!/bin/sh
echo "$@" > "$STUB/link-args"
while [ $# -gt 0 ]; do
  if [ "$1" = -o ]; then : > "$2"; fi
  shift
done
`)
	if err := os.MkdirAll(filepath.Join(src, "ggml", "src", "ggml-cuda"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "ggml", "src", "ggml-cuda", "CMakeLists.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	version := "set(GGML_VERSION_MAJOR 0)\nset(GGML_VERSION_MINOR 15)\nset(GGML_VERSION_PATCH 1)\n"
	if err := os.WriteFile(filepath.Join(src, "ggml", "CMakeLists.txt"), []byte(version), 0o644); err != nil {
		t.Fatal(err)
	}
	return w, bin
}

// query runs setup-whisper.sh with one argument (--build-dir, --features,
// --cuda-module) in w's environment plus env.
func (w *world) query(t *testing.T, arg string, env ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(script(), arg)
	cmd.Env = append(append([]string{}, w.env...), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return strings.TrimSpace(out.String()), errb.String(), err
}

// TestSetupWhisperCUDAArch: CUDA is a module of its own, built in a folder
// named for the GPU architectures it was built for (YAZ_CUDA_ARCH's one,
// or every one on a machine whose nvidia-smi lists no GPU), beside the
// usual CPU (and Vulkan) build, which never gets ggml-cuda; the module is
// ggml-cuda linked position-independent against the CUDA libraries,
// exporting two symbols, with the ggml version it was built from.
func TestSetupWhisperCUDAArch(t *testing.T) {
	w, _ := cudaWorld(t, "YAZ_GPU=cuda")
	for _, tc := range []struct{ arch, dir string }{{"", "build-cuda"}, {"90", "build-cuda-sm90"}} {
		got, stderr, err := w.query(t, "--cuda-module", "YAZ_CUDA_ARCH="+tc.arch)
		if want := filepath.Join(w.cache, tc.dir, "yaz-ggml-cuda.so"); err != nil || got != want {
			t.Errorf("YAZ_CUDA_ARCH=%q --cuda-module = %q, %v (%s); want %s", tc.arch, got, err, stderr, want)
		}
		if got, _, err := w.query(t, "--build-dir", "YAZ_CUDA_ARCH="+tc.arch); err != nil || got != filepath.Join(w.cache, "build") {
			t.Errorf("YAZ_CUDA_ARCH=%q --build-dir = %q, %v; want the CPU build %s", tc.arch, got, err, filepath.Join(w.cache, "build"))
		}
	}
	if got, _, err := w.query(t, "--features"); err != nil || got != "cpu cuda" {
		t.Errorf("--features = %q, %v; want cpu cuda", got, err)
	}
	if _, out, err := w.query(t, "--build-dir", "YAZ_CUDA_ARCH=sm_90"); err == nil || !strings.Contains(out, "YAZ_CUDA_ARCH") {
		t.Errorf("YAZ_CUDA_ARCH=sm_90: %v, %q; want one line asking for the number (90)", err, out)
	}

	args := w.recordConfigure(t)
	w.env = append(w.env, "YAZ_CUDA_ARCH=90")
	r := w.start(t)
	r.wait(t, "setup-whisper.sh (CUDA, sm_90)")
	got, err := os.ReadFile(args)
	if err != nil {
		t.Fatal(err)
	}
	cbuild := filepath.Join(w.cache, "build-cuda-sm90")
	var main, cuda string
	for _, line := range strings.Split(strings.TrimSpace(string(got)), "\n") {
		switch {
		case strings.Contains(line, "-B "+cbuild+" "):
			cuda = line
		case strings.Contains(line, "-B "+filepath.Join(w.cache, "build")+" "):
			main = line
		}
	}
	if main == "" || strings.Contains(main, "GGML_CUDA") {
		t.Errorf("the CPU build's configure arguments %q: want the build folder and no CUDA (all configures: %q)", main, got)
	}
	for _, want := range []string{"-DGGML_CUDA=ON", "-DCMAKE_CUDA_ARCHITECTURES=90", "-DCMAKE_POSITION_INDEPENDENT_CODE=ON"} {
		if !strings.Contains(cuda, want) {
			t.Errorf("the CUDA module's configure arguments %q lack %s", cuda, want)
		}
	}
	link, err := os.ReadFile(filepath.Join(w.stub, "link-args"))
	if err != nil {
		t.Fatalf("the module was never linked: %v\nstderr:\n%s", err, r.stderr.String())
	}
	for _, want := range []string{"-shared", "-o " + cbuild + "/yaz-ggml-cuda.so.tmp", "-x c " + cbuild + "/yaz-ggml-cuda-source.c -x none", "--whole-archive " + cbuild + "/ggml/src/ggml-cuda/libggml-cuda.a",
		"--version-script=" + cbuild + "/yaz-ggml-cuda.map", "-Wl,-rpath," + w.stub + "/cuda/lib64 ",
		w.stub + "/cuda/lib64/libcudart.so " + w.stub + "/cuda/lib64/libcublas.so " + w.stub + "/cuda/lib64/libcublasLt.so " + w.stub + "/cuda/lib64/stubs/libcuda.so"} {
		if !strings.Contains(string(link), want) {
			t.Errorf("the module's link %q lacks %q", link, want)
		}
	}
	if src, err := os.ReadFile(filepath.Join(cbuild, "yaz-ggml-cuda-source.c")); err != nil || !strings.Contains(string(src), `"ggml 0.15.1"`) {
		t.Errorf("the module's source identity %q, %v: want ggml 0.15.1", src, err)
	}
	if m, err := os.ReadFile(filepath.Join(cbuild, "yaz-ggml-cuda.map")); err != nil || string(m) != "{ global: ggml_backend_cuda_reg; yaz_ggml_cuda_source; local: *; };\n" {
		t.Errorf("the module's exports %q, %v", m, err)
	}
	if _, err := os.Stat(filepath.Join(cbuild, "yaz-ggml-cuda.so")); err != nil {
		t.Errorf("no module: %v", err)
	}
	if errs := r.stderr.String(); !strings.Contains(errs, "compiling ggml's CUDA backend (build-cuda-sm90)") || !strings.Contains(errs, "ggml's CUDA backend built in") {
		t.Errorf("stderr does not say the CUDA module was built:\n%s", errs)
	}
	// Built: a second run builds nothing.
	again := w.start(t)
	again.wait(t, "the second run")
	if b, _ := os.ReadFile(filepath.Join(w.stub, "cuda-builds")); strings.Count(string(b), "\n") != 1 || again.stderr.String() != "" {
		t.Errorf("second run: CUDA builds %q, stderr %q; want one build, nothing said", b, again.stderr.String())
	}
}

// TestSetupWhisperCUDAAuto: under auto, nvcc builds the CUDA module for
// this machine's GPUs when nvidia-smi lists one; with no NVIDIA GPU it is
// not built (every architecture, an hour or more, for a module the machine
// cannot use), and the run says so and how to ask for it.
func TestSetupWhisperCUDAAuto(t *testing.T) {
	w, bin := cudaWorld(t)
	if got, _, err := w.query(t, "--features"); err != nil || got != "cpu" {
		t.Errorf("nvcc, no nvidia-smi: --features = %q, %v; want cpu", got, err)
	}
	if got, _, err := w.query(t, "--cuda-module"); err != nil || got != "" {
		t.Errorf("nvcc, no nvidia-smi: --cuda-module = %q, %v; want nothing", got, err)
	}
	if err := os.WriteFile(filepath.Join(w.stub, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := w.start(t)
	r.wait(t, "setup-whisper.sh (nvcc, no GPU)")
	if errs := r.stderr.String(); !strings.Contains(errs, "nvidia-smi lists no NVIDIA GPU: the CUDA module is not built (YAZ_GPU=cuda,vulkan YAZ_CUDA_ARCH=") {
		t.Errorf("stderr does not say why CUDA was left out:\n%s", errs)
	}
	writeExe(t, filepath.Join(bin, "nvidia-smi"), "#!/bin/sh\necho 'GPU 0: NVIDIA H200 (UUID: GPU-0)'\n")
	if got, _, err := w.query(t, "--features"); err != nil || got != "cpu cuda" {
		t.Errorf("nvcc and a GPU: --features = %q, %v; want cpu cuda", got, err)
	}
	if got, _, err := w.query(t, "--cuda-module"); err != nil || got != filepath.Join(w.cache, "build-cuda-native", "yaz-ggml-cuda.so") {
		t.Errorf("nvcc and a GPU: --cuda-module = %q, %v; want build-cuda-native's", got, err)
	}
}

// TestMakeEnvCUDA: the Makefile passes YAZ_CUDA_ARCH from its own command
// line to setup-whisper.sh, as it passes YAZ_GPU: make -s env YAZ_GPU=cuda
// YAZ_CUDA_ARCH=90 names the sm_90 module for the tests (GNU make 4.3 does
// not export its variables to $(shell), so it named the every-architecture
// folder's module, which was not there).
func TestMakeEnvCUDA(t *testing.T) {
	w, _ := cudaWorld(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-s", "--no-print-directory", "env", "YAZ_GPU=cuda", "YAZ_CUDA_ARCH=90")
	cmd.Dir = filepath.Join(filepath.Dir(script()), "..")
	cmd.Env = append(append([]string{}, w.env...), "PATH="+w.getenv("PATH")+":"+filepath.Dir(goBin), "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make env: %v\n%s", err, out)
	}
	want := "YAZ_CUDA_MODULE=" + filepath.Join(w.cache, "build-cuda-sm90", "yaz-ggml-cuda.so") + " YAZ_TEST_CUDA=1"
	if !strings.Contains(string(out), want) {
		t.Errorf("make env YAZ_GPU=cuda YAZ_CUDA_ARCH=90:\n%s\nwant %s", out, want)
	}
}

// TestSetupWhisperOldNVCC: CUDA 11 (Debian 12's nvcc 11.8) cannot build
// whisper.cpp 1.9.1's ggml-cuda for sm_90 or later (Hopper's programmatic
// launch calls): asking for one is one line naming CUDA 12, at once, not a
// failed build minutes in; every architecture is ggml's list less
// 90-virtual. CUDA 12 takes sm_90.
func TestSetupWhisperOldNVCC(t *testing.T) {
	w, _ := cudaWorld(t, "YAZ_GPU=cuda", "NVCC_RELEASE=11.8")
	if _, stderr, err := w.query(t, "--cuda-module", "YAZ_CUDA_ARCH=90"); err == nil || !strings.Contains(stderr, "nvcc 11 cannot build ggml-cuda for sm_90") || !strings.Contains(stderr, "CUDA 12 or later") {
		t.Errorf("nvcc 11.8, YAZ_CUDA_ARCH=90: %v, stderr %q; want one line naming CUDA 12", err, stderr)
	}
	if got, _, err := w.query(t, "--cuda-module", "YAZ_CUDA_ARCH=86"); err != nil || got != filepath.Join(w.cache, "build-cuda-sm86", "yaz-ggml-cuda.so") {
		t.Errorf("nvcc 11.8, YAZ_CUDA_ARCH=86: %q, %v; want build-cuda-sm86's module", got, err)
	}
	if got, _, err := w.query(t, "--cuda-module", "YAZ_CUDA_ARCH=90", "NVCC_RELEASE=12.4"); err != nil || got != filepath.Join(w.cache, "build-cuda-sm90", "yaz-ggml-cuda.so") {
		t.Errorf("nvcc 12.4, YAZ_CUDA_ARCH=90: %q, %v; want build-cuda-sm90's module", got, err)
	}

	args := w.recordConfigure(t)
	r := w.start(t)
	r.wait(t, "setup-whisper.sh (CUDA 11.8, every architecture)")
	got, err := os.ReadFile(args)
	if want := "-DCMAKE_CUDA_ARCHITECTURES=50-virtual;61-virtual;70-virtual;75-virtual;80-virtual;86-real;89-real"; err != nil || !strings.Contains(string(got), want) {
		t.Errorf("configure arguments %q (%v): want %s", got, err, want)
	}
}

// recordConfigure makes w's stub cmake append each configure's arguments,
// a line each, to a file whose path it returns, and lets builds end at
// once (the stub's release).
func (w *world) recordConfigure(t *testing.T) string {
	t.Helper()
	cmake := filepath.Join(strings.Split(w.getenv("PATH"), ":")[0], "cmake")
	orig, err := os.ReadFile(cmake)
	if err != nil {
		t.Fatal(err)
	}
	args := filepath.Join(w.stub, "configure-args")
	writeExe(t, cmake, strings.Replace(string(orig), `if [ "$1" = "-S" ]; then`, `if [ "$1" = "-S" ]; then
  echo "$@" >> "`+args+`"`, 1))
	if err := os.WriteFile(filepath.Join(w.stub, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return args
}
