package silero

/*
#cgo LDFLAGS: -lwhisper -lggml -lggml-base -lggml-cpu -lm -lstdc++
#cgo linux LDFLAGS: -fopenmp
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <whisper.h>

static void yaz_vad_log_discard(enum ggml_log_level level, const char *text, void *user_data) {
	(void)level; (void)text; (void)user_data;
}

// yaz_vad_quiet stops whisper.cpp and ggml from writing their own log lines
// to stderr (process-wide, as cmd/yaz-decode/internal/asr's quiet does: both only discard).
static void yaz_vad_quiet(void) {
	whisper_log_set(yaz_vad_log_discard, NULL);
}

// A model file already read into memory, served to whisper.cpp's loader as
// an ifstream would: eof only once a read went past the end.
typedef struct {
	const char *buf;
	size_t size, pos;
	bool eof;
} yaz_vad_mem;

static size_t yaz_vad_mem_read(void *ctx, void *out, size_t n) {
	yaz_vad_mem *m = ctx;
	size_t avail = m->size - m->pos;
	if (n > avail) {
		memcpy(out, m->buf + m->pos, avail);
		memset((char *)out + avail, 0, n - avail);
		m->pos = m->size;
		m->eof = true;
		return n;
	}
	memcpy(out, m->buf + m->pos, n);
	m->pos += n;
	return n;
}

static bool yaz_vad_mem_eof(void *ctx) { return ((yaz_vad_mem *)ctx)->eof; }
static void yaz_vad_mem_close(void *ctx) { (void)ctx; }

static struct whisper_vad_context *yaz_vad_init(const char *buf, size_t size, int threads) {
	yaz_vad_mem m = { buf, size, 0, false };
	struct whisper_model_loader loader = { &m, yaz_vad_mem_read, yaz_vad_mem_eof, yaz_vad_mem_close };
	struct whisper_vad_context_params p = whisper_vad_default_context_params();
	p.n_threads = threads;
	p.use_gpu = false;
	return whisper_vad_init_with_params(&loader, p);
}

// yaz_vad_detect runs n samples through the model without resetting its
// LSTM state (a last partial window is zero-padded) and copies out one
// probability per window: their count, or -1 on failure.
static int yaz_vad_detect(struct whisper_vad_context *ctx, const float *samples, int n, float *probs, int cap) {
	if (!whisper_vad_detect_speech_no_reset(ctx, samples, n)) {
		return -1;
	}
	int np = whisper_vad_n_probs(ctx);
	if (np > cap) {
		np = cap;
	}
	memcpy(probs, whisper_vad_probs(ctx), (size_t)np * sizeof(float));
	return np;
}

// yaz_vad_segments is whisper.cpp's own whisper_vad_segments_from_probs
// over the given probabilities (the context's last detection must have had
// as many windows): start and end of each segment in centiseconds, and the
// count, or -1.
static int yaz_vad_segments(struct whisper_vad_context *ctx, const float *probs, int n,
		float threshold, int min_speech_ms, int min_silence_ms, float max_speech_s, int pad_ms,
		float *t0, float *t1, int cap) {
	if (whisper_vad_n_probs(ctx) != n) {
		return -1;
	}
	memcpy(whisper_vad_probs(ctx), probs, (size_t)n * sizeof(float));
	struct whisper_vad_params p = whisper_vad_default_params();
	p.threshold = threshold;
	p.min_speech_duration_ms = min_speech_ms;
	p.min_silence_duration_ms = min_silence_ms;
	if (max_speech_s > 0) {
		p.max_speech_duration_s = max_speech_s;
	}
	p.speech_pad_ms = pad_ms;
	struct whisper_vad_segments *s = whisper_vad_segments_from_probs(ctx, p);
	if (s == NULL) {
		return -1;
	}
	int k = whisper_vad_segments_n_segments(s);
	for (int i = 0; i < k && i < cap; i++) {
		t0[i] = whisper_vad_segments_get_segment_t0(s, i);
		t1[i] = whisper_vad_segments_get_segment_t1(s, i);
	}
	whisper_vad_free_segments(s);
	return k;
}
*/
import "C"

