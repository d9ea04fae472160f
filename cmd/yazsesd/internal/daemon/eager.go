package daemon

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/child"
	"github.com/yazses/yazses/lib/frame"
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

// The last piece is decoded before it has ended, too: when the detector
// has heard tailQuiet of silence (the Silence event a tail ends at), the
// audio since the last piece, up to there, is decoded at once as a
// speculation. If the piece then ends (the pause reached eager_pause_ms, or
// the key came up and the detector's flush ended it) with no voice after
// that silence began, the speculation is the piece, and the text is there
// as the key comes up; a later silence (the speaker went on) abandons it
// and speculates again. A person who lets go 300 ms after the last word
// therefore waits for nothing but typing.

// eagerEnds is how many detector events may wait for the eager decoder;
// more (a decoder far behind) are dropped and the hold is decoded whole.
const eagerEnds = 64

// Without eager decoding (dictation.eager_pause_ms = 0) the same run
// speculates on the whole hold: at each first 150 ms of silence the hold
// so far is decoded, while it is at most wholeSpeculation long, and at
// release that decode is the hold's text if no voice came after its
// silence began; otherwise the hold is decoded whole as before. There are
// no pieces then, so the text is one decode of the whole, as without it.

// wholeSpeculation bounds the hold a speculation decodes without eager
// decoding: each costs a decode of the hold so far (the speaker's next
// pause abandons it), and beyond one of whisper's 30 s windows that is
// eager decoding's job.
const wholeSpeculation = 30 * time.Second

// eagerEvent is a piece's end (a span ended at at, the last voiced window
// so far ended at since), a silence of tailQuiet seen at at after the
// last voiced window ended at since (quiet), or the use's end, its last
// voiced window ending at since (ended).
type eagerEvent struct {
	at, since    int64
	quiet, ended bool
}

// eagerRun is one hold's eager decoding: a goroutine that decodes each
// piece as its end arrives.
type eagerRun struct {
	pieces    bool            // eager decoding: span ends are pieces; else one speculation on the whole
	speculate bool            // the detector is Silero: decode at the first 150 ms of silence
	ends      chan eagerEvent // from watch; closed when the use ends
	done      chan struct{}
	ctx       context.Context
	cancel    context.CancelFunc

	// Read after done.
	texts   []string
	cut     int64 // the audio decoded so far ends here
	failed  bool  // a piece failed: decode the whole at release
	dropped bool  // an event was dropped (set by watch before it closes ends; read after done)
	spec    speculations
}

// speculations counts what became of a hold's speculations (for the
// debug log).
type speculations struct{ used, dropped int }

// speculation is one decode of the audio [from, to) started at a silence
// that began at since.
type speculation struct {
	from, to, since int64
	cancel          context.CancelFunc
	done            chan struct{}
	res             frame.Result
	err             error
	took            time.Duration
}

// startEager starts the eager decoding of hold h: in pieces, or (pieces
// false) the speculation on the whole hold; speculate false: no
// speculation (then without pieces it decodes nothing).
func (d *Daemon) startEager(h *holdRec, prompt *string, pieces, speculate bool) *eagerRun {
	ctx, cancel := d.decodeCtx(d.life)
	e := &eagerRun{pieces: pieces, speculate: speculate, ends: make(chan eagerEvent, eagerEnds), done: make(chan struct{}), ctx: ctx, cancel: cancel}
	go d.runEager(h, e, prompt) // ends when watch closes e.ends
	return e
}

// pieceAt hands the end of a span to the eager decoder; quietAt a silence
// of tailQuiet. A full queue drops the event: the hold is decoded whole.
func (e *eagerRun) pieceAt(at, since int64) { e.send(eagerEvent{at: at, since: since}) }

func (e *eagerRun) quietAt(at, since int64) { e.send(eagerEvent{at: at, since: since, quiet: true}) }

// endedAt tells that the detector's use ended, its last voiced window
// ending at since.
func (e *eagerRun) endedAt(since int64) { e.send(eagerEvent{since: since, ended: true}) }

func (e *eagerRun) send(ev eagerEvent) {
	select {
	case e.ends <- ev:
	default:
		e.dropped = true
	}
}

