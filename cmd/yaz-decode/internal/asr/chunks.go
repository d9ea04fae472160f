package asr

import (
	"strings"
	"time"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/transcript"
	"github.com/yazses/yazses/lib/piece"
)

// span is one chunk of the input, in samples.
type span struct{ start, end int }

// chunkBounds splits the samples into chunks of at most most samples for
// an engine that holds no more in one pass. Each cut is lib/piece's, the
// one quiet-point cut that yazsesd's file pieces and yaz-decode's also
// use: the middle of the quietest 100 ms in the last quarter of the
// chunk's allowed length, so a cut rarely splits a word and the cuts are a
// function of the audio alone. Cuts fall on piece.Frame, two mel frames,
// so every chunk starts on a melHop frame and token times shift by whole
// frames.
func chunkBounds(samples []float32, most int) []span {
	n := len(samples)
	most = max(most/piece.Frame, 2) * piece.Frame
	var out []span
	start := 0
	for n-start > most {
		cut := start + piece.QuietCut(samples[start:start+most], most*3/4)
		out = append(out, span{start, cut})
		start = cut
	}
	return append(out, span{start, n})
}

// A cut on piece.Frame is on a mel frame (this fails to compile if not).
const _ uint = 0 - piece.Frame%melHop

// timedPiece is one decoded token: its text as printed (a leading space
// where a word starts), its time in 10 ms frames on the input's timeline,
// and the chunk it came from.
type timedPiece struct {
	text   string
	t0, t1 int64
	chunk  int
}

// Segments of a Parakeet transcript: Parakeet returns one segment per
// call, its tokens timed. For subtitles and JSON, segmentPieces cuts them
// where a word starts after a sentence end (. ? ! …), a pause of
// segmentPause or more, or once a segment spans segmentMax; and at every
// chunk boundary.
const (
	segmentPause = time.Second
	segmentMax   = 10 * time.Second
)

// segmentPieces makes transcript segments of tokens. Joined with single
// spaces (transcript.Text), the segments' texts are the tokens' text as
// parakeet-cli prints it, trimmed: a cut happens only where the next token
// starts with one space and the segment so far does not end with one. With
// withTokens, each segment keeps its tokens (Segment.Tokens).
func segmentPieces(toks []timedPiece, audio time.Duration, withTokens bool) []transcript.Segment {
	var segs []transcript.Segment
	var text strings.Builder
	var cur transcript.Segment
	open := false
	at := func(frames int64) time.Duration { return clamp(time.Duration(frames)*frameDuration, audio) }
	flush := func() {
		if open {
			cur.Text = text.String()
			segs = append(segs, cur)
		}
		text.Reset()
		open = false
	}
	var last timedPiece
	for i, t := range toks {
		if open && cuttable(t.text, text.String()) {
			done := strings.TrimSpace(text.String())
			switch {
			case t.chunk != last.chunk,
				strings.HasSuffix(done, ".") || strings.HasSuffix(done, "?") || strings.HasSuffix(done, "!") || strings.HasSuffix(done, "…"),
				time.Duration(t.t0-last.t1)*frameDuration >= segmentPause,
				at(t.t0)-cur.Start >= segmentMax:
				flush()
			}
		} else if open && t.chunk != last.chunk {
			flush()
		}
		if !open {
			cur = transcript.Segment{Start: at(t.t0), End: at(t.t1)}
			open = true
		}
		text.WriteString(t.text)
		cur.End = max(cur.End, at(t.t1))
		if withTokens {
			cur.Tokens = append(cur.Tokens, transcript.Token{Start: at(t.t0), End: at(t.t1), Text: t.text})
		}
		last = toks[i]
	}
	flush()
	return segs
}

// cuttable reports whether a segment may end before a token with text
// next: it starts a word with exactly one space, and the segment so far
// does not end with a space.
func cuttable(next, sofar string) bool {
	return len(next) > 1 && next[0] == ' ' && next[1] != ' ' && sofar != "" && !strings.HasSuffix(sofar, " ")
}
