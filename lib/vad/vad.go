// Package vad finds speech in wire-format PCM (16 kHz mono s16, see package
// pcm) and cuts a stream into utterances.
//
// The detector is energy based. The stream is cut into 20 ms frames; a frame
// is speech-like when its level is Config.Threshold dB above the noise floor
// and above the absolute Config.MinLevel. The noise floor is the minimum, over
// the last 1.5 s, of the level averaged over 100 ms: it falls at once when the
// room gets quieter and rises only once the quieter frames have aged out of
// that window, so the pauses that all speech has keep it down while steady
// noise (a fan, a hum) becomes the floor within 1.5 s.
//
// An utterance starts once Config.MinSpeech of speech-like frames has been
// seen, pauses of up to 100 ms allowed between them, so a click starts
// nothing; it starts Config.PreRoll before the first of those frames, the
// audio being kept in a ring buffer, so the first syllable is not lost. It
// ends after Config.MinSilence without a speech-like frame, and keeps
// Config.PostRoll of audio after the last one. An utterance that reaches
// Config.MaxUtterance is cut in the middle of the quietest frame of its last
// second and the rest continues as the next utterance, so a long monologue is
// cut in a pause rather than mid-word where it can.
//
// A known limit: steady noise above MinLevel that starts abruptly after
// digital silence (a microphone being unmuted next to a loud fan) reads as
// speech until the silence has left the floor window, which costs one short
// utterance of noise (about 2 s); HasSpeech, applying the same rule, does not
// reject that utterance either.
//
// Memory is bounded: between utterances the Segmenter keeps only its ring
// (PreRoll plus the start window) and a few frame levels, however long the
// silence lasts; an utterance is at most MaxUtterance long.
package vad

import (
	"math"
	"time"

	"github.com/yazses/yazses/lib/pcm"
)

// Config tunes the detector. A duration or Threshold of zero or less, or a
// MinLevel of zero or more, takes its default (see DefaultConfig).
type Config struct {
	MinSpeech    time.Duration // speech needed to start an utterance, default 120ms
	MinSilence   time.Duration // end of utterance after this much silence, default 600ms
	PreRoll      time.Duration // audio kept before the speech, default 300ms
	PostRoll     time.Duration // tail kept after speech, default 200ms
	MaxUtterance time.Duration // default 25s (whisper window is 30 s); at least PreRoll+MinSpeech+1s
	Threshold    float64       // dB above noise floor, default 9
	MinLevel     float64       // absolute dBFS floor for speech, default -50
}

// DefaultConfig returns the defaults, tuned for a desk microphone.
func DefaultConfig() Config {
	return Config{
		MinSpeech:    120 * time.Millisecond,
		MinSilence:   600 * time.Millisecond,
		PreRoll:      300 * time.Millisecond,
		PostRoll:     200 * time.Millisecond,
		MaxUtterance: 25 * time.Second,
		Threshold:    9,
		MinLevel:     -50,
	}
}

const (
	frameLen     = pcm.SampleRate / 50 // 20 ms
	frameDur     = 20 * time.Millisecond
	smoothFrames = 5  // the floor follows the level averaged over 100 ms
	floorFrames  = 75 // and its minimum over 1.5 s
	gapFrames    = 5  // longest pause (100 ms) inside the run that starts an utterance
	cutFrames    = 50 // MaxUtterance cuts at the quietest frame of the last second
	silentDB     = -100
)

// params is a Config resolved to frames and samples.
type params struct {
	minSpeech  int   // frames
	endSilence int   // frames of silence that end an utterance
	preRoll    int64 // samples
	postRoll   int64
	maxUtt     int64
	threshold  float64
	minLevel   float64
	history    int // samples of audio the ring keeps
}