func (d *Daemon) runEager(h *holdRec, e *eagerRun, prompt *string) {
	defer close(e.done)
	var spec *speculation
	drop := func() {
		if spec != nil {
			spec.cancel()
			<-spec.done
			spec = nil
			e.spec.dropped++
		}
	}
	defer drop()
	for ev := range e.ends {
		if e.failed || e.ctx.Err() != nil {
			continue // drained: the whole is decoded at release, or dropped
		}
		switch {
		case ev.quiet:
			// A new silence: any speculation before it missed the voice
			// in between.
			drop()
			if e.speculate && ev.since > e.cut && (e.pieces || pcm.Duration(int(ev.at-e.cut)) <= wholeSpeculation) { // a voice since the last piece
				spec = d.speculate(h, e, prompt, e.cut, ev.at, ev.since)
			}
			continue
		case ev.ended:
			// Pieces: the flush ended the last one already. Whole: the
			// speculation is the hold's text if no voice followed it.
			if !e.pieces && spec != nil && ev.since <= spec.since {
				<-spec.done
				if spec.err == nil && spec.res.Error == "" {
					e.spec.used++
					e.commit(d, spec.res.Text, spec.to, spec.to-spec.from, spec.took, true)
					spec = nil
				}
			}
			continue
		}
		if !e.pieces {
			continue // span ends are no pieces without eager decoding
		}
		at := ev.at
		if spec != nil && spec.from == e.cut && ev.since <= spec.since {
			// The piece ended with no voice after the speculation's
			// silence began: its audio holds all that was said in the
			// piece (what follows it, to a span end the detector's flush
			// put at the end of the audio, is silence).
			<-spec.done
			s := spec
			spec = nil
			if s.err == nil && s.res.Error == "" {
				e.spec.used++
				e.commit(d, s.res.Text, max(at, s.to), s.to-s.from, s.took, true)
				continue
			}
			e.spec.dropped++ // failed: decode the piece itself
		}
		drop()
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
		e.commit(d, r.Text, e.cut+int64(len(piece)), int64(len(piece)), time.Since(start), false)
	}
}

// speculate starts decoding the audio of hold h from from up to to, where
// the detector had heard tailQuiet of silence after since (that audio is
// in h.samples: collect keeps a block before it feeds it to the
// detector). Not as far as the microphone has delivered: under load the
// detector lags, and that audio may hold the start of what comes next.
func (d *Daemon) speculate(h *holdRec, e *eagerRun, prompt *string, from, to, since int64) *speculation {
	ctx, cancel := context.WithTimeoutCause(e.ctx, holdDecodeBound(pcm.Duration(int(to-from))), errHoldDecodeBound)
	s := &speculation{from: from, to: to, since: since, cancel: cancel, done: make(chan struct{})}
	audio := h.audio(from, to)
	said := saidSoFar(e.texts)
	go func() { // owned: runEager waits on done before it ends
		defer close(s.done)
		defer cancel()
		start := time.Now()
		s.res, s.err = d.decode.DecodeAfter(ctx, child.PrioHold, audio, prompt, said)
		s.took = time.Since(start)
	}()
	return s
}

// commit keeps a decoded piece: its text joins the others and the audio
// decoded so far ends at cut.
func (e *eagerRun) commit(d *Daemon, text string, cut, samples int64, took time.Duration, speculated bool) {
	e.cut = cut
	if t := strings.TrimSpace(text); t != "" {
		e.texts = append(e.texts, t)
		// The owner's opt-in (dictation.preview): the text so far, on
		// the watch stream only; livestate drops it otherwise.
		d.live.SetPreview(strings.Join(e.texts, " "))
	}
	d.log.Debug("hold: piece decoded", "piece", len(e.texts), "audio_ms", pcm.Duration(int(samples)).Milliseconds(),
		"decode_ms", took.Milliseconds(), "speculated", speculated)
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
// has ended, the last one at release; or the detector failed, and the
// pieces end where it did) and returns their text and where their audio
// ends, or ok false when the whole hold must be decoded instead: a piece
// failed or was dropped, or pieces were not decoded because the decoder
// is down for good (its context ended: the whole hold's decode then fails
// with the decoder's cause, as without eager decoding).
func (e *eagerRun) finish(log *slog.Logger) (text string, cut int64, ok bool) {
	<-e.done
	ended := e.ctx.Err() != nil
	e.cancel()
	log.Debug("hold: speculations", "used", e.spec.used, "dropped", e.spec.dropped, "pieces", e.pieces)
	if e.failed || e.dropped || ended || !e.pieces && e.spec.used == 0 {
		return "", 0, false
	}
	return strings.Join(e.texts, " "), e.cut, true
}

// said is the context of what follows the pieces (read after finish).
func (e *eagerRun) said() string { return saidSoFar(e.texts) }

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
