package asr

/*
#cgo LDFLAGS: -Wl,--wrap=ggml_backend_sched_graph_compute
#cgo LDFLAGS: -lwhisper -lparakeet -lggml -lggml-base -lggml-cpu -lm -lstdc++
#cgo linux LDFLAGS: -fopenmp
#include "yaz.h"
*/
import "C"

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/cgo"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	whisper "github.com/ggerganov/whisper.cpp/bindings/go"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/transcript"
	"github.com/yazses/yazses/lib/pcm"
)

// initContext loads a model without a state of its own: each call makes
// one (see Model.Transcribe). Flash attention stays on, whisper.cpp's
// default and whisper-cli's: with it decoding ran 2–4 times faster here
// than with it off. The model's weights and compute go to dev (whisper.cpp
// runs on the CPU what a GPU backend cannot do); use_gpu is always set, since
// whisper.cpp's default would take the first GPU ggml lists, software or
// not. nil: not a model.
func initContext(path string, dev Device) *whisper.Context {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	p := C.whisper_context_default_params()
	p.use_gpu = C.bool(dev.slot > 0)
	p.gpu_device = C.int(max(dev.slot-1, 0))
	c := C.whisper_init_from_file_with_params_no_state(cpath, p)
	if c == nil {
		return nil
	}
	return (*whisper.Context)(unsafe.Pointer(c))
}

// langStr is the code of whisper's language id.
func langStr(id int) string { return C.GoString(C.whisper_lang_str(C.int(id))) }

// ---- logging

var (
	logInstall sync.Once
	logMu      sync.Mutex
	logger     *slog.Logger // where whisper.cpp's lines go; nil: nowhere
	logLine    []byte       // a line whisper.cpp has not finished yet
	logLevel   C.int        // the level of logLine's first piece
)

// SetLogger sends whisper.cpp's and ggml's own log lines to log at debug
// level from now on (nil: nowhere), as Load does. The setting is for the
// whole process.
func SetLogger(log *slog.Logger) { setLogger(log) }

// setLogger is SetLogger.
func setLogger(log *slog.Logger) {
	logInstall.Do(func() { C.yaz_log_install() })
	logMu.Lock()
	defer logMu.Unlock()
	logger = log
	on := log != nil && log.Enabled(context.Background(), slog.LevelDebug)
	if on {
		C.yaz_log_enable(1)
	} else {
		C.yaz_log_enable(0)
	}
}

// levelNames are ggml's log levels (enum ggml_log_level).
var levelNames = [...]string{"none", "debug", "info", "warn", "error", "cont"}