func resolve(c Config) params {
	d := DefaultConfig()
	pick := func(v, def time.Duration) time.Duration {
		if v <= 0 {
			return def
		}
		return v
	}
	c.MinSpeech = pick(c.MinSpeech, d.MinSpeech)
	c.MinSilence = pick(c.MinSilence, d.MinSilence)
	c.PreRoll = pick(c.PreRoll, d.PreRoll)
	c.PostRoll = pick(c.PostRoll, d.PostRoll)
	c.MaxUtterance = pick(c.MaxUtterance, d.MaxUtterance)
	if c.Threshold <= 0 {
		c.Threshold = d.Threshold
	}
	if c.MinLevel >= 0 {
		c.MinLevel = d.MinLevel
	}
	c.MaxUtterance = max(c.MaxUtterance, c.PreRoll+c.MinSpeech+time.Second)
	frames := func(v time.Duration) int { return max(1, int((v+frameDur-1)/frameDur)) }
	p := params{
		minSpeech:  frames(c.MinSpeech),
		endSilence: frames(max(c.MinSilence, c.PostRoll)),
		preRoll:    int64(pcm.Samples(c.PreRoll)),
		postRoll:   int64(pcm.Samples(c.PostRoll)),
		maxUtt:     int64(pcm.Samples(c.MaxUtterance)),
		threshold:  c.Threshold,
		minLevel:   c.MinLevel,
	}
	// The longest run that can start an utterance: minSpeech speech frames
	// with the longest allowed pause between each two.
	span := p.minSpeech + (p.minSpeech-1)*gapFrames
	p.history = int(p.preRoll) + span*frameLen
	return p
}

type eventKind uint8

const (
	evStart eventKind = iota + 1 // an utterance starts at sample at
	evEnd                        // the utterance ends at sample at
	evCut                        // the utterance ends at sample at and the next starts there
)

type event struct {
	kind eventKind
	at   int64
}

type frameLevel struct {
	start int64
	db    float64
}

// detector is the frame classifier and state machine, without audio; the
// Segmenter adds the audio, HasSpeech uses it alone.
type detector struct {
	p params

	// Noise floor.
	pow        [smoothFrames]float64
	powN, powI int
	smooth     [floorFrames]float64
	smN, smI   int
	// Levels of the last second, for MaxUtterance cuts.
	recent     [cutFrames]frameLevel
	recN, recI int

	inSpeech  bool
	cand      bool  // a run of speech-like frames is under way
	candStart int64 // its first frame
	candCount int   // its speech-like frames
	candGap   int   // silent frames since its last speech-like one

	uttStart      int64
	lastSpeechEnd int64
	silRun        int
	prevEnd       int64 // end of the previous utterance; pre-roll never reaches before it

	ev []event
}

func newDetector(p params) detector { return detector{p: p, ev: make([]event, 0, 4)} }

// level is the mean power of a frame, relative to full scale.
func level(samples []int16) float64 {
	var sum float64
	for _, s := range samples {
		v := float64(s)
		sum += v * v
	}
	return sum / float64(len(samples)) / (32768 * 32768)
}

func toDB(p float64) float64 { return max(silentDB, 10*math.Log10(p+1e-12)) }

// floor adds a frame's power and returns the noise floor in dBFS.
func (d *detector) floor(p float64) float64 {
	d.pow[d.powI] = p
	d.powI = (d.powI + 1) % smoothFrames
	d.powN = min(d.powN+1, smoothFrames)
	var sum float64
	for _, v := range d.pow[:d.powN] {
		sum += v
	}
	d.smooth[d.smI] = toDB(sum / float64(d.powN))
	d.smI = (d.smI + 1) % floorFrames
	d.smN = min(d.smN+1, floorFrames)
	f := d.smooth[0]
	for _, v := range d.smooth[:d.smN] {
		f = min(f, v)
	}
	return f
}

