// alsa-lib prints its own diagnostics to stderr through a process-wide
// error handler; quiet.go replaces that handler with one that hands each
// message to Go (yazAlsaMessage), which logs it at debug. libasound is
// reached with dlopen, as miniaudio reaches it: dlopen of the same soname
// returns the same library, so the handler set here is the one miniaudio's
// copy uses. The handle is never closed, so the handler outlives every
// miniaudio context.

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>

#include "_cgo_export.h"

typedef void (*yaz_snd_lib_error_handler_t)(const char *file, int line, const char *function, int err, const char *fmt, ...);
typedef int (*yaz_snd_lib_error_set_handler_t)(yaz_snd_lib_error_handler_t handler);

static void yaz_alsa_error(const char *file, int line, const char *function, int err, const char *fmt, ...) {
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	yazAlsaMessage((char *)(file ? file : ""), line, (char *)(function ? function : ""), err, msg);
}

// yaz_quiet_alsa installs the handler. It returns 0 on success, 1 when
// libasound is not installed (nothing to quiet), 2 when it lacks the
// function, or the handler's own error.
int yaz_quiet_alsa(void) {
	void *h = dlopen("libasound.so.2", RTLD_NOW | RTLD_GLOBAL);
	if (h == NULL) {
		h = dlopen("libasound.so", RTLD_NOW | RTLD_GLOBAL);
	}
	if (h == NULL) {
		return 1;
	}
	yaz_snd_lib_error_set_handler_t set = (yaz_snd_lib_error_set_handler_t)dlsym(h, "snd_lib_error_set_handler");
	if (set == NULL) {
		return 2;
	}
	return set(yaz_alsa_error);
}
