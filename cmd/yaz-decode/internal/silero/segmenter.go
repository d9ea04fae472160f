package silero

import (
	"time"

	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/vad"
	"github.com/yazses/yazses/lib/vadspan"
)

// Segmenter cuts a stream of wire-format samples (16 kHz mono s16) into
// utterances with Silero: the spans of a Stream, with their audio. It has
// the energy detector's methods and utterance type (it is a vad.Cutter),
// so a caller picks one or the other at start and uses both alike.
//
// An utterance is a span, padding included (Params.SpeechPad: more pad
// keeps more of the first and last syllables, and delays each end by twice
// the pad where that is more than the 200 ms merge gap). It is returned by
// the Write that settles its end: the longer of MinSilence and the 200 ms
// merge gap after the speech (about 220 ms at the defaults). An utterance
// longer than
// maxUtterance is cut at the window of lowest speech probability in its
// last second, the rest going on as the next utterance.
//
// Memory is bounded by maxUtterance plus about a second: between spans
// only the audio a later start can still reach is kept (Stream.Earliest).
// A detector failure (whisper.cpp out of memory) stops the cutting; Err
// says why. It is not safe for concurrent use.
type Segmenter struct {
	s      *Stream
	maxUtt int64

	base     int64     // stream offset where the Stream's offsets start (after a Flush)
	buf      []int16   // audio from bufStart on
	bufStart int64     // a multiple of Window from base
	probs    []float32 // window probabilities from bufStart on
	f32      []float32
	open     bool
	uttStart int64
	err      error
}

// Cutter is vad.Cutter: what Segmenter and vad.Segmenter have in common.
type Cutter = vad.Cutter

var _ Cutter = (*Segmenter)(nil)

// NewSegmenter returns a Segmenter at the start of a stream; a
// maxUtterance of 0 means 25 s (whisper's window is 30 s).
func (m *Model) NewSegmenter(p vadspan.Params, maxUtterance time.Duration) (*Segmenter, error) {
	s, err := m.NewStream(p)
	if err != nil {
		return nil, err
	}
	if maxUtterance <= 0 {
		maxUtterance = 25 * time.Second
	}
	return &Segmenter{s: s, maxUtt: max(int64(pcm.Samples(maxUtterance)), 2*pcm.SampleRate)}, nil
}

// Close frees the detector.
func (g *Segmenter) Close() error { return g.s.Close() }

// Err is the detector failure that stopped the Segmenter, or nil.
func (g *Segmenter) Err() error { return g.err }

// InSpeech reports whether an utterance is open.
func (g *Segmenter) InSpeech() bool { return g.open }

// Write adds samples, in blocks of any size, and returns the utterances
// that ended within them, or nil. The result does not depend on how the
// stream is cut into blocks.
func (g *Segmenter) Write(samples []int16) []vad.Utterance {
	if g.err != nil {
		return nil
	}
	g.buf = append(g.buf, samples...)
	g.f32 = pcm.ToFloat32(g.f32[:0], samples)
	evs, err := g.s.Write(g.f32)
	if err != nil {
		g.err = err
		return nil
	}
	return g.handle(evs, nil)
}

// Flush ends the stream: it returns the open utterance, if there is one.
// The Segmenter may go on with more samples after it, counting on from the
// same position.
func (g *Segmenter) Flush() []vad.Utterance {
	if g.err != nil {
		return nil
	}
	evs, err := g.s.Flush()
	if err != nil {
		g.err = err
		return nil
	}
	out := g.handle(evs, nil)
	// The next stream starts where this one ended.
	g.base += g.s.Pos()
	g.s.Reset()
	g.buf, g.probs = g.buf[:0], g.probs[:0]
	g.bufStart = 0
	return out
}

func (g *Segmenter) handle(evs []vadspan.Event, out []vad.Utterance) []vad.Utterance {
	g.probs = append(g.probs, g.s.Probs()...)
	for _, e := range evs {
		at := max(e.At, g.bufStart)
		switch e.Kind {
		case vadspan.SpeechStart:
			g.open, g.uttStart = true, at
			out = g.cutLong(out, at)
		case vadspan.SpeechEnd:
			out = g.cutLong(out, at)
			out = append(out, g.take(g.uttStart, at))
			g.open = false
		}
	}
	if g.open {
		out = g.cutLong(out, g.s.Pos())
	}
	g.trim()
	return out
}

// cutLong cuts the open utterance while it is longer than maxUtt before
// sample end.
func (g *Segmenter) cutLong(out []vad.Utterance, end int64) []vad.Utterance {
	for g.open && end-g.uttStart > g.maxUtt {
		cut := g.quietest(g.uttStart+g.maxUtt-pcm.SampleRate, g.uttStart+g.maxUtt)
		out = append(out, g.take(g.uttStart, cut))
		g.uttStart = cut
	}
	return out
}

// quietest is the middle of the window of lowest probability that lies in
// [from, to) (vad.Quietest), or to when no window's probability is known
// there.
func (g *Segmenter) quietest(from, to int64) int64 {
	at, ok := vad.Quietest(func(yield func(int64, float64) bool) {
		for i := max(0, (from-g.bufStart+Window-1)/Window); i < int64(len(g.probs)); i++ {
			ws := g.bufStart + i*Window
			if ws+Window > to || !yield(ws, float64(g.probs[i])) {
				return
			}
		}
	}, Window)
	if !ok {
		return to
	}
	return at
}

// take copies the audio [from, to) of the current stream into an utterance.
func (g *Segmenter) take(from, to int64) vad.Utterance {
	to = min(to, g.bufStart+int64(len(g.buf)))
	from = min(from, to)
	s := append([]int16(nil), g.buf[from-g.bufStart:to-g.bufStart]...)
	return vad.Utterance{Start: g.base + from, End: g.base + to, Samples: s}
}

// trim drops the audio no utterance can reach any more, keeping at most
// maxUtterance and a second of it.
func (g *Segmenter) trim() {
	keep := g.s.Earliest()
	if g.open {
		keep = g.uttStart
	}
	keep = max(keep, g.s.Pos()-g.maxUtt-pcm.SampleRate)
	keep = keep / Window * Window
	if drop := keep - g.bufStart; drop >= pcm.SampleRate && drop <= int64(len(g.buf)) {
		n := copy(g.buf, g.buf[drop:])
		g.buf = g.buf[:n]
		w := drop / Window
		n = copy(g.probs, g.probs[min(w, int64(len(g.probs))):])
		g.probs = g.probs[:n]
		g.bufStart = keep
	}
}
