package asr

/*
#cgo LDFLAGS: -lwhisper -lggml -lggml-base -lggml-cpu -lm -lstdc++
#cgo linux LDFLAGS: -fopenmp
#include <stdlib.h>
#include <whisper.h>

static void yaz_log_discard(enum ggml_log_level level, const char *text, void *user_data) {
	(void)level; (void)text; (void)user_data;
}

// yaz_quiet stops whisper.cpp and ggml from writing their own log lines to
// stderr: our stderr carries slog records only.
static void yaz_quiet(void) {
	whisper_log_set(yaz_log_discard, NULL);
}

// yaz_set_params sets what the Go bindings leave out. Non-speech tokens
// ([Music], (laughs) ...) are suppressed, as whisper-cli -sns does.
static void yaz_set_params(struct whisper_full_params *p, const char *prompt) {
	p->initial_prompt = prompt;
	p->suppress_nst = true;
}
*/
import "C"

import (
	"sync"
	"unsafe"

	whisper "github.com/ggerganov/whisper.cpp/bindings/go"
)

var quietOnce sync.Once

// quiet silences whisper.cpp's own logging for the whole process.
func quiet() { quietOnce.Do(func() { C.yaz_quiet() }) }

// setParams sets the fields the Go bindings do not expose. The returned
// function frees the prompt's C string; call it after whisper_full returns.
func setParams(p *whisper.Params, prompt string) (free func()) {
	cp := (*C.struct_whisper_full_params)(unsafe.Pointer(p))
	var cs *C.char
	if prompt != "" {
		cs = C.CString(prompt)
	}
	C.yaz_set_params(cp, cs)
	return func() {
		if cs != nil {
			C.free(unsafe.Pointer(cs))
		}
	}
}

// noSpeechProb is whisper's probability that segment i holds no speech.
func noSpeechProb(ctx *whisper.Context, i int) float32 {
	return float32(C.whisper_full_get_segment_no_speech_prob((*C.struct_whisper_context)(unsafe.Pointer(ctx)), C.int(i)))
}
