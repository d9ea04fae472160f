// Package spans turns the speech spans of a file, as the voice detector
// finds them, into the audio whisper decodes: the spans are packed, in
// order, into groups of at most maxGroup; inside a group a pause between
// two spans becomes a stitch of silence (a shorter pause stays as it is),
// so whisper's encoder sees speech only and its audio context is trimmed
// to the group's length. Each segment whisper returns is mapped back to
// the file's timeline (Group.MapSegments). A Grouper does this as the
// file is read, in bounded memory.
package spans

import (
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/transcript"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/vadspan"
)

// How the spans are packed.
const (
	// maxGroup is the most audio one group holds: one of whisper's 30 s
	// windows, with a margin for the end of its last segment.
	maxGroup = 29 * pcm.SampleRate
	// stitch is the silence put between two spans of a group (whisper-cli
	// --vad puts 100 ms); a pause shorter than it is kept as it is.
	stitch = pcm.SampleRate / 5
	// islandGap: spans less than this apart are one stretch of speech, and
	// a segment may run across the pause between them; a segment that
	// crosses a longer pause is kept inside the stretch it overlaps most,
	// so no cue covers a long silence.
	islandGap = 3 * pcm.SampleRate / 2
)

// piece is a run of the file's audio inside a group: samples [from, to) of
// the file at offset at of the group.
type piece struct {
	at, from, to int64
}

func (p piece) end() int64 { return p.at + p.to - p.from }

// Group is the audio of one decoding: pieces of the file, in order, with
// stitches of silence between them.
type Group struct {
	audio  []float32
	pieces []piece
}

// Audio is the group's audio, which whisper decodes.
func (g *Group) Audio() []float32 { return g.audio }

// Spans is how many runs of the file's audio the group holds.
func (g *Group) Spans() int { return len(g.pieces) }

// Extent is the part of the file the group covers, in samples.
func (g *Group) Extent() (from, to int64) { return g.pieces[0].from, g.pieces[len(g.pieces)-1].to }

// toFile maps a sample offset of the group to the file's timeline: inside
// a piece one to one, inside a stitch proportionally onto the pause it
// stands for.
func (g *Group) toFile(t int64) int64 {
	ps := g.pieces
	if t <= ps[0].at {
		return ps[0].from
	}
	for i, p := range ps {
		if t <= p.end() {
			return p.from + t - p.at
		}
		if i+1 < len(ps) && t < ps[i+1].at {
			nx := ps[i+1]
			return p.to + (t-p.end())*(nx.from-p.to)/(nx.at-p.end())
		}
	}
	return ps[len(ps)-1].to
}

// islands are the stretches of speech of the group: runs of pieces less
// than islandGap apart in the file, as ranges of the group's offsets.
func (g *Group) islands() [][2]int64 {
	var out [][2]int64
	for i, p := range g.pieces {
		if i > 0 && p.from-g.pieces[i-1].to < islandGap {
			out[len(out)-1][1] = p.end()
			continue
		}
		out = append(out, [2]int64{p.at, p.end()})
	}
	return out
}

// MapSegments maps whisper's segments of the group's audio onto the file's
// timeline. A segment that lies in one stretch of speech has both ends
// mapped (toFile). One that crosses a pause of islandGap or more is split
// there by its token times (asr.Options.TokenTimes): each token goes to
// the stretch that holds it (one in a stitch to the nearer), never to a
// stretch before the previous token's, and a token that goes on a word
// stays with the word's start; each stretch's tokens become a segment
// kept inside that stretch, so no cue covers the silence and every word
// keeps its own time. A segment with no token times has both ends mapped
// as they are, as whisper-cli --vad maps them: its cue may then cover the
// pause, but no later word is put at an earlier time.
func (g *Group) MapSegments(segs []transcript.Segment) []transcript.Segment {
	isl := g.islands()
	out := make([]transcript.Segment, 0, len(segs))
	for _, s := range segs {
		a, b := int64(pcm.Samples(s.Start)), int64(pcm.Samples(s.End))
		b = max(a, b)
		runs := islandRuns(isl, s.Tokens)
		if len(runs) == 0 {
			out = append(out, transcript.Segment{Start: pcm.Duration(int(g.toFile(a))), End: pcm.Duration(int(g.toFile(b))), Text: s.Text})
			continue
		}
		for i, r := range runs {
			from, to := r.from, r.to
			text := r.text
			if i == 0 {
				from = a
			}
			if i == len(runs)-1 {
				to = b
			}
			if len(runs) == 1 {
				text = s.Text
			}
			lo, hi := isl[r.island][0], isl[r.island][1]
			from = min(max(from, lo), hi)
			to = min(max(to, from), hi)
			out = append(out, transcript.Segment{Start: pcm.Duration(int(g.toFile(from))), End: pcm.Duration(int(g.toFile(to))), Text: text})
		}
	}
	return out
}

