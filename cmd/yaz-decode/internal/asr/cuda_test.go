package asr

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The CUDA module (yaz-ggml-cuda.so, internal/ggmlgpu's yaz_cuda.c) is
// opened once per process, before ggml lists its devices: each case below
// is a fresh process (deviceChild). Vulkan is kept out of the children
// (VK_ICD_FILENAMES=/nonexistent), so that --device gpu finds no GPU and
// its warning shows what it says about CUDA.

// cudaChild is deviceChild with Vulkan kept out.
func cudaChild(t *testing.T, exe string, env ...string) deviceReport {
	t.Helper()
	return deviceChild(t, exe, append([]string{"VK_ICD_FILENAMES=/nonexistent"}, env...)...)
}

// noCUDA fails t unless r is a process that runs on the CPU with no CUDA
// device, and says note about CUDA ("": nothing) in its notes and in
// --device gpu's warning.
func noCUDA(t *testing.T, r deviceReport, note string) {
	t.Helper()
	for _, d := range r.Devices {
		if strings.HasPrefix(d, "CUDA") {
			t.Errorf("devices %q: want no CUDA device", r.Devices)
		}
	}
	if r.Auto != "CPU" {
		t.Errorf("auto = %s, want the CPU", r.Auto)
	}
	switch {
	case note == "" && len(r.Notes) != 0:
		t.Errorf("notes %q, want none", r.Notes)
	case note != "" && (len(r.Notes) != 1 || !strings.HasPrefix(r.Notes[0], "CUDA: ") || !strings.Contains(r.Notes[0], note)):
		t.Errorf("notes %q, want one: CUDA: ...%s...", r.Notes, note)
	case note != "" && !strings.Contains(r.GPUWarning, "CUDA: "+r.Notes[0][len("CUDA: "):]):
		t.Errorf("--device gpu's warning %q does not say why CUDA is not there (%q)", r.GPUWarning, r.Notes[0])
	case !strings.Contains(r.GPUWarning, "no hardware GPU found: decoding on the CPU"):
		t.Errorf("--device gpu's warning = %q, want no hardware GPU found, on the CPU", r.GPUWarning)
	}
}

// loadedLib is the path of a shared library this process has mapped whose
// file name starts with prefix ("libc.so").
func loadedLib(t *testing.T, prefix string) string {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if p := fields[len(fields)-1]; strings.HasPrefix(p, "/") && strings.HasPrefix(filepath.Base(p), prefix) {
			return p
		}
	}
	t.Fatalf("no %s* mapped in this process", prefix)
	return ""
}

