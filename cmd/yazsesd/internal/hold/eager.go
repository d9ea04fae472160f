package hold

import (
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/yazses/yazses/lib/pcm"
)

// Eager decoding (Params.Pieces, dictation.eager_pause_ms). The detector
// ends a span at a pause of eager_pause_ms; each span end during the hold
// is a finished piece, decoded at once while the person goes on speaking,
// so at release only the last piece is left to decode. Each piece goes
// with the text of the pieces before it (saidSoFar), which whisper reads
// as what was said before the audio. The pieces' texts join with one
// space. A piece that fails (the decoder died or did not answer) makes the
// hold fall back to one decode of its whole audio at the end, so a decoder
// crash mid-hold loses only that hold, reported as before; a cancel drops
// the pieces and stops the one being decoded. Pieces are decoded one at a
// time, in order: the events that come meanwhile wait (at most eagerEnds
// of them; more, a decoder far behind, and the hold is decoded whole).
//
// The last piece is decoded before it has ended, too (Params.Speculate):
// when the detector has heard tailQuiet of silence (the Silence event a
// tail ends at), the audio since the last piece, up to there, is decoded
// at once as a speculation. If the piece then ends (the pause reached
// eager_pause_ms, or the key came up and the detector's flush ended it)
// with no voice after that silence began, the speculation is the piece,
// and the text is there as the key comes up; a later silence (the speaker
// went on) abandons it and speculates again. A person who lets go 300 ms
// after the last word therefore waits for nothing but typing.
//
// Without pieces the same speculation runs on the whole hold: at each
// first tailQuiet of silence the hold so far is decoded, while it is at
// most wholeSpeculation long, and at the end that decode is the hold's
// text if no voice came after its silence began; otherwise the hold is
// decoded whole. There are no pieces then, so the text is one decode of
// the whole, as without it.
//
// Live text (Params.Live): each piece decided while the key is held is
// handed to the owner at once (Owner.Piece), who types it; the pieces
// decided after the release and any decode of the rest are the Result's
// Rest. Nothing handed out is decoded again: a piece that fails, or an
// event dropped, ends the pieces, and the audio after the last one is
// decoded once at the end, after their text.

// Tentative text (Params.Tentative): while the key is held and a span is
// open (the detector heard a voice since the last piece ended), the audio
// of the piece so far is decoded as a guess whenever no other decode of
// the hold runs and TentativeEvery of audio has come since the last
// guess began; its text goes to Owner.Tentative. A guess never holds up
// what decides text: a piece's decode, a speculation or the release
// abandons a guess running, and a guess that comes back after a piece
// was decided is dropped. A finished speculation is shown as a guess
// too. Guesses cost CPU: at most one decode of the piece so far per
// TentativeEvery, only while the person speaks.

// TentativeEvery is the least audio between two tentative decodes;
// TentativeMin the least audio of a piece worth a guess.
const (
	TentativeEvery = time.Second
	TentativeMin   = 600 * time.Millisecond
)

// eagerEnds is how many detector events may wait for the eager decoder.
const eagerEnds = 64

// wholeSpeculation bounds the hold a speculation decodes without pieces:
// each costs a decode of the hold so far (the speaker's next pause
// abandons it), and beyond one of whisper's 30 s windows that is eager
// decoding's job.
const wholeSpeculation = 30 * time.Second

// eagerEvent is a piece's end (a span ended at at, the last voiced window
// so far ended at since), a silence of tailQuiet seen at at after the
// last voiced window ended at since (quiet), the use's end, its last
// voiced window ending at since (ended), or the end of the detector's
// events (closed).
type eagerEvent struct {
	at, since            int64
	quiet, ended, closed bool
}

// eager is one hold's eager decoding and speculation.
type eager struct {
	on, pieces, speculate, live bool
	handed                      int // texts handed to Owner.Piece (live)

	pending []eagerEvent // waiting while a decode blocks them
	closed  bool         // no more events come
	off     bool         // cancelled: nothing more is decoded

	texts  []string
	cut    int64 // the audio decoded so far ends here
	failed bool  // a piece failed: decode the whole at the end
	lost   bool  // an event was dropped (too many waiting)

	spec  *job        // the speculation (running or done) not yet used
	piece *job        // the piece being decoded: events wait for it
	await *eagerEvent // the event that waits for spec to come back

	used, abandoned int // speculations, for the debug log

	// Tentative text: whether it is on, the guess running, where the
	// last one began (a sample position) and whether a span is open.
	guess   bool
	tent    *job
	tentAt  int64
	inSpan  bool
	guesses int // for the debug log
}