// islandRun is a run of a segment's tokens in one stretch of speech: the
// stretch, the first token's start, the last one's end (the group's
// offsets) and their text.
type islandRun struct {
	island   int
	from, to int64
	text     string
}

// islandRuns cuts a segment's tokens into runs by the stretch of speech
// (isl) each lies in: by its middle, one in a stitch going to the nearer
// stretch, never to one before the previous token's, and a token that
// goes on a word to its word's (startsWord). No tokens: no runs.
func islandRuns(isl [][2]int64, toks []transcript.Token) []islandRun {
	var runs []islandRun
	for _, t := range toks {
		a, b := int64(pcm.Samples(t.Start)), int64(pcm.Samples(t.End))
		b = max(a, b)
		i := nearestIsland(isl, (a+b)/2)
		if n := len(runs); n > 0 {
			last := &runs[n-1]
			if i <= last.island || !startsWord(last.text, t.Text) {
				last.to = max(last.to, b)
				last.text += t.Text
				continue
			}
		}
		runs = append(runs, islandRun{island: i, from: a, to: b, text: t.Text})
	}
	return runs
}

// nearestIsland is the stretch of speech that holds t, or the nearest one
// (on a tie, the first).
func nearestIsland(isl [][2]int64, t int64) int {
	best, bestDist := 0, int64(math.MaxInt64)
	for i, r := range isl {
		if d := max(r[0]-t, t-r[1], 0); d < bestDist {
			best, bestDist = i, d
		}
	}
	return best
}

// startsWord reports whether a token whose text is next, after the text
// before, may start a new segment: it starts with a space, or, in a
// script written without spaces (Chinese, Japanese, Thai...), with a
// whole character of it after a whole character. A token that goes on a
// word, or a punctuation mark, stays with what is before.
func startsWord(before, next string) bool {
	if before == "" || strings.HasPrefix(next, " ") {
		return true
	}
	last, n := utf8.DecodeLastRuneInString(before)
	first, m := utf8.DecodeRuneInString(next)
	if last == utf8.RuneError && n <= 1 || first == utf8.RuneError && m <= 1 {
		return false // inside a character's bytes
	}
	return unicode.In(first, spaceless...)
}

// spaceless are the scripts written without spaces between words.
var spaceless = []*unicode.RangeTable{unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai, unicode.Lao,
	unicode.Khmer, unicode.Myanmar, unicode.Tibetan}

// Stream is what a Grouper needs of a detector stream (silero.Stream): span
// events as samples go in, and how far back a later start can reach.
type Stream interface {
	Write(samples []float32) ([]vadspan.Event, error)
	Flush() ([]vadspan.Event, error)
	Earliest() int64
}

// Grouper turns a file's samples, given in blocks, into groups: it runs
// them through the detector, keeps the audio a span can still need, and
// hands each group to emit once no later span fits into it. Memory is
// bounded by the longest span (voice.FileMaxSpan), the detector's look-back and
// one group, whatever the file's length.
type Grouper struct {
	s    Stream
	emit func(*Group) error

	buf       []float32 // the file's samples from bufStart on
	bufStart  int64
	pos       int64 // samples written
	open      bool  // a span has started and not ended
	spanStart int64
	cur       *Group // the group being filled, or nil
	lastEnd   int64  // the end of cur's last span
	spans     int    // spans seen
	speech    int64  // samples in them
}

