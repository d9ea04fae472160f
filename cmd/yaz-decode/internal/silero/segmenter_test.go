package silero

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/vad"
	"github.com/yazses/yazses/lib/vadspan"
)

// Both detectors cut streams behind the same interface.
var (
	_ vad.Cutter = (*Segmenter)(nil)
	_ vad.Cutter = (*vad.Segmenter)(nil)
)

func segment(t *testing.T, g vad.Cutter, s16 []int16, block int) []vad.Utterance {
	t.Helper()
	var out []vad.Utterance
	for i := 0; i < len(s16); i += block {
		out = append(out, g.Write(s16[i:min(i+block, len(s16))])...)
	}
	return append(out, g.Flush()...)
}

// TestSegmenter: the utterances of a stream are its spans, with their
// audio, whatever the block size; after a Flush the offsets count on.
func TestSegmenter(t *testing.T) {
	m := model(t)
	s16 := toS16(jfk(t))
	audio := pcm.ToFloat32(nil, s16)
	want := spans(t, m, audio, vadspan.DefaultParams())
	for _, block := range []int{1, 160, 800, 4096, len(s16)} {
		g, err := m.NewSegmenter(vadspan.DefaultParams(), 0)
		if err != nil {
			t.Fatal(err)
		}
		utts := segment(t, g, s16, block)
		if len(utts) != len(want) {
			t.Fatalf("blocks of %d: %d utterances, want %d spans %v", block, len(utts), len(want), want)
		}
		for i, u := range utts {
			if u.Start != want[i].Start || u.End != want[i].End {
				t.Errorf("blocks of %d: utterance %d is %d–%d, span %v", block, i, u.Start, u.End, want[i])
			}
			if !slices.Equal(u.Samples, s16[u.Start:u.End]) {
				t.Errorf("blocks of %d: utterance %d does not hold the stream's samples %d–%d", block, i, u.Start, u.End)
			}
		}
		// A second stream after the Flush counts on from the first's end.
		again := segment(t, g, s16, block)
		n := int64(len(s16))
		for i, u := range again {
			if u.Start != want[i].Start+n || u.End != want[i].End+n || !slices.Equal(u.Samples, s16[want[i].Start:want[i].End]) {
				t.Errorf("blocks of %d: after Flush, utterance %d is %d–%d, want %d–%d", block, i, u.Start, u.End, want[i].Start+n, want[i].End+n)
			}
		}
		if len(again) != len(want) || g.InSpeech() || g.Err() != nil {
			t.Errorf("blocks of %d: after Flush %d utterances, InSpeech %v, Err %v", block, len(again), g.InSpeech(), g.Err())
		}
		g.Close()
	}
}

// TestSegmenterMaxUtterance: speech longer than the maximum is cut into
// pieces no longer than it, end to end, in its pauses where it has them.
func TestSegmenterMaxUtterance(t *testing.T) {
	m := model(t)
	one := jfk(t)
	var audio []float32
	for range 5 {
		audio = append(audio, one...)
	}
	s16 := toS16(audio)
	// Pauses of up to 2 s do not end a span: all of it is one.
	p := vadspan.Params{MinSilence: 2 * time.Second}
	whole := spans(t, m, pcm.ToFloat32(nil, s16), p)
	if len(whole) != 1 {
		t.Fatalf("spans %v, want one", whole)
	}
	probs, err := m.Probs(context.Background(), pcm.ToFloat32(nil, s16))
	if err != nil {
		t.Fatal(err)
	}
	const maxUtt = 8 * time.Second
	g, err := m.NewSegmenter(p, maxUtt)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	utts := segment(t, g, s16, 1000)
	if len(utts) < 6 {
		t.Fatalf("%d utterances of %v, want at least 6 pieces of at most %v", len(utts), whole[0], maxUtt)
	}
	if utts[0].Start != whole[0].Start || utts[len(utts)-1].End != whole[0].End {
		t.Errorf("pieces span %d–%d, the span is %v", utts[0].Start, utts[len(utts)-1].End, whole[0])
	}
	for i, u := range utts {
		if u.Duration() > maxUtt {
			t.Errorf("piece %d is %v long", i, u.Duration())
		}
		if i > 0 && u.Start != utts[i-1].End {
			t.Errorf("piece %d starts at %d, the last ended at %d", i, u.Start, utts[i-1].End)
		}
		if i < len(utts)-1 {
			// Cut in the middle of the quietest window of the piece's last
			// second.
			lo := (u.Start + int64(maxUtt/time.Second-1)*sr + Window - 1) / Window
			hi := (u.Start + int64(maxUtt/time.Second)*sr) / Window
			least := slices.Min(probs[lo:hi])
			if w := u.End / Window; u.End%Window != Window/2 || probs[w] != least {
				t.Errorf("piece %d is cut at %v, in a window of probability %.2f; the quietest of its last second has %.2f",
					i, time.Duration(u.End)*time.Second/sr, probs[w], least)
			}
		}
	}
}