// TestCUDAModuleNotThere: every build looks for the CUDA module and runs
// on its other devices when there is none, or when what it finds is not
// one: a YAZ_CUDA_MODULE naming nothing, a file that is no shared object,
// a shared object that is not the module. Each says why in one line (the
// list's notes, --device gpu's error); none installed, or NoGPU first
// (--device cpu), says nothing.
func TestCUDAModuleNotThere(t *testing.T) {
	text := filepath.Join(t.TempDir(), "yaz-ggml-cuda.so")
	if err := os.WriteFile(text, []byte("not a shared object\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	libc := loadedLib(t, "libc.so")
	for _, tc := range []struct{ name, env, note string }{
		{"none installed", "YAZ_CUDA_MODULE=none", ""},
		{"named, not there", "YAZ_CUDA_MODULE=/nonexistent/yaz-ggml-cuda.so", "YAZ_CUDA_MODULE=/nonexistent/yaz-ggml-cuda.so: no such file"},
		{"not a shared object", "YAZ_CUDA_MODULE=" + text, text + ": "},
		{"not the module", "YAZ_CUDA_MODULE=" + libc, libc + ": not a YazSes CUDA module"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noCUDA(t, cudaChild(t, os.Args[0], tc.env), tc.note)
		})
	}
	t.Run("NoGPU first", func(t *testing.T) {
		noCUDA(t, cudaChild(t, os.Args[0], "YAZ_CUDA_MODULE=/nonexistent/yaz-ggml-cuda.so", "YAZ_ASR_NOGPU=1"), "")
	})
}

// cudaModule is the build's CUDA module (YAZ_CUDA_MODULE, which make test
// sets when the configuration has one); the test is skipped without it,
// and TestCUDAModuleBuilt fails when make test expected one.
func cudaModule(t *testing.T) string {
	t.Helper()
	m := os.Getenv("YAZ_CUDA_MODULE")
	if m == "" || m == "none" {
		t.Skip("no CUDA module in this build (make test sets YAZ_CUDA_MODULE where the configuration builds one: nvcc, YAZ_GPU=cuda,vulkan)")
	}
	if _, err := os.Stat(m); err != nil {
		t.Fatalf("YAZ_CUDA_MODULE: %v", err)
	}
	return m
}

// TestCUDAModuleBuilt: a make test whose configuration builds the CUDA
// module (YAZ_TEST_CUDA=1) has it, so the module tests below run instead
// of being skipped unseen.
func TestCUDAModuleBuilt(t *testing.T) {
	m := os.Getenv("YAZ_CUDA_MODULE")
	switch {
	case os.Getenv("YAZ_TEST_CUDA") == "1":
		if _, err := os.Stat(m); err != nil {
			t.Fatalf("make test expects the CUDA module (YAZ_GPU=%s) and it is not there: %v; make setup builds it", os.Getenv("YAZ_GPU"), err)
		}
		t.Log("the CUDA module is built: its tests run")
	default:
		t.Log("no CUDA module in this configuration (YAZ_TEST_CUDA is not 1): its tests are skipped")
	}
}

// stubDriver is a folder with libcuda.so.1 standing for the NVIDIA
// driver: the CUDA toolkit's own stub library (stubs/libcuda.so, which
// the module was linked against),
// every call of which fails as a machine with no GPU would. With it on
// LD_LIBRARY_PATH the real module opens, its CUDA runtime starts and finds
// no device.
func stubDriver(t *testing.T, module string) string {
	t.Helper()
	cache, err := os.ReadFile(filepath.Join(filepath.Dir(module), "CMakeCache.txt"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^CUDA_cuda_driver_LIBRARY:FILEPATH=(.+)$`).FindSubmatch(cache)
	if m == nil {
		t.Fatal("the module's CMakeCache.txt names no CUDA_cuda_driver_LIBRARY")
	}
	stub := string(m[1])
	if _, err := os.Stat(stub); err != nil {
		t.Fatalf("the CUDA toolkit's driver stub: %v", err)
	}
	dir := t.TempDir()
	if err := os.Symlink(stub, filepath.Join(dir, "libcuda.so.1")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCUDAModule: the real module, built by make setup.
//   - No NVIDIA driver (no libcuda.so.1 on this machine): the module does
//     not open, the line names the missing library, the CPU decodes.
//   - The toolkit's driver stub: the module opens (every symbol it needs
//     from ggml resolves against the program, RTLD_NOW), ggml-cuda starts,
//     finds no device, and says so; the CPU decodes.
//   - A module from another ggml: refused before it is trusted with
//     ggml's structures, with what to do.
//   - Installed: found next to the program, and in ../lib/yazses beside
//     its folder, with no YAZ_CUDA_MODULE.
func TestCUDAModule(t *testing.T) {
	module := cudaModule(t)
	stub := stubDriver(t, module)
	t.Run("no driver", func(t *testing.T) {
		if out, _ := exec.Command("/sbin/ldconfig", "-p").Output(); bytes.Contains(out, []byte("libcuda.so.1 ")) {
			t.Skip("this machine has an NVIDIA driver (libcuda.so.1)")
		}
		noCUDA(t, cudaChild(t, os.Args[0], "YAZ_CUDA_MODULE="+module), "libcuda.so.1: cannot open shared object file")
	})
	t.Run("stub driver", func(t *testing.T) {
		noCUDA(t, cudaChild(t, os.Args[0], "YAZ_CUDA_MODULE="+module, "LD_LIBRARY_PATH="+stub), "CUDA finds no device")
	})
	t.Run("another ggml", func(t *testing.T) {
		b, err := os.ReadFile(module)
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(`ggml [0-9]+\.[0-9]+\.[0-9]+\x00`)
		loc := re.FindIndex(b)
		if loc == nil {
			t.Fatal("the module holds no ggml version")
		}
		other := bytes.Clone(b)
		for i := loc[0] + len("ggml "); i < loc[1]-1; i++ {
			if other[i] != '.' {
				other[i] = '9'
			}
		}
		copyPath := filepath.Join(t.TempDir(), "yaz-ggml-cuda.so")
		if err := os.WriteFile(copyPath, other, 0o644); err != nil {
			t.Fatal(err)
		}
		want := copyPath + " was built from " + string(other[loc[0]:loc[1]-1]) + " and this program from " + string(b[loc[0]:loc[1]-1]) + ": rebuild it with make setup"
		noCUDA(t, cudaChild(t, os.Args[0], "YAZ_CUDA_MODULE="+copyPath, "LD_LIBRARY_PATH="+stub), want)
	})
	for _, layout := range []struct{ name, exe, module string }{
		{"installed beside the program", "bin/asr.test", "bin/yaz-ggml-cuda.so"},
		{"installed in lib/yazses", "bin/asr.test", "lib/yazses/yaz-ggml-cuda.so"},
	} {
		t.Run(layout.name, func(t *testing.T) {
			root := t.TempDir()
			copyFile(t, os.Args[0], filepath.Join(root, layout.exe), 0o755)
			copyFile(t, module, filepath.Join(root, layout.module), 0o644)
			// Found (no YAZ_CUDA_MODULE): the stub driver's line, not silence.
			noCUDA(t, cudaChild(t, filepath.Join(root, layout.exe), "YAZ_CUDA_MODULE=", "LD_LIBRARY_PATH="+stub), "CUDA finds no device")
		})
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}
