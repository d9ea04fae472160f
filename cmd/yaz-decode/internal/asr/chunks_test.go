package asr

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/transcript"
)

// TestChunkBounds: chunks cover the input without gap or overlap, none is
// longer than the engine holds, each starts on a 10 ms frame, and a cut
// falls into a quiet gap near the end of the allowed length when there is
// one.
func TestChunkBounds(t *testing.T) {
	const max = 5 * 16000
	loud := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(0.5 * math.Sin(float64(i)*0.37))
		}
		return out
	}
	if got := chunkBounds(loud(max), max); len(got) != 1 || got[0] != (span{0, max}) {
		t.Errorf("chunkBounds(exactly max) = %v, want one chunk", got)
	}
	if got := chunkBounds(nil, max); len(got) != 1 || got[0] != (span{0, 0}) {
		t.Errorf("chunkBounds(nothing) = %v", got)
	}
	audio := loud(23 * 16000)
	// A 60 ms silence at 4.5 s, inside the last quarter of the first chunk.
	gap := 4*16000 + 8000
	for i := gap; i < gap+960; i++ {
		audio[i] = 0
	}
	got := chunkBounds(audio, max)
	if len(got) < 5 {
		t.Fatalf("chunkBounds(23 s, 5 s) = %v, want at least 5 chunks", got)
	}
	if got[0].end < gap || got[0].end > gap+960 {
		t.Errorf("first cut at sample %d, want it in the silence at %d–%d", got[0].end, gap, gap+960)
	}
	for i, c := range got {
		if c.end-c.start > max || c.end <= c.start || c.start%melHop != 0 {
			t.Errorf("chunk %d = %v: empty, longer than %d or not on a frame", i, c, max)
		}
		if i > 0 && c.start != got[i-1].end {
			t.Errorf("chunk %d starts at %d, the one before ends at %d", i, c.start, got[i-1].end)
		}
	}
	if last := got[len(got)-1]; last.end != len(audio) {
		t.Errorf("last chunk ends at %d, want %d", last.end, len(audio))
	}
	if again := chunkBounds(audio, max); !cmp.Equal(got, again, cmp.AllowUnexported(span{})) {
		t.Error("the same audio was cut differently")
	}
}

// TestChunkBoundsCuts: where the first cut of a long input falls (the
// cases lib/piece's cut is tested with, at a Parakeet chunk's sizes): in a
// pause of the chunk's last quarter, never in one before it; silence and a
// steady tone are cut at the chunk's end, on a mel frame, also when the
// chunk's length (n_audio_ctx-1 mel frames) is an odd number of them.
func TestChunkBoundsCuts(t *testing.T) {
	const sec = 16000
	tone := func(seconds float64, gaps ...[2]float64) []float32 {
		out := make([]float32, int(seconds*sec))
		for i := range out {
			out[i] = float32(0.25 * math.Sin(2*math.Pi*300*float64(i)/sec))
		}
		for _, g := range gaps {
			clear(out[int(g[0]*sec):int((g[0]+g[1])*sec)])
		}
		return out
	}
	odd := 599 * melHop // a model of 600 frames: 5.99 s
	for _, tc := range []struct {
		name   string
		audio  []float32
		max    int
		lo, hi int // the first cut must fall in [lo, hi]
	}{
		{"a pause in the last quarter", tone(12, [2]float64{4.6, 0.2}), 5 * sec, 4.6 * sec, 4.8 * sec},
		{"a pause before the last quarter is not taken", tone(12, [2]float64{2, 1}, [2]float64{4.5, 0.2}), 5 * sec, 4.5 * sec, 4.7 * sec},
		{"silence is cut at the chunk's end", make([]float32, 12*sec), 5 * sec, 5 * sec, 5 * sec},
		{"a steady tone is cut near the chunk's end", tone(12), 5 * sec, 5*sec - 3*2*melHop, 5 * sec},
		{"silence, an odd number of mel frames", make([]float32, 12*sec), odd, odd - 2*melHop, odd},
		{"a pause, an odd number of mel frames", tone(12, [2]float64{5, 0.3}), odd, 5 * sec, 5.3 * sec},
	} {
		got := chunkBounds(tc.audio, tc.max)
		if len(got) < 2 {
			t.Errorf("%s: %v, want the input cut", tc.name, got)
			continue
		}
		if c := got[0].end; c < tc.lo || c > tc.hi {
			t.Errorf("%s: first cut at %d (%.3f s), want it in [%d, %d]", tc.name, c, float64(c)/sec, tc.lo, tc.hi)
		}
		for i, c := range got {
			if c.end-c.start > tc.max || c.end <= c.start || c.start%melHop != 0 || (i > 0 && c.start != got[i-1].end) {
				t.Errorf("%s: chunk %d = %v of %v: empty, longer than %d, not on a mel frame or not after the one before", tc.name, i, c, got, tc.max)
			}
		}
		if got[len(got)-1].end != len(tc.audio) {
			t.Errorf("%s: the chunks end at %d, the input at %d", tc.name, got[len(got)-1].end, len(tc.audio))
		}
	}
}

// TestSegmentPieces: tokens become segments cut where a word starts after
// a sentence end, a pause of a second, ten seconds of segment, or a chunk
// boundary, never inside a word; the segments joined are the tokens' text.
func TestSegmentPieces(t *testing.T) {
	p := func(text string, t0, t1 int64, chunk int) timedPiece {
		return timedPiece{text: text, t0: t0, t1: t1, chunk: chunk}
	}
	toks := []timedPiece{
		p(" And", 24, 56, 0), p(" so", 56, 88, 0), p(",", 88, 88, 0), p(" my", 104, 128, 0),
		p(" f", 128, 136, 0), p("ell", 136, 152, 0), p("ow", 152, 176, 0), p(".", 176, 176, 0),
		p(" Ask", 200, 230, 0), // after a sentence end
		p(" not", 400, 420, 0), // after a 1.7 s pause
		p("ing", 900, 1300, 0), // a long word piece: no cut inside a word
		p(" what", 1300, 1320, 0),
		p(" your", 1400, 1420, 0), // 10 s after "not" started
		p("try", 1600, 1620, 1),   // a new chunk cuts even inside a word
	}
	got := segmentPieces(toks, 20*time.Second, false)
	ms := func(v int64) time.Duration { return time.Duration(v) * 10 * time.Millisecond }
	want := []transcript.Segment{
		{Start: ms(24), End: ms(176), Text: " And so, my fellow."},
		{Start: ms(200), End: ms(230), Text: " Ask"},
		{Start: ms(400), End: ms(1320), Text: " noting what"},
		{Start: ms(1400), End: ms(1420), Text: " your"},
		{Start: ms(1600), End: ms(1620), Text: "try"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("segments (-want +got):\n%s", diff)
	}
	var all strings.Builder
	for _, tk := range toks[:len(toks)-1] {
		all.WriteString(tk.text)
	}
	if got, want := transcript.Text(segmentPieces(toks[:len(toks)-1], 20*time.Second, false)), strings.TrimSpace(all.String()); got != want {
		t.Errorf("joined segments %q, want the tokens' text %q", got, want)
	}
	// Times stay inside the audio.
	if s := segmentPieces([]timedPiece{p(" a", 90, 130, 0)}, time.Second, false); s[0].End != time.Second {
		t.Errorf("a token ending past the audio: segment ends at %v, want 1s", s[0].End)
	}
	if s := segmentPieces(nil, time.Second, false); len(s) != 0 {
		t.Errorf("no tokens gave %v", s)
	}
}
