package spans

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/transcript"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/voice"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/vadspan"
)

// levelStream is a stand-in for silero.Stream: a window is speech (1) when
// its RMS is above −40 dBFS, else 0, and vadspan.Tracker makes the spans,
// so the grouping can be tested on audio whose spans are known.
type levelStream struct {
	tr   *vadspan.Tracker
	pend []float32
	ev   []vadspan.Event
}

func newLevelStream(p vadspan.Params) *levelStream { return &levelStream{tr: vadspan.NewTracker(p)} }

func windowProb(w []float32) float32 {
	var sum float64
	for _, x := range w {
		sum += float64(x) * float64(x)
	}
	if sum/vadspan.Window > 1e-4 {
		return 1
	}
	return 0
}

func (s *levelStream) Write(x []float32) ([]vadspan.Event, error) {
	s.pend = append(s.pend, x...)
	var probs []float32
	for len(s.pend) >= vadspan.Window {
		probs = append(probs, windowProb(s.pend[:vadspan.Window]))
		s.pend = s.pend[vadspan.Window:]
	}
	return s.tr.Push(probs...), nil
}

func (s *levelStream) Flush() ([]vadspan.Event, error) {
	s.ev = s.ev[:0]
	if len(s.pend) > 0 {
		s.ev = append(s.ev, s.tr.Push(windowProb(s.pend))...)
		s.pend = nil
	}
	return append(s.ev, s.tr.Flush()...), nil
}

func (s *levelStream) Earliest() int64 { return s.tr.Earliest() }

// layout is audio made of tones (speech) and zeros (pauses), in seconds.
type layout []struct {
	speech bool
	secs   float64
}

// render makes the audio, each sample of speech tagged with its position:
// a 300 Hz tone whose amplitude encodes the sample offset, so a group's
// audio can be traced back to the file.
func (l layout) render() []float32 {
	var out []float32
	for _, p := range l {
		n := int(p.secs * pcm.SampleRate)
		for range n {
			if p.speech {
				out = append(out, float32(0.3*math.Sin(2*math.Pi*300*float64(len(out))/pcm.SampleRate)))
			} else {
				out = append(out, 0)
			}
		}
	}
	return out
}

// speechRanges are the sample ranges of speech in the layout.
func (l layout) speechRanges() [][2]int64 {
	var out [][2]int64
	var at int64
	for _, p := range l {
		n := int64(p.secs * pcm.SampleRate)
		if p.speech {
			out = append(out, [2]int64{at, at + n})
		}
		at += n
	}
	return out
}

// groupsOf runs audio through a grouper in blocks of the given size and
// returns the groups and the largest buffer it held.
func groupsOf(t *testing.T, audio []float32, block int) ([]*Group, int) {
	t.Helper()
	var gs []*Group
	g := NewGrouper(newLevelStream(vadspan.Params{SpeechPad: voice.FilePad, MaxSpeech: voice.FileMaxSpan}), func(gr *Group) error {
		gs = append(gs, gr)
		return nil
	})
	most := 0
	for i := 0; i < len(audio); i += block {
		if err := g.Write(audio[i:min(i+block, len(audio))]); err != nil {
			t.Fatal(err)
		}
		most = max(most, len(g.buf))
	}
	if err := g.Flush(); err != nil {
		t.Fatal(err)
	}
	return gs, most
}