//export yazLog
func yazLog(level C.int, text *C.char) {
	logMu.Lock()
	defer logMu.Unlock()
	if logger == nil {
		return
	}
	// Lines arrive in pieces (GGML_LOG_LEVEL_CONT, or text without its
	// newline yet): one record per finished line.
	if len(logLine) == 0 {
		logLevel = level
	}
	logLine = append(logLine, C.GoString(text)...)
	for {
		i := bytes.IndexByte(logLine, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSpace(string(logLine[:i]))
		logLine = logLine[i+1:]
		if line == "" {
			continue
		}
		name := "unknown"
		if int(logLevel) >= 0 && int(logLevel) < len(levelNames) {
			name = levelNames[logLevel]
		}
		logger.Debug(line, "src", "whisper.cpp", "whisper_level", name)
		logLevel = level
	}
	if len(logLine) == 0 {
		logLine = nil
	}
}

// ---- progress

//export yazProgress
func yazProgress(h C.uintptr_t, percent C.int) {
	if fn, ok := cgo.Handle(h).Value().(func(int)); ok {
		fn(clampPercent(int(percent)))
	}
}

// clampPercent keeps whisper.cpp's progress inside 0–100: its callback runs
// at the top of each window, before the end-of-audio check, so it passes
// more than 100 when the last window's seek jumps past the end.
func clampPercent(p int) int { return min(max(p, 0), 100) }

// ---- one call

// job is one whisper_full call: its state, its abort flag and its settings.
type job struct {
	c      *C.yaz_job
	stop   func() bool
	fired  chan struct{}
	handle cgo.Handle
	cstrs  []*C.char
}

// newJob prepares a call that stops once ctx is done: the context sets the
// C flag, and whisper.cpp reads it without calling back into Go.
func newJob(ctx context.Context, progress func(int)) *job {
	j := &job{c: (*C.yaz_job)(C.calloc(1, C.sizeof_yaz_job)), fired: make(chan struct{})}
	if progress != nil {
		j.handle = cgo.NewHandle(progress)
		j.c.progress = C.uintptr_t(j.handle)
	}
	flag := (*int32)(unsafe.Pointer(&j.c.abort))
	j.stop = context.AfterFunc(ctx, func() {
		atomic.StoreInt32(flag, 1)
		close(j.fired)
	})
	return j
}

func (j *job) cstring(s string) *C.char {
	cs := C.CString(s)
	j.cstrs = append(j.cstrs, cs)
	return cs
}

// free releases the job once whisper_full has returned.
func (j *job) free() {
	if !j.stop() {
		<-j.fired // the flag is being set: wait before freeing it
	}
	if j.handle != 0 {
		j.handle.Delete()
	}
	for _, cs := range j.cstrs {
		C.free(unsafe.Pointer(cs))
	}
	C.free(unsafe.Pointer(j.c))
}

// aborted reports whether whisper.cpp saw the abort flag, so that its
// output is partial. A flag set after whisper.cpp finished leaves a whole
// result.
func (j *job) aborted() bool { return atomic.LoadInt32((*int32)(unsafe.Pointer(&j.c.aborted))) != 0 }

// counters reports how often the abort flag was read and how many graphs
// ran during the call.
func (j *job) counters() (checks, graphs int64) {
	return int64(atomic.LoadInt64((*int64)(unsafe.Pointer(&j.c.checks)))), int64(atomic.LoadInt64((*int64)(unsafe.Pointer(&j.c.graphs))))
}

// deviceCounters reports the checks of the flag inside graphs on a GPU
// backend, and how many graphs had begun when the flag was first seen.
func (j *job) deviceCounters() (checks, graphsAtAbort int64) {
	return int64(atomic.LoadInt64((*int64)(unsafe.Pointer(&j.c.device_checks)))), int64(atomic.LoadInt64((*int64)(unsafe.Pointer(&j.c.graphs_at_abort))))
}

// ---- one transcription

func (m *Model) run(ctx context.Context, samples []float32, opt Options, lang string, audioCtx int) (run, error) {
	if err := ctx.Err(); err != nil {
		return run{}, err
	}
	c := (*C.struct_whisper_context)(unsafe.Pointer(m.ctx))
	st := C.yaz_init_state(c)
	if st == nil {
		return run{}, errors.New("transcribe: whisper_init_state failed")
	}
	defer C.whisper_free_state(st)

	j := newJob(ctx, opt.Progress)
	defer j.free()
	j.c.abort_after = C.int64_t(opt.abortAfter)
	j.c.device_nodes = C.int64_t(opt.deviceNodes)
	threads := opt.Threads
	if threads <= 0 {
		threads = DefaultThreads()
	}
	o := C.yaz_opts{
		threads:   C.int(threads),
		beam_size: C.int(opt.BeamSize),
		audio_ctx: C.int(audioCtx),
		language:  j.cstring(lang),
	}
	if opt.NoFallback {
		o.no_fallback = 1
	}
	if opt.TokenTimes {
		o.token_times = 1
	}
	if opt.warmUp {
		o.warm_up = 1
	}
	if opt.Prompt != "" {
		o.prompt = j.cstring(opt.Prompt)
	}
	rc := C.yaz_full(c, st, &o, j.c, (*C.float)(unsafe.Pointer(&samples[0])), C.int(len(samples)))
	var r run
	r.checks, r.graphs = j.counters()
	r.deviceChecks, r.graphsAtAbort = j.deviceCounters()
	if j.aborted() {
		if opt.abortAfter > 0 {
			return r, errTestAbort
		}
		return r, ctx.Err()
	}
	if rc != 0 {
		return r, fmt.Errorf("transcribe: whisper_full failed (%d)", int(rc))
	}
	r.Language = lang
	if id := C.whisper_full_lang_id_from_state(st); id >= 0 {
		r.Language = C.GoString(C.whisper_lang_str(id))
	}
	noSpeech := opt.NoSpeechThreshold
	if noSpeech <= 0 {
		noSpeech = 0.6
	}
	audio := pcm.Duration(len(samples))
	eot := C.whisper_token_eot(c)
	n := int(C.whisper_full_n_segments_from_state(st))
	last, cur := C.whisper_token(-1), 0
	for i := range n {
		ci := C.int(i)
		nt := int(C.whisper_full_n_tokens_from_state(st, ci))
		for k := range nt {
			tok := C.whisper_full_get_token_id_from_state(st, ci, C.int(k))
			if tok >= eot {
				continue // special and timestamp tokens
			}
			r.tokens = append(r.tokens, int32(tok))
			if tok == last {
				cur++
			} else {
				last, cur = tok, 1
			}
			r.maxRun = max(r.maxRun, cur)
		}
		if noSpeech < 1 && float32(C.whisper_full_get_segment_no_speech_prob_from_state(st, ci)) > noSpeech {
			continue
		}
		// whisper's timestamps can overshoot the audio (a segment "ending" at
		// the 30 s window edge) or, with no opening timestamp, go negative:
		// keep them inside the audio.
		seg := transcript.Segment{
			Start: clamp(time.Duration(C.whisper_full_get_segment_t0_from_state(st, ci))*10*time.Millisecond, audio),
			End:   clamp(time.Duration(C.whisper_full_get_segment_t1_from_state(st, ci))*10*time.Millisecond, audio),
			Text:  C.GoString(C.whisper_full_get_segment_text_from_state(st, ci)),
		}
		if opt.TokenTimes {
			for k := range nt {
				d := C.whisper_full_get_token_data_from_state(st, ci, C.int(k))
				if d.id >= eot {
					continue
				}
				seg.Tokens = append(seg.Tokens, transcript.Token{
					Start: clamp(time.Duration(d.t0)*10*time.Millisecond, audio),
					End:   clamp(time.Duration(d.t1)*10*time.Millisecond, audio),
					Text:  C.GoString(C.whisper_token_to_str(c, d.id)),
				})
			}
		}
		r.Segments = append(r.Segments, seg)
	}
	return r, nil
}
