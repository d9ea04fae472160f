package audio

/*
#cgo LDFLAGS: -ldl
int yaz_quiet_alsa(void);
*/
import "C"

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
)

// backendLog receives the sound libraries' own diagnostics (at debug).
var backendLog atomic.Pointer[slog.Logger]

// quietOnce installs alsa-lib's error handler once per process.
var quietOnce sync.Once

// quietBackends routes the sound libraries' own chatter to log at debug
// instead of stderr. Without it, a machine with no sound server prints about
// 35 lines of "ALSA lib confmisc.c:855:(parse_card) cannot find card '0'"
// before the one error that says what is wrong (miniaudio's own messages
// already go to the logger through its log callback). The latest logger
// wins: a process has one.
func quietBackends(log *slog.Logger) {
	backendLog.Store(log)
	quietOnce.Do(func() {
		if rc := C.yaz_quiet_alsa(); rc > 1 || rc < 0 {
			log.Debug("alsa-lib: cannot set its error handler; its messages go to stderr", "rc", int(rc))
		}
	})
}

// yazAlsaMessage is alsa-lib's error handler, from any thread.
//
//export yazAlsaMessage
func yazAlsaMessage(file *C.char, line C.int, function *C.char, errnum C.int, msg *C.char) {
	log := backendLog.Load()
	if log == nil {
		return
	}
	attrs := []any{"where", fmt.Sprintf("%s:%d %s", C.GoString(file), int(line), C.GoString(function)),
		"text", strings.TrimSpace(C.GoString(msg))}
	if errnum != 0 {
		attrs = append(attrs, "errno", int(errnum))
	}
	log.Debug("alsa-lib", attrs...)
}
