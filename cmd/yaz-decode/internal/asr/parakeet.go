package asr

/*
#include "yaz.h"
*/
import "C"

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"github.com/yazses/yazses/lib/pcm"
)

// parakeetCtx is a loaded Parakeet TDT model.
type parakeetCtx struct {
	c *C.struct_parakeet_context
	// maxChunk is the most samples one call holds: the file's n_audio_ctx
	// mel frames of 10 ms (the converter writes 5000: 50 s).
	maxChunk int
}

// melHop is Parakeet's mel frame step: 10 ms of 16 kHz audio.
const melHop = C.PARAKEET_HOP_LENGTH

// minParakeetSamples is the shortest audio Parakeet decodes: it normalises
// each mel band over the call's frames, and with fewer than two the
// variance is undefined. Shorter audio (under 20 ms) holds no word.
const minParakeetSamples = 2 * melHop

// loadParakeet loads a Parakeet model without a state (each call makes
// one); nil: whisper.cpp could not load it.
func loadParakeet(path string, dev Device) *parakeetCtx {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	c := C.yaz_parakeet_init(cpath, C.bool(dev.slot > 0), C.int(max(dev.slot-1, 0)))
	if c == nil {
		return nil
	}
	// parakeet.cpp computes n_len = n_samples/hop + 1 mel frames and takes
	// the one-pass path while n_len <= n_audio_ctx.
	ctxFrames := int(C.parakeet_model_n_audio_ctx(c))
	return &parakeetCtx{c: c, maxChunk: max(ctxFrames-1, 1) * melHop}
}

func (p *parakeetCtx) free() { C.parakeet_free(p.c) }

// transcribe decodes samples in chunks the model holds (chunks.go), each
// on a fresh state of its own, and puts every token's time on the
// timeline of the whole input.
func (p *parakeetCtx) transcribe(ctx context.Context, samples []float32, opt Options) (Result, error) {
	var res Result
	if len(samples) == 0 {
		return res, nil
	}
	threads := opt.Threads
	if threads <= 0 {
		threads = DefaultThreads()
	}
	progress := func(done int) {
		if opt.Progress != nil {
			opt.Progress(clampPercent(int(int64(done) * 100 / int64(len(samples)))))
		}
	}
	var toks []timedPiece
	chunks := chunkBounds(samples, p.maxChunk)
	for i, ch := range chunks {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		progress(ch.start)
		got, err := p.chunk(ctx, samples[ch.start:ch.end], threads)
		if err != nil {
			return Result{}, err
		}
		off := int64(ch.start / melHop) // whole mel frames: chunk starts are multiples of melHop
		for _, t := range got.pieces {
			t.t0 += off
			t.t1 += off
			t.chunk = i
			toks = append(toks, t)
		}
	}
	progress(len(samples))
	res.Segments = segmentPieces(toks, pcm.Duration(len(samples)), opt.TokenTimes)
	return res, nil
}

// chunkRun is what one call of parakeet_full gave.
type chunkRun struct {
	pieces         []timedPiece
	checks, graphs int64 // abort checks and graph computations (tests)
}

// chunk decodes audio that fits one encoder pass on a fresh state.
func (p *parakeetCtx) chunk(ctx context.Context, samples []float32, threads int) (chunkRun, error) {
	var r chunkRun
	if len(samples) < minParakeetSamples {
		return r, nil
	}
	st := C.yaz_parakeet_init_state(p.c)
	if st == nil {
		return r, fmt.Errorf("transcribe: parakeet_init_state failed")
	}
	defer C.parakeet_free_state(st)
	j := newJob(ctx, nil)
	defer j.free()
	rc := C.yaz_parakeet_full(p.c, st, C.int(threads), j.c, (*C.float)(unsafe.Pointer(&samples[0])), C.int(len(samples)))
	r.checks, r.graphs = j.counters()
	if j.aborted() {
		return r, ctx.Err()
	}
	if rc != 0 {
		return r, fmt.Errorf("transcribe: parakeet_full failed (%d)", int(rc))
	}
	buf := make([]byte, 256)
	for s := range int(C.parakeet_full_n_segments_from_state(st)) {
		for k := range int(C.parakeet_full_n_tokens_from_state(st, C.int(s))) {
			d := C.parakeet_full_get_token_data_from_state(st, C.int(s), C.int(k))
			n := int(C.yaz_parakeet_piece(p.c, d.id, (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf))))
			if n >= len(buf) {
				buf = make([]byte, n+1)
				n = int(C.yaz_parakeet_piece(p.c, d.id, (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf))))
			}
			r.pieces = append(r.pieces, timedPiece{text: string(buf[:n]), t0: int64(d.t0), t1: int64(d.t1)})
		}
	}
	return r, nil
}

// frameDuration is the length of one Parakeet time unit (token t0/t1).
const frameDuration = 10 * time.Millisecond
