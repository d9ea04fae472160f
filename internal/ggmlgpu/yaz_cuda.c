// The CUDA side of package ggmlgpu (see cuda.go).
//
// ggml's CUDA backend is not linked into the binaries. scripts/setup-whisper.sh
// builds it, where nvcc is found, as a module of its own, yaz-ggml-cuda.so:
// ggml-cuda linked against the CUDA runtime, cuBLAS and the driver's
// libcuda.so.1, exporting ggml_backend_cuda_reg and the ggml version it was
// built from. yaz_cuda_load opens it at run time and adds its backend to
// ggml's registry; its references to ggml itself resolve against the
// program, which exports them (cuda.go). A machine without the module, the
// CUDA libraries or the driver runs the same binary on its other devices,
// and the reason CUDA is absent is kept for --list-devices and for
// --device gpu's error.

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <ggml.h>
#include <ggml-backend.h>

#include "yaz_cuda.h"

#define YAZ_CUDA_MODULE "yaz-ggml-cuda.so"

static pthread_once_t yaz_cuda_once = PTHREAD_ONCE_INIT;
static int yaz_cuda_off;
static char yaz_cuda_why[1024];
static char yaz_cuda_file[PATH_MAX];

void yaz_cuda_disable(void) { __atomic_store_n(&yaz_cuda_off, 1, __ATOMIC_RELAXED); }

// yaz_cuda_find puts the module's path in yaz_cuda_file: $YAZ_CUDA_MODULE,
// else next to the program, else in ../lib/yazses beside its folder (where
// make install puts it). 0: none (not built or not installed, which is no
// one's mistake), or YAZ_CUDA_MODULE names a file that is not there (said
// in yaz_cuda_why).
static int yaz_cuda_find(void) {
	const char *env = getenv("YAZ_CUDA_MODULE");
	if (env && *env) {
		if (strcmp(env, "none") == 0) {
			return 0;
		}
		snprintf(yaz_cuda_file, sizeof yaz_cuda_file, "%s", env);
		if (access(env, R_OK) != 0) {
			snprintf(yaz_cuda_why, sizeof yaz_cuda_why, "YAZ_CUDA_MODULE=%s: no such file", env);
			return 0;
		}
		return 1;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0) {
		return 0;
	}
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (!slash) {
		return 0;
	}
	*slash = 0;
	const char *places[] = {"%s/" YAZ_CUDA_MODULE, "%s/../lib/yazses/" YAZ_CUDA_MODULE};
	for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
		snprintf(yaz_cuda_file, sizeof yaz_cuda_file, places[i], exe);
		if (access(yaz_cuda_file, R_OK) == 0) {
			return 1;
		}
	}
	yaz_cuda_file[0] = 0;
	return 0;
}

static void yaz_cuda_load_once(void) {
	if (__atomic_load_n(&yaz_cuda_off, __ATOMIC_RELAXED) || !yaz_cuda_find()) {
		return;
	}
	void *lib = dlopen(yaz_cuda_file, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		// dlerror names the file and what it lacked: "libcuda.so.1: cannot
		// open shared object file" is a machine without the NVIDIA driver.
		const char *e = dlerror();
		snprintf(yaz_cuda_why, sizeof yaz_cuda_why, "%s", e ? e : "dlopen failed");
		return;
	}
	const char *(*source)(void) = (const char *(*)(void))dlsym(lib, "yaz_ggml_cuda_source");
	ggml_backend_reg_t (*reg)(void) = (ggml_backend_reg_t(*)(void))dlsym(lib, "ggml_backend_cuda_reg");
	if (!source || !reg) {
		snprintf(yaz_cuda_why, sizeof yaz_cuda_why, "%s: not a YazSes CUDA module (no yaz_ggml_cuda_source or ggml_backend_cuda_reg)", yaz_cuda_file);
		dlclose(lib);
		return;
	}
	// The module and the program share ggml's structures: both must come
	// from the same ggml.
	char want[128];
	snprintf(want, sizeof want, "ggml %s", ggml_version());
	if (strcmp(source(), want) != 0) {
		snprintf(yaz_cuda_why, sizeof yaz_cuda_why, "%s was built from %s and this program from %s: rebuild it with make setup", yaz_cuda_file, source(), want);
		dlclose(lib);
		return;
	}
	ggml_backend_reg_t r = reg();
	if (!r) {
		snprintf(yaz_cuda_why, sizeof yaz_cuda_why, "%s: ggml's CUDA backend did not start", yaz_cuda_file);
		return; // never closed: ggml-cuda may have started threads
	}
	ggml_backend_register(r);
	if (ggml_backend_reg_dev_count(r) == 0) {
		snprintf(yaz_cuda_why, sizeof yaz_cuda_why, "CUDA finds no device (no NVIDIA GPU, or its driver is not loaded: nvidia-smi tells which)");
	}
}

const char *yaz_cuda_load(void) {
	pthread_once(&yaz_cuda_once, yaz_cuda_load_once);
	return yaz_cuda_why;
}