import (
	"errors"
	"sync"
	"time"
	"unsafe"
)

var quietOnce sync.Once

// quiet silences whisper.cpp's own logging for the whole process. Like
// cmd/yaz-decode/internal/asr's, it only ever installs a discarding logger, so the two never
// fight: whichever runs last, whisper.cpp stays quiet.
func quiet() { quietOnce.Do(func() { C.yaz_vad_quiet() }) }

// cbuf is a model file copied into C memory, for whisper.cpp's loader.
type cbuf struct {
	p unsafe.Pointer
	n C.size_t
}

func newCBuf(b []byte) cbuf { return cbuf{C.CBytes(b), C.size_t(len(b))} }

func (b *cbuf) free() {
	if b.p != nil {
		C.free(b.p)
		b.p = nil
	}
}

// vctx is one whisper_vad_context: the model's weights and one LSTM state.
type vctx struct{ c *C.struct_whisper_vad_context }

var errInit = errors.New("whisper.cpp could not set up the detector")

func newVctx(b cbuf, threads int) (vctx, error) {
	c := C.yaz_vad_init((*C.char)(b.p), b.n, C.int(threads))
	if c == nil {
		return vctx{}, errInit
	}
	// whisper.cpp leaves the LSTM state as the allocator found it
	// (whisper_vad_detect_speech resets it, the _no_reset variant does not).
	C.whisper_vad_reset_state(c)
	return vctx{c}, nil
}

func (v *vctx) free() {
	if v.c != nil {
		C.whisper_vad_free(v.c)
		v.c = nil
	}
}

func (v vctx) reset() { C.whisper_vad_reset_state(v.c) }

// detect appends to probs one probability per window of samples (the last
// window zero-padded), carrying the LSTM state over from the last call.
func (v vctx) detect(samples []float32, probs []float32) ([]float32, error) {
	if len(samples) == 0 {
		return probs, nil
	}
	n := (len(samples) + Window - 1) / Window
	probs = grow(probs, n)
	out := probs[len(probs) : len(probs)+n]
	got := C.yaz_vad_detect(v.c, (*C.float)(unsafe.Pointer(&samples[0])), C.int(len(samples)),
		(*C.float)(unsafe.Pointer(&out[0])), C.int(n))
	if got != C.int(n) {
		return probs, errors.New("whisper.cpp's detector failed")
	}
	return probs[:len(probs)+n], nil
}

func grow(s []float32, n int) []float32 {
	if cap(s)-len(s) < n {
		t := make([]float32, len(s), len(s)+n+cap(s))
		copy(t, s)
		return t
	}
	return s
}

// whisperSegments is whisper.cpp's own whisper_vad_segments_from_probs
// over probs, in centiseconds: the reference package vadspan is tested
// against. It runs len(probs) windows of silence first, for whisper.cpp's
// probability buffer to have that size. Durations count in whole
// milliseconds (maxSpeech 0: none); whisper.cpp derives its own negative
// threshold.
func (v vctx) whisperSegments(probs []float32, threshold float32, minSpeech, minSilence, pad, maxSpeech time.Duration) (t0, t1 []float32, err error) {
	if len(probs) == 0 {
		return nil, nil, nil
	}
	if int(C.whisper_vad_n_probs(v.c)) != len(probs) {
		if _, err := v.detect(make([]float32, len(probs)*Window), nil); err != nil {
			return nil, nil, err
		}
	}
	t0 = make([]float32, len(probs))
	t1 = make([]float32, len(probs))
	ms := func(d time.Duration) C.int { return C.int(d / time.Millisecond) }
	k := C.yaz_vad_segments(v.c, (*C.float)(unsafe.Pointer(&probs[0])), C.int(len(probs)),
		C.float(threshold), ms(minSpeech), ms(minSilence), C.float(maxSpeech.Seconds()), ms(pad),
		(*C.float)(unsafe.Pointer(&t0[0])), (*C.float)(unsafe.Pointer(&t1[0])), C.int(len(probs)))
	if k < 0 {
		return nil, nil, errors.New("whisper_vad_segments_from_probs failed")
	}
	return t0[:k], t1[:k], nil
}