// TestGrouper: every speech range of the file ends up in exactly one
// group, at the offset its pieces say (the audio there is the file's, to
// the sample), no group is longer than maxGroup, a short pause stays as it
// is, a long one becomes a stitch of silence, and the result does not
// depend on the block size.
func TestGrouper(t *testing.T) {
	l := layout{
		{false, 1}, {true, 3}, {false, 0.1}, {true, 2}, // a short pause stays
		{false, 20}, {true, 4}, // a long one is a stitch
		{false, 2}, {true, 12}, {false, 1}, {true, 9}, // 29 s at most: a new group
		{false, 40}, {true, 1}, {false, 3},
	}
	audio := l.render()
	var first []*Group
	for _, block := range []int{333, 16000, 77777, len(audio)} {
		t.Run(fmt.Sprint(block), func(t *testing.T) {
			gs, _ := groupsOf(t, audio, block)
			if first == nil {
				first = gs
			} else if diff := cmp.Diff(first, gs, cmp.AllowUnexported(Group{}, piece{})); diff != "" {
				t.Fatalf("block size %d changed the groups (-first +now):\n%s", block, diff)
			}
			covered := map[int]int{}
			for gi, g := range gs {
				if len(g.audio) > maxGroup {
					t.Errorf("group %d holds %d samples, more than %d", gi, len(g.audio), maxGroup)
				}
				for pi, p := range g.pieces {
					got := g.audio[p.at:p.end()]
					if diff := cmp.Diff(audio[p.from:p.to], got); diff != "" {
						t.Fatalf("group %d piece %d [%d, %d) is not the file's audio there", gi, pi, p.from, p.to)
					}
					if pi > 0 {
						prev := g.pieces[pi-1]
						if gap := p.at - prev.end(); gap != stitch {
							t.Errorf("group %d: %d samples between pieces %d and %d, want a stitch of %d", gi, gap, pi-1, pi, stitch)
						}
						for _, x := range g.audio[prev.end():p.at] {
							if x != 0 {
								t.Fatalf("group %d: the stitch before piece %d is not silence", gi, pi)
							}
						}
					}
					for ri, r := range l.speechRanges() {
						if p.from <= r[0] && r[1] <= p.to {
							covered[ri]++
						}
					}
				}
			}
			for ri := range l.speechRanges() {
				if covered[ri] != 1 {
					t.Errorf("speech range %d lies whole in %d pieces, want 1", ri, covered[ri])
				}
			}
			// 3+0.1+2 s, 4 s and 12 s make 21.7 s with their pads and
			// stitches; 9 s more would pass 29 s.
			var pieces []int
			for _, g := range gs {
				pieces = append(pieces, len(g.pieces))
			}
			if diff := cmp.Diff([]int{3, 2}, pieces); diff != "" {
				t.Errorf("pieces per group (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGrouperBoundedMemory: an hour of speech and pauses keeps no more
// audio than a span and the detector's look-back.
func TestGrouperBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("an hour of audio")
	}
	var l layout
	for range 60 * 60 / 40 {
		l = append(l, layout{{true, 25}, {false, 5}, {true, 0.5}, {false, 9.5}}...)
	}
	gs, most := groupsOf(t, l.render(), 32000)
	if limit := int(voice.FileMaxSpan/time.Second+4) * pcm.SampleRate; most > limit {
		t.Errorf("the grouper held %d samples (%.1f s), want at most %d", most, float64(most)/pcm.SampleRate, limit)
	}
	if len(gs) < 90 {
		t.Errorf("%d groups from an hour, want about 90", len(gs))
	}
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// TestMapSegments: whisper's times in a group become the file's times:
// one to one inside a piece, proportionally across a short pause, and both
// ends of a segment without token times mapped on their own (as
// whisper-cli --vad maps them), so a segment that crosses a long pause
// keeps the time of its later words.
func TestMapSegments(t *testing.T) {
	g := mapGroup()
	tests := []struct {
		name     string
		in, want [2]int64 // ms
	}{
		{"inside the first piece", [2]int64{500, 1500}, [2]int64{1500, 2500}},
		{"across the short pause", [2]int64{1000, 3000}, [2]int64{2000, 4300}},
		{"in a stitch, start", [2]int64{2100, 2500}, [2]int64{3250, 3800}},
		{"inside the last piece", [2]int64{4000, 7900}, [2]int64{30100, 34000}},
		{"across the long pause, mostly after", [2]int64{3500, 7000}, [2]int64{4800, 33100}},
		{"across the long pause, mostly before", [2]int64{1000, 4000}, [2]int64{2000, 30100}},
		{"past the end", [2]int64{7000, 9000}, [2]int64{33100, 34000}},
		{"before the start", [2]int64{0, 0}, [2]int64{1000, 1000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := g.MapSegments([]transcript.Segment{{Start: ms(tt.in[0]), End: ms(tt.in[1]), Text: "x"}})
			want := []transcript.Segment{{Start: ms(tt.want[0]), End: ms(tt.want[1]), Text: "x"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("MapSegments(%v ms) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// mapGroup has three pieces: file 1–3 s at 0; file 3.5–5 s at 2.2 (a
// 0.5 s pause, one stretch of speech); file 30–34 s at 3.9 (a long pause:
// a stitch at 3.7–3.9 s).
func mapGroup() *Group {
	s := func(sec float64) int64 { return int64(sec * pcm.SampleRate) }
	return &Group{pieces: []piece{
		{at: 0, from: s(1), to: s(3)},
		{at: s(2.2), from: s(3.5), to: s(5)},
		{at: s(3.9), from: s(30), to: s(34)},
	}}
}

// TestMapSegmentsSplitsAtStitch: a segment whose tokens lie on both sides
// of a long pause's stitch becomes one segment per stretch of speech, each
// with its own words at their own time; a word is never cut in two (a
// token that goes on a word stays with its start); a token inside the
// stitch goes to the nearer stretch; and a segment whose words all lie in
// one stretch is kept inside it.
func TestMapSegmentsSplitsAtStitch(t *testing.T) {
	g := mapGroup()
	tok := func(a, b int64, text string) transcript.Token {
		return transcript.Token{Start: ms(a), End: ms(b), Text: text}
	}
	seg := func(a, b int64, text string) transcript.Segment {
		return transcript.Segment{Start: ms(a), End: ms(b), Text: text}
	}
	tests := []struct {
		name string
		in   transcript.Segment
		want []transcript.Segment
	}{
		{"words on both sides",
			transcript.Segment{Start: ms(1000), End: ms(7000), Text: " a b cd e", Tokens: []transcript.Token{
				tok(1000, 2000, " a"), tok(2000, 3500, " b"), tok(4000, 5000, " c"), tok(5000, 6000, "d"), tok(6000, 7000, " e")}},
			[]transcript.Segment{seg(2000, 4800, " a b"), seg(30100, 33100, " cd e")}},
		{"a word across the stitch stays whole, before it",
			transcript.Segment{Start: ms(1000), End: ms(7000), Text: " a bc d", Tokens: []transcript.Token{
				tok(1000, 3000, " a"), tok(3000, 3600, " b"), tok(3950, 4500, "c"), tok(5000, 7000, " d")}},
			[]transcript.Segment{seg(2000, 5000, " a bc"), seg(31100, 33100, " d")}},
		{"a token in the stitch goes to the nearer stretch",
			transcript.Segment{Start: ms(3000), End: ms(6000), Text: " a b c d", Tokens: []transcript.Token{
				tok(3000, 3500, " a"), tok(3700, 3780, " b"), tok(3860, 3890, " c"), tok(4000, 6000, " d")}},
			[]transcript.Segment{seg(4300, 5000, " a b"), seg(30000, 32100, " c d")}},
		{"all words after the stitch",
			transcript.Segment{Start: ms(3000), End: ms(6000), Text: " a b", Tokens: []transcript.Token{
				tok(4000, 5000, " a"), tok(5000, 6000, " b")}},
			[]transcript.Segment{seg(30000, 32100, " a b")}},
		{"all words before the stitch",
			transcript.Segment{Start: ms(1000), End: ms(5000), Text: " a b", Tokens: []transcript.Token{
				tok(1000, 2000, " a"), tok(2000, 3000, " b")}},
			[]transcript.Segment{seg(2000, 5000, " a b")}},
		{"a script without spaces splits between characters, not inside one",
			transcript.Segment{Start: ms(1000), End: ms(7000), Text: "日本語。東京", Tokens: []transcript.Token{
				tok(1000, 2000, "日本"), tok(2000, 3000, "語"), tok(3000, 3500, "\xe3\x80"), tok(4000, 4500, "\x82"),
				tok(4500, 5000, "東"), tok(5000, 7000, "京")}},
			[]transcript.Segment{seg(2000, 5000, "日本語。"), seg(30600, 33100, "東京")}},
		{"tokens out of order never go back",
			transcript.Segment{Start: ms(1000), End: ms(7000), Text: " a b c", Tokens: []transcript.Token{
				tok(1000, 2000, " a"), tok(4000, 5000, " b"), tok(2000, 3000, " c")}},
			[]transcript.Segment{seg(2000, 3000, " a"), seg(30100, 33100, " b c")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := g.MapSegments([]transcript.Segment{tt.in})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("MapSegments (-want +got):\n%s", diff)
			}
		})
	}
}