// step classifies the frame of samples that starts at sample start and
// returns what it changed. The slice is reused by the next call.
func (d *detector) step(start int64, samples []int16) []event {
	end := start + int64(len(samples))
	p := level(samples)
	db := toDB(p)
	speech := db > d.floor(p)+d.p.threshold && db > d.p.minLevel
	d.ev = d.ev[:0]

	if d.inSpeech && end-d.uttStart > d.p.maxUtt {
		cut := d.quietest(start)
		if cut < d.lastSpeechEnd {
			// Speech follows the cut: the rest goes on as the next utterance.
			d.ev = append(d.ev, event{evCut, cut})
			d.uttStart = cut
		} else {
			// Only silence follows: end there.
			d.finish(cut)
		}
	}

	switch {
	case d.inSpeech && speech:
		d.lastSpeechEnd = end
		d.silRun = 0
	case d.inSpeech:
		d.silRun++
		if d.silRun >= d.p.endSilence {
			d.finish(min(d.lastSpeechEnd+d.p.postRoll, end))
		}
	case speech:
		if !d.cand {
			d.cand, d.candStart, d.candCount = true, start, 0
		}
		d.candCount++
		d.candGap = 0
		if d.candCount >= d.p.minSpeech {
			s := max(d.candStart-d.p.preRoll, d.prevEnd, end-int64(d.p.history), 0)
			d.ev = append(d.ev, event{evStart, s})
			d.inSpeech, d.cand = true, false
			d.uttStart, d.lastSpeechEnd, d.silRun = s, end, 0
		}
	case d.cand:
		d.candGap++
		if d.candGap > gapFrames {
			d.cand = false
		}
	}

	d.recent[d.recI] = frameLevel{start, db}
	d.recI = (d.recI + 1) % cutFrames
	d.recN = min(d.recN+1, cutFrames)
	return d.ev
}

func (d *detector) finish(at int64) {
	d.ev = append(d.ev, event{evEnd, at})
	d.inSpeech, d.cand = false, false
	d.prevEnd = at
	d.silRun = 0
}

// quietest returns the middle of the quietest frame of the current utterance
// in the second before sample cur (Quietest), or cur if there is none. The
// result is after uttStart.
func (d *detector) quietest(cur int64) int64 {
	at, ok := Quietest(func(yield func(int64, float64) bool) {
		for _, f := range d.recent[:d.recN] {
			if f.start >= d.uttStart && f.start >= cur-cutFrames*frameLen && f.start < cur && !yield(f.start, f.db) {
				return
			}
		}
	}, frameLen)
	if !ok {
		return cur
	}
	return at
}

// flush ends the open utterance at EOF, pos being the end of the stream.
func (d *detector) flush(pos int64) (int64, bool) {
	d.cand = false
	if !d.inSpeech {
		d.prevEnd = pos
		return 0, false
	}
	d.ev = d.ev[:0]
	at := min(d.lastSpeechEnd+d.p.postRoll, pos)
	d.finish(at)
	return at, true
}

// Utterance is a piece of the stream that holds speech.
type Utterance struct {
	Start, End int64   // sample offsets in the whole stream (Start includes pre-roll, End includes post-roll)
	Samples    []int16 // the utterance audio (a copy the caller may keep)
}

// Duration is the playing time of the utterance.
func (u Utterance) Duration() time.Duration { return pcm.Duration(int(u.End - u.Start)) }

// uttCap is the initial capacity of an utterance buffer: 4 s.
const uttCap = 4 * pcm.SampleRate

// Segmenter cuts a stream into utterances. It is not safe for concurrent use.
type Segmenter struct {
	d        detector
	ring     []int16 // the last len(ring) samples; sample n is at ring[n%len(ring)]
	pend     []int16 // a partial frame
	pos      int64   // samples through the detector
	utt      []int16 // the open utterance, from uttStart to pos
	uttStart int64
}

// NewSegmenter returns a Segmenter at the start of a stream.
func NewSegmenter(cfg Config) *Segmenter {
	p := resolve(cfg)
	return &Segmenter{
		d:    newDetector(p),
		ring: make([]int16, p.history+frameLen),
		pend: make([]int16, 0, frameLen),
	}
}