// TestSegmenterMemory: over a long stretch without speech the Segmenter
// keeps only a little audio.
func TestSegmenterMemory(t *testing.T) {
	m := model(t)
	g, err := m.NewSegmenter(vadspan.DefaultParams(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	rng := rand.New(rand.NewPCG(15, 16))
	noise := toS16(pink(rng, 60, -40))
	most := 0
	for i := 0; i < len(noise); i += 1600 {
		if u := g.Write(noise[i:min(i+1600, len(noise))]); len(u) > 0 {
			t.Fatalf("utterances from noise: %d", len(u))
		}
		most = max(most, len(g.buf))
	}
	if most > 3*sr {
		t.Errorf("the Segmenter kept up to %.1f s of audio without speech, want at most 3 s", float64(most)/sr)
	}
}

// TestQuietSkip: with the gate on, digital silence is skipped (no network run
// for it) and the spans stay those of the ungated detector, within a
// window; with a level gate over a quiet noise floor as well.
func TestQuietSkip(t *testing.T) {
	speech := jfk(t)
	rng := rand.New(rand.NewPCG(17, 18))
	for _, tc := range []struct {
		name  string
		gate  QuietSkip
		quiet []float32
	}{
		{"digital silence", DigitalSilence, silence(20)},
		{"noise floor -70 dBFS, level -60", QuietSkip{Level: -60}, quantize(white(rng, 20, -70))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			audio := concat(speech, tc.quiet, speech, tc.quiet[:5*sr])
			want := spans(t, model(t), audio, vadspan.DefaultParams())
			gm, err := Load(modelPath(t), Options{Skip: tc.gate})
			if err != nil {
				t.Fatal(err)
			}
			defer gm.Close()
			got := spans(t, gm, audio, vadspan.DefaultParams())
			if len(got) != len(want) {
				t.Fatalf("gated spans %v, ungated %v", got, want)
			}
			for i := range got {
				if d := max(abs(got[i].Start-want[i].Start), abs(got[i].End-want[i].End)); d > Window {
					t.Errorf("gated span %v, ungated %v: %d samples apart", got[i], want[i], d)
				}
			}
			// Streamed, the gate skips most of the quiet windows.
			s, err := gm.NewStream(vadspan.DefaultParams())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var evs []vadspan.Event
			for i := 0; i < len(audio); i += 1000 {
				e, err := s.Write(audio[i:min(i+1000, len(audio))])
				if err != nil {
					t.Fatal(err)
				}
				evs = append(evs, e...)
			}
			e, _ := s.Flush()
			if sgot := pairEvents(t, append(evs, e...), int64(len(audio))); !cmp.Equal(sgot, got) {
				t.Errorf("gated stream %v, gated one shot %v", sgot, got)
			}
			quietWindows := int64(len(tc.quiet)+5*sr) / Window
			if s.Skipped() < quietWindows*8/10 {
				t.Errorf("the gate skipped %d windows of %d quiet ones", s.Skipped(), quietWindows)
			}
			t.Logf("skipped %d of %d windows; spans %v", s.Skipped(), (len(audio)+Window-1)/Window, got)
		})
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