func (e *eager) init(p Params) {
	e.pieces, e.speculate, e.live = p.Pieces, p.Speculate, p.Live && p.Pieces
	e.on = p.Pieces || p.Speculate
	e.guess = p.Tentative && e.pieces
}

// tentative starts a guess at the piece being spoken, when one is due
// (see Tentative text above).
func (e *eager) tentative(h *hold) {
	if !e.guess || e.off || e.failed || h.phase != recording || !e.inSpan || e.tent != nil ||
		e.piece != nil || e.await != nil || len(e.pending) > 0 || e.spec != nil && !e.spec.finished {
		return
	}
	if pcm.Duration(int(h.fed-e.cut)) < TentativeMin || pcm.Duration(int(h.fed-e.tentAt)) < TentativeEvery {
		return
	}
	e.tentAt = h.fed
	e.guesses++
	e.tent = h.startDecode(h.copyAudio(e.cut, h.fed), saidSoFar(e.texts), DecodeBound(pcm.Duration(int(h.fed-e.cut))))
	e.tent.from, e.tent.to = e.cut, h.fed
}

// dropTent abandons the guess running.
func (e *eager) dropTent() {
	if e.tent != nil {
		if !e.tent.finished {
			e.tent.cancel()
		}
		e.tent = nil
	}
}

// showGuess hands a guess's text to the owner while it is still a guess
// at the piece being spoken: recording, and no piece decided since it
// began.
func (e *eager) showGuess(h *hold, j *job) {
	if !e.guess || j.err != nil || j.from != e.cut || h.phase != recording {
		return
	}
	if t := strings.TrimSpace(j.text); t != "" {
		h.deps.Owner.Tentative(t)
	}
}

// push hands the eager decoding an event of the detector.
func (e *eager) push(h *hold, ev eagerEvent) {
	if !e.on || e.closed {
		return
	}
	if ev.closed {
		e.closed = true
		return
	}
	if len(e.pending) >= eagerEnds {
		e.lost = true
		return
	}
	e.pending = append(e.pending, ev)
	e.step(h)
}

// blocked: a decode must come back before the next event.
func (e *eager) blocked() bool { return e.piece != nil || e.await != nil }

// idle: every event has been taken and no decode blocks.
func (e *eager) idle() bool {
	return !e.on || e.off || e.closed && len(e.pending) == 0 && !e.blocked()
}

// step takes the waiting events until one blocks.
func (e *eager) step(h *hold) {
	for !e.blocked() && len(e.pending) > 0 {
		ev := e.pending[0]
		e.pending = e.pending[1:]
		e.take(h, ev)
	}
}

func (e *eager) take(h *hold, ev eagerEvent) {
	if e.failed || e.off {
		return // drained: the whole is decoded at the end, or dropped
	}
	switch {
	case ev.quiet:
		// A new silence: any speculation before it missed the voice in
		// between.
		e.dropSpec()
		if e.speculate && ev.since > e.cut && e.tent != nil {
			e.dropTent() // the speculation decides; the guess only shows
		}
		if e.speculate && ev.since > e.cut && (e.pieces || pcm.Duration(int(ev.at-e.cut)) <= wholeSpeculation) { // a voice since the last piece
			e.spec = h.startDecode(h.copyAudio(e.cut, ev.at), saidSoFar(e.texts), DecodeBound(pcm.Duration(int(ev.at-e.cut))))
			e.spec.from, e.spec.to, e.spec.since = e.cut, ev.at, ev.since
		}
		return
	case ev.ended:
		// Pieces: the flush ended the last one already. Whole: the
		// speculation is the hold's text if no voice followed it.
		if !e.pieces && e.spec != nil && ev.since <= e.spec.since {
			e.waitSpec(h, ev)
		}
		return
	case !e.pieces:
		return // span ends are no pieces without eager decoding
	}
	if e.spec != nil && e.spec.from == e.cut && ev.since <= e.spec.since {
		// The piece ended with no voice after the speculation's silence
		// began: its audio holds all that was said in the piece (what
		// follows it, to a span end the detector's flush put at the end
		// of the audio, is silence).
		e.waitSpec(h, ev)
		return
	}
	e.startPiece(h, ev.at)
}

// waitSpec makes ev wait for the speculation.
func (e *eager) waitSpec(h *hold, ev eagerEvent) {
	e.await = &ev
	if e.spec.finished {
		e.specBack(h)
	}
}

