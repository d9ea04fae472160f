package daemon

import (
	"context"
	"strings"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/child"
	"github.com/yazses/yazses/lib/pcm"
)

// Eager decoding (dictation.eager_pause_ms). The hold's detector use ends
// a span at a pause of eager_pause_ms; each span end during the hold is a
// finished piece, decoded at once at the hold's priority while the person
// goes on speaking, so at release only the last piece is left to decode.
// Each piece goes with the text of the pieces before it (saidSoFar), which
// whisper reads as what was said before the audio.
// The pieces' texts join with one space, and the replacement table
// applies to the whole. A piece that fails (the decoder died or did not
// answer) makes the hold fall back to one decode of its whole audio at
// release, so a decoder crash mid-hold loses only that hold, reported as
// before; hold.cancel drops the pieces and stops the one being decoded.

// eagerEnds is how many piece ends may wait for the decoder; more (a
// decoder far behind) are merged into the next piece.
const eagerEnds = 64

// eagerRun is one hold's eager decoding: a goroutine that decodes each
// piece as its end arrives.
type eagerRun struct {
	ends   chan int64 // span ends (sample positions), from watch; closed when the use ends
	done   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc

	// Read after done.
	texts   []string
	cut     int64 // the audio decoded so far ends here
	failed  bool  // a piece failed: decode the whole at release
	dropped bool  // an end was dropped (set by watch before it closes ends)
}

// startEager starts the eager decoding of hold h.
func (d *Daemon) startEager(h *holdRec, prompt *string) *eagerRun {
	ctx, cancel := d.decodeCtx(d.life)
	e := &eagerRun{ends: make(chan int64, eagerEnds), done: make(chan struct{}), ctx: ctx, cancel: cancel}
	go d.runEager(h, e, prompt) // ends when watch closes e.ends
	return e
}

// pieceAt hands the end of a span to the eager decoder; a full queue
// merges it into the next piece.
func (e *eagerRun) pieceAt(at int64) {
	select {
	case e.ends <- at:
	default:
		e.dropped = true
	}
}

func (d *Daemon) runEager(h *holdRec, e *eagerRun, prompt *string) {
	defer close(e.done)
	for at := range e.ends {
		if e.failed || e.ctx.Err() != nil {
			continue // drained: the whole is decoded at release, or dropped
		}
		piece := h.audio(e.cut, at)
		if len(piece) == 0 {
			continue
		}
		bctx, cancel := context.WithTimeoutCause(e.ctx, holdDecodeBound(pcm.Duration(len(piece))), errHoldDecodeBound)
		start := time.Now()
		r, err := d.decode.DecodeAfter(bctx, child.PrioHold, piece, prompt, saidSoFar(e.texts))
		cancel()
		if err != nil || r.Error != "" {
			e.failed = true
			d.log.Warn("a piece of the hold could not be decoded: the whole hold is decoded at release", "err", err)
			continue
		}
		e.cut += int64(len(piece))
		if t := strings.TrimSpace(r.Text); t != "" {
			e.texts = append(e.texts, t)
			// The owner's opt-in (dictation.preview): the text so far, on
			// the watch stream only; livestate drops it otherwise.
			d.live.SetPreview(strings.Join(e.texts, " "))
		}
		d.log.Debug("hold: piece decoded", "piece", len(e.texts), "audio_ms", pcm.Duration(len(piece)).Milliseconds(),
			"decode_ms", time.Since(start).Milliseconds())
	}
}

// saidContext bounds the text of the pieces so far that goes with the
// next piece: about 50 of whisper's tokens, well inside the half of its
// text context (224 tokens) it keeps of a prompt, so a vocabulary hint in
// front of it stays whole.
const saidContext = 200

// saidSoFar is the text of the pieces decoded so far, its last
// saidContext bytes at most, cut at a space: the context of the next
// piece, so whisper goes on from it as it does from one 30-second window
// to the next (the case and punctuation of a sentence that continues),
// instead of starting each piece as a new text.
func saidSoFar(texts []string) string {
	s := strings.Join(texts, " ")
	if len(s) <= saidContext {
		return s
	}
	s = s[len(s)-saidContext:]
	if i := strings.IndexByte(s, ' '); i >= 0 {
		return s[i+1:]
	}
	return strings.ToValidUTF8(s, "")
}

// finish waits for the pieces (the detector's use has ended: every span
// has ended, the last one at release) and returns their text, or ok false
// when the whole hold must be decoded instead (a piece failed or was
// dropped).
func (e *eagerRun) finish() (text string, ok bool) {
	<-e.done
	e.cancel()
	if e.failed || e.dropped {
		return "", false
	}
	return strings.Join(e.texts, " "), true
}

// drop stops the eager decoding (hold.cancel, shutdown): the piece being
// decoded is abandoned, the rest are not decoded.
func (e *eagerRun) drop() {
	if e != nil {
		e.cancel()
	}
}

// audio returns a copy of the hold's samples [from, to).
func (h *holdRec) audio(from, to int64) []int16 {
	h.smu.Lock()
	defer h.smu.Unlock()
	to = min(to, int64(len(h.samples)))
	if from >= to {
		return nil
	}
	out := make([]int16, to-from)
	copy(out, h.samples[from:to])
	return out
}