// InSpeech reports whether an utterance is open.
func (s *Segmenter) InSpeech() bool { return s.d.inSpeech }

// Write adds samples, in chunks of any size, and returns the utterances that
// ended within them, or nil. The result does not depend on how the stream is
// chunked.
func (s *Segmenter) Write(samples []int16) []Utterance {
	var out []Utterance
	for len(samples) > 0 {
		if len(s.pend) == 0 && len(samples) >= frameLen {
			out = s.frame(samples[:frameLen], out)
			samples = samples[frameLen:]
			continue
		}
		n := min(frameLen-len(s.pend), len(samples))
		s.pend = append(s.pend, samples[:n]...)
		samples = samples[n:]
		if len(s.pend) == frameLen {
			out = s.frame(s.pend, out)
			s.pend = s.pend[:0]
		}
	}
	return out
}

// Flush ends the stream: it returns the open utterance, if there is one (it
// holds at least MinSpeech of speech), with the audio of a trailing partial
// frame. The Segmenter may go on with more samples after it, counting on from
// the same position.
func (s *Segmenter) Flush() []Utterance {
	if s.d.inSpeech {
		s.utt = append(s.utt, s.pend...)
	}
	s.store(s.pend)
	s.pos += int64(len(s.pend))
	s.pend = s.pend[:0]
	if at, ok := s.d.flush(s.pos); ok {
		return []Utterance{s.take(at)}
	}
	return nil
}

func (s *Segmenter) frame(f []int16, out []Utterance) []Utterance {
	start := s.pos
	s.store(f)
	if s.d.inSpeech {
		s.utt = append(s.utt, f...)
	}
	s.pos += int64(len(f))
	for _, e := range s.d.step(start, f) {
		switch e.kind {
		case evStart:
			s.uttStart = e.at
			s.utt = s.fromRing(e.at, s.pos)
		case evEnd:
			out = append(out, s.take(e.at))
		case evCut:
			rest := s.utt[e.at-s.uttStart:]
			out = append(out, s.take(e.at))
			s.utt = append(make([]int16, 0, max(uttCap, len(rest))), rest...)
			s.uttStart = e.at
		}
	}
	return out
}

// take hands the open utterance up to sample end to the caller.
func (s *Segmenter) take(end int64) Utterance {
	n := end - s.uttStart
	u := Utterance{Start: s.uttStart, End: end, Samples: s.utt[:n:n]}
	s.utt = nil
	return u
}

// store writes samples that start at s.pos into the ring.
func (s *Segmenter) store(samples []int16) {
	at := s.pos
	if len(samples) > len(s.ring) {
		at += int64(len(samples) - len(s.ring))
		samples = samples[len(samples)-len(s.ring):]
	}
	i := int(at % int64(len(s.ring)))
	n := copy(s.ring[i:], samples)
	copy(s.ring, samples[n:])
}

// fromRing returns a new buffer with the samples [from, to) of the ring.
func (s *Segmenter) fromRing(from, to int64) []int16 {
	from = max(from, to-int64(len(s.ring)))
	n := int(to - from)
	buf := make([]int16, n, max(uttCap, n))
	i := int(from % int64(len(s.ring)))
	c := copy(buf, s.ring[i:])
	copy(buf[c:], s.ring)
	return buf
}

// HasSpeech reports whether samples hold speech by the Segmenter's rule:
// whether an utterance would start in them. Silence, steady noise and clicks
// do not count.
func HasSpeech(samples []int16, cfg Config) bool {
	d := newDetector(resolve(cfg))
	for i := 0; i+frameLen <= len(samples); i += frameLen {
		for _, e := range d.step(int64(i), samples[i:i+frameLen]) {
			if e.kind == evStart {
				return true
			}
		}
	}
	return false
}