// specBack takes the speculation an event waited for.
func (e *eager) specBack(h *hold) {
	ev, s := *e.await, e.spec
	e.await = nil
	if ev.ended { // the whole hold
		if s.err == nil {
			e.used++
			e.commit(h, s.text, s.to, s.to-s.from, s.took, true)
			e.spec = nil
		}
		return
	}
	e.spec = nil
	if s.err == nil {
		e.used++
		e.commit(h, s.text, max(ev.at, s.to), s.to-s.from, s.took, true)
		return
	}
	e.abandoned++ // failed: decode the piece itself
	e.startPiece(h, ev.at)
}

// startPiece decodes the audio from the last piece's end to at.
func (e *eager) startPiece(h *hold, at int64) {
	e.dropSpec()
	e.dropTent()
	piece := h.copyAudio(e.cut, at)
	if len(piece) == 0 {
		return
	}
	e.piece = h.startDecode(piece, saidSoFar(e.texts), DecodeBound(pcm.Duration(len(piece))))
	e.piece.from, e.piece.to = e.cut, e.cut+int64(len(piece))
}

// decoded takes a decode of the eager decoding that came back.
func (e *eager) decoded(h *hold, j *job) {
	switch {
	case j == e.piece:
		e.piece = nil
		if j.err != nil {
			e.failed = true
			h.log.Warn("a piece of the hold could not be decoded: the whole hold is decoded at release", "err", j.err)
		} else {
			e.commit(h, j.text, j.to, j.to-j.from, j.took, false)
		}
	case j == e.spec && e.await != nil:
		e.specBack(h)
	case j == e.tent:
		e.tent = nil
		e.showGuess(h, j)
		return
	case j == e.spec:
		e.showGuess(h, j) // a speculation not (yet) needed is a guess too
		return
	default:
		return // one abandoned
	}
	e.step(h)
}

// dropSpec abandons the speculation.
func (e *eager) dropSpec() {
	if e.spec != nil {
		if !e.spec.finished {
			e.spec.cancel()
		}
		e.spec = nil
		e.abandoned++
	}
}

// commit keeps a decoded piece: its text joins the others and the audio
// decoded so far ends at cut.
func (e *eager) commit(h *hold, text string, cut, samples int64, took time.Duration, speculated bool) {
	e.cut = cut
	if t := strings.TrimSpace(text); t != "" {
		e.texts = append(e.texts, t)
		h.deps.Owner.Preview(strings.Join(e.texts, " "))
		// Live: a piece decided while the key is held goes out at once;
		// from the release on, the rest is typed with the hold's end.
		if e.live && h.phase == recording && e.handed == len(e.texts)-1 {
			e.handed++
			h.deps.Owner.Piece(t)
		}
	}
	h.log.Debug("hold: piece decoded", "piece", len(e.texts), "audio_ms", pcm.Duration(int(samples)).Milliseconds(),
		"decode_ms", took.Milliseconds(), "speculated", speculated)
}

// finish ends the eager decoding (every event taken) and returns the
// pieces' text and where their audio ends, or ok false when the whole
// hold must be decoded instead: a piece failed or an event was dropped,
// or (without pieces) no speculation was used.
func (e *eager) finish(log *slog.Logger) (text string, cut int64, ok bool) {
	if !e.on {
		return "", 0, false
	}
	e.dropSpec()
	e.dropTent()
	log.Debug("hold: speculations", "used", e.used, "dropped", e.abandoned, "pieces", e.pieces, "guesses", e.guesses)
	if e.off || !e.pieces && e.used == 0 || (e.failed || e.lost) && !e.live {
		return "", 0, false
	}
	return strings.Join(e.texts, " "), e.cut, true
}

// incomplete: live pieces stopped short of the end (a piece failed, an
// event was dropped): the audio after the last one is decoded at the end.
func (e *eager) incomplete() bool { return e.live && (e.failed || e.lost) }

// split fills in a live Result's Pieces (those handed out) and Rest (the
// pieces decided after them, and then more, the decode of what follows
// the pieces).
func (e *eager) split(r *Result, more string) {
	if !e.live {
		return
	}
	r.Pieces = slices.Clone(e.texts[:e.handed])
	rest := slices.Clone(e.texts[e.handed:])
	if more != "" {
		rest = append(rest, more)
	}
	r.Rest = strings.Join(rest, " ")
}

// cancel stops the eager decoding: the decodes running are abandoned,
// the events waiting dropped.
func (e *eager) cancel() {
	e.off = true
	for _, j := range []*job{e.spec, e.piece, e.tent} {
		if j != nil && !j.finished {
			j.cancel()
		}
	}
	e.spec, e.piece, e.await, e.pending, e.tent = nil, nil, nil, nil, nil
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