func NewGrouper(s Stream, emit func(*Group) error) *Grouper {
	return &Grouper{s: s, emit: emit}
}

// Write adds the next samples of the file.
func (g *Grouper) Write(samples []float32) error {
	g.buf = append(g.buf, samples...)
	g.pos += int64(len(samples))
	evs, err := g.s.Write(samples)
	if err != nil {
		return err
	}
	if err := g.handle(evs); err != nil {
		return err
	}
	g.trim()
	return nil
}

// Flush ends the file: the open span ends, and the last group goes out.
func (g *Grouper) Flush() error {
	evs, err := g.s.Flush()
	if err != nil {
		return err
	}
	if err := g.handle(evs); err != nil {
		return err
	}
	if g.cur != nil {
		cur := g.cur
		g.cur = nil
		return g.emit(cur)
	}
	return nil
}

func (g *Grouper) handle(evs []vadspan.Event) error {
	for _, e := range evs {
		// A padded end may reach into the zero padding of the last window.
		at := min(max(e.At, g.bufStart), g.pos)
		switch e.Kind {
		case vadspan.SpeechStart:
			g.open, g.spanStart = true, at
		case vadspan.SpeechEnd:
			g.open = false
			if err := g.add(g.spanStart, at); err != nil {
				return err
			}
		}
	}
	return nil
}

// slice is the file's audio [from, to), which the buffer holds.
func (g *Grouper) slice(from, to int64) []float32 {
	return g.buf[from-g.bufStart : to-g.bufStart]
}

// add puts the span [from, to) into the current group, or, when it does
// not fit, sends that group out and starts the next with it.
func (g *Grouper) add(from, to int64) error {
	if to <= from {
		return nil
	}
	g.spans++
	g.speech += to - from
	if c := g.cur; c != nil {
		gap := from - g.lastEnd
		if gap < stitch && int64(len(c.audio))+to-g.lastEnd <= maxGroup {
			// A short pause stays: the last piece goes on.
			c.audio = append(c.audio, g.slice(g.lastEnd, to)...)
			c.pieces[len(c.pieces)-1].to = to
			g.lastEnd = to
			return nil
		}
		if gap >= stitch && int64(len(c.audio))+stitch+to-from <= maxGroup {
			c.audio = append(c.audio, make([]float32, stitch)...)
			c.pieces = append(c.pieces, piece{at: int64(len(c.audio)), from: from, to: to})
			c.audio = append(c.audio, g.slice(from, to)...)
			g.lastEnd = to
			return nil
		}
		g.cur = nil
		if err := g.emit(c); err != nil {
			return err
		}
	}
	audio := make([]float32, 0, min(maxGroup, 2*(to-from)))
	g.cur = &Group{audio: append(audio, g.slice(from, to)...), pieces: []piece{{at: 0, from: from, to: to}}}
	g.lastEnd = to
	return nil
}

// trim drops the audio no span, and no short pause before one, can reach
// any more.
func (g *Grouper) trim() {
	keep := g.s.Earliest()
	if g.open {
		keep = min(keep, g.spanStart)
	}
	if g.cur != nil {
		keep = min(keep, max(g.lastEnd, keep-stitch))
	}
	keep = min(keep, g.pos)
	if drop := keep - g.bufStart; drop >= pcm.SampleRate {
		n := copy(g.buf, g.buf[drop:])
		g.buf = g.buf[:n]
		g.bufStart = keep
	}
}

// Pos is how many samples have been written: once flushed, the file's
// length.
func (g *Grouper) Pos() int64 { return g.pos }

// Spans is how many spans have been seen.
func (g *Grouper) Spans() int { return g.spans }

// Speech is the length of the spans seen so far.
func (g *Grouper) Speech() time.Duration { return pcm.Duration(int(g.speech)) }
