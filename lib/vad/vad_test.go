package vad

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"go/build"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/pcm"
)

const rate = pcm.SampleRate

func secs(s float64) int { return int(math.Round(s * rate)) }

// scale sets the RMS level of x to db dBFS and converts to s16.
func scale(x []float64, db float64) []int16 {
	var sum float64
	for _, v := range x {
		sum += v * v
	}
	rms := math.Sqrt(sum / float64(len(x)))
	k := 32768 * math.Pow(10, db/20) / rms
	out := make([]int16, len(x))
	for i, v := range x {
		out[i] = int16(max(-32768, min(32767, math.Round(v*k))))
	}
	return out
}

func silence(n int) []int16 { return make([]int16, n) }

func white(n int, db float64, seed uint64) []int16 {
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([]float64, n)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	return scale(x, db)
}

// fan is steady low-frequency noise with a mains hum: what a desk fan or a
// computer sounds like.
func fan(n int, db float64, seed uint64) []int16 {
	r := rand.New(rand.NewPCG(seed, 2))
	x := make([]float64, n)
	var lp float64
	for i := range x {
		lp = 0.97*lp + 0.03*r.NormFloat64()
		t := float64(i) / rate
		x[i] = lp + 0.02*math.Sin(2*math.Pi*50*t) + 0.01*math.Sin(2*math.Pi*100*t)
	}
	return scale(x, db)
}

// envelope is the syllable rhythm of the speech-like burst: 4 syllables a
// second, silent between them.
func envelope(t float64) float64 {
	s := math.Sin(math.Pi * 4 * t)
	return s * s
}

// speech is a speech-like burst: a harmonic tone at 140 Hz, amplitude
// modulated at the syllable rate. n should be a multiple of 1/4 s so it ends
// between syllables.
func speech(n int, db float64) []int16 {
	x := make([]float64, n)
	for i := range x {
		t := float64(i) / rate
		var v float64
		for k := 1; k <= 8; k++ {
			v += math.Sin(2*math.Pi*140*float64(k)*t) / float64(k)
		}
		x[i] = envelope(t) * v
	}
	return scale(x, db)
}

// click is a short loud decaying impulse.
func click(n int) []int16 {
	r := rand.New(rand.NewPCG(uint64(n), 3))
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(20000 * math.Exp(-float64(i)/float64(n)) * (r.Float64()*2 - 1))
	}
	return out
}

// mix adds b into a at offset at, clipping.
func mix(a []int16, at int, b []int16) []int16 {
	for i, v := range b {
		a[at+i] = int16(max(-32768, min(32767, int(a[at+i])+int(v))))
	}
	return a
}

// segment runs a whole stream through a Segmenter in chunks and checks the
// invariants every result must hold.
func segment(t *testing.T, cfg Config, stream []int16, chunk int) []Utterance {
	t.Helper()
	s := NewSegmenter(cfg)
	var got []Utterance
	for i := 0; i < len(stream); i += chunk {
		got = append(got, s.Write(stream[i:min(i+chunk, len(stream))])...)
	}
	got = append(got, s.Flush()...)
	if s.InSpeech() {
		t.Errorf("InSpeech() after Flush = true")
	}
	checkUtterances(t, cfg, stream, got)
	return got
}

func checkUtterances(t *testing.T, cfg Config, stream []int16, got []Utterance) {
	t.Helper()
	maxUtt := int64(pcm.Samples(resolveMax(cfg)))
	var prev int64
	for i, u := range got {
		if u.Start < prev || u.End <= u.Start || u.End > int64(len(stream)) {
			t.Fatalf("utterance %d = [%d, %d), previous ended at %d, stream %d: out of order or out of range",
				i, u.Start, u.End, prev, len(stream))
		}
		if u.End-u.Start > maxUtt {
			t.Errorf("utterance %d is %v, longer than MaxUtterance", i, u.Duration())
		}
		if !slicesEqual(u.Samples, stream[u.Start:u.End]) {
			t.Errorf("utterance %d samples are not stream[%d:%d]", i, u.Start, u.End)
		}
		prev = u.End
	}
}

func resolveMax(cfg Config) time.Duration {
	return time.Duration(resolve(cfg).maxUtt) * time.Second / rate
}

func slicesEqual(a, b []int16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func describe(us []Utterance) string {
	var b strings.Builder
	for _, u := range us {
		fmt.Fprintf(&b, "[%.3fs %.3fs) ", float64(u.Start)/rate, float64(u.End)/rate)
	}
	return b.String()
}

func TestNoSpeech(t *testing.T) {
	cfg := DefaultConfig()
	tests := []struct {
		name   string
		stream []int16
	}{
		{"silence 30s", silence(secs(30))},
		{"white noise -45 dBFS", white(secs(10), -45, 1)},
		{"white noise -60 dBFS", white(secs(10), -60, 2)},
		{"white noise -35 dBFS", white(secs(10), -35, 3)},
		{"fan 1s", fan(secs(1), -40, 4)},
		{"fan 5s", fan(secs(5), -40, 5)},
		{"fan 30s", fan(secs(30), -40, 6)},
		{"quiet fan 30s", fan(secs(30), -55, 7)},
		{"click 5ms", mix(silence(secs(2)), secs(1.003), click(secs(0.005)))},
		{"click 30ms", mix(silence(secs(2)), secs(1.011), click(secs(0.03)))},
		{"click 80ms", mix(silence(secs(2)), secs(1.007), click(secs(0.08)))},
		{"click 80ms in fan", mix(fan(secs(3), -45, 8), secs(1.5), click(secs(0.08)))},
		{"clicks 300ms apart", mix(mix(silence(secs(3)), secs(1), click(secs(0.06))), secs(1.36), click(secs(0.06)))},
		{"speech below MinLevel", speech(secs(2), -62)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := segment(t, cfg, tt.stream, 4096); len(got) != 0 {
				t.Errorf("utterances = %s, want none", describe(got))
			}
			if HasSpeech(tt.stream, cfg) {
				t.Errorf("HasSpeech() = true, want false")
			}
		})
	}
}

// TestNoiseOnsetRecovers pins a known limit: steady noise above MinLevel that
// starts abruptly after digital silence reads as speech until the floor
// window (1.5 s) has forgotten the silence. What must hold is that this
// costs at most one short utterance and the floor then settles for good.
func TestNoiseOnsetRecovers(t *testing.T) {
	in := append(silence(secs(3)), fan(secs(30), -40, 17)...)
	got := segment(t, DefaultConfig(), in, 4096)
	if len(got) > 1 || (len(got) == 1 && (got[0].Duration() > 2500*time.Millisecond || got[0].End > int64(secs(5.5)))) {
		t.Errorf("utterances = %s, want at most one, shorter than 2.5s, right after the onset at 3s", describe(got))
	}
}

type burst struct{ at, dur float64 } // seconds

// stream lays speech-like bursts at -20 dBFS over a background.
func stream(background []int16, bursts ...burst) []int16 {
	for _, b := range bursts {
		mix(background, secs(b.at), speech(secs(b.dur), -20))
	}
	return background
}

func TestBursts(t *testing.T) {
	cfg := DefaultConfig()
	tests := []struct {
		name       string
		background []int16
		bursts     []burst
	}{
		{"one in silence", silence(secs(4)), []burst{{1, 1.5}}},
		{"three in silence", silence(secs(9)), []burst{{1, 1.5}, {3.5, 0.5}, {5, 2.5}}},
		{"five short", silence(secs(9)), []burst{{0.5, 0.5}, {2, 0.5}, {3.5, 0.5}, {5, 0.5}, {6.5, 0.5}}},
		{"three in white noise -55", white(secs(9), -55, 9), []burst{{1, 1.5}, {3.5, 0.5}, {5, 2.5}}},
		{"three in fan -42", fan(secs(9), -42, 10), []burst{{1, 1.5}, {3.5, 0.5}, {5, 2.5}}},
		{"after long fan", fan(secs(14), -40, 11), []burst{{10, 2}}},
		{"at stream start", silence(secs(3)), []burst{{0, 1}}},
		{"running into EOF", silence(secs(3)), []burst{{1.5, 1.5}}},
		{"one pause of 500ms stays one", silence(secs(5)), []burst{{1, 1}, {2.5, 1}}},
	}
	pre, post := secs(0.3), secs(0.2)
	const tol = rate / 10 // 100 ms
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := stream(tt.background, tt.bursts...)
			got := segment(t, cfg, in, 4096)
			type span struct{ start, end int64 }
			var want []span
			for _, b := range tt.bursts {
				s := span{int64(max(0, secs(b.at)-pre)), int64(min(len(in), secs(b.at+b.dur)+post))}
				if n := len(want); n > 0 && s.start-want[n-1].end < int64(secs(0.6)-pre-post) {
					want[n-1].end = s.end // a pause shorter than MinSilence
					continue
				}
				want = append(want, s)
			}
			if len(got) != len(want) {
				t.Fatalf("utterances = %s, want %d", describe(got), len(want))
			}
			for i, w := range want {
				if d := got[i].Start - w.start; d < -tol || d > tol {
					t.Errorf("utterance %d starts at %.3fs, want %.3fs", i, float64(got[i].Start)/rate, float64(w.start)/rate)
				}
				if d := got[i].End - w.end; d < -tol || d > tol {
					t.Errorf("utterance %d ends at %.3fs, want %.3fs", i, float64(got[i].End)/rate, float64(w.end)/rate)
				}
				if !HasSpeech(got[i].Samples, cfg) {
					t.Errorf("HasSpeech(utterance %d) = false", i)
				}
			}
			if !HasSpeech(in, cfg) {
				t.Errorf("HasSpeech(stream) = false")
			}
		})
	}
}

// TestPreRollStopsAtPreviousUtterance: with a pause shorter than the post-
// and pre-roll together, the next utterance starts where the previous one
// ended instead of repeating its audio.
func TestPreRollStopsAtPreviousUtterance(t *testing.T) {
	cfg := Config{PreRoll: 500 * time.Millisecond, PostRoll: 300 * time.Millisecond, MinSilence: 400 * time.Millisecond}
	in := stream(silence(secs(5)), burst{1, 1}, burst{2.6, 1})
	got := segment(t, cfg, in, 4096)
	if len(got) != 2 {
		t.Fatalf("utterances = %s, want 2", describe(got))
	}
	if got[1].Start != got[0].End {
		t.Errorf("second utterance starts at %.3fs, want the first one's end %.3fs",
			float64(got[1].Start)/rate, float64(got[0].End)/rate)
	}
}

// TestStutteredStartKeepsPreRoll: the slowest run that still starts an
// utterance (MinSpeech of 20 ms pulses, 100 ms apart) keeps its full
// pre-roll: the ring is long enough for it.
func TestStutteredStartKeepsPreRoll(t *testing.T) {
	cfg := DefaultConfig()
	in := silence(secs(4))
	tone := speech(secs(0.25), -20)[secs(0.115):secs(0.135)] // 20 ms at the syllable peak
	for k := range 6 {
		mix(in, secs(1+0.12*float64(k)), tone)
	}
	mix(in, secs(1.72), speech(secs(1), -20))
	got := segment(t, cfg, in, 4096)
	if len(got) != 1 {
		t.Fatalf("utterances = %s, want 1", describe(got))
	}
	if d := got[0].Start - int64(secs(0.7)); d < -rate/10 || d > rate/10 {
		t.Errorf("utterance starts at %.3fs, want 0.7s (pre-roll before the first pulse)", float64(got[0].Start)/rate)
	}
}

// TestWriteReportsPromptly checks that an utterance comes out of the Write
// that completes its trailing silence, not later, and that InSpeech follows
// the speech.
func TestWriteReportsPromptly(t *testing.T) {
	cfg := DefaultConfig()
	in := stream(silence(secs(5)), burst{1, 1})
	s := NewSegmenter(cfg)
	step := secs(0.01)
	var firstSpeech, ended int = -1, -1
	for i := 0; i < len(in); i += step {
		out := s.Write(in[i : i+step])
		if s.InSpeech() && firstSpeech < 0 {
			firstSpeech = i + step
		}
		if len(out) > 0 {
			if ended >= 0 {
				t.Fatalf("second utterance at %.2fs", float64(i)/rate)
			}
			ended = i + step
			if s.InSpeech() {
				t.Errorf("InSpeech() = true right after the utterance ended")
			}
		}
	}
	// Speech starts at 1 s; MinSpeech is 120 ms.
	if firstSpeech < secs(1.1) || firstSpeech > secs(1.25) {
		t.Errorf("InSpeech() first true at %.3fs, want about 1.12s", float64(firstSpeech)/rate)
	}
	// Speech ends at 2 s; MinSilence is 600 ms.
	if ended < secs(2.5) || ended > secs(2.7) {
		t.Errorf("utterance reported at %.3fs, want about 2.6s", float64(ended)/rate)
	}
	if got := s.Flush(); got != nil {
		t.Errorf("Flush() = %s, want nothing", describe(got))
	}
}

func TestChunkSizeInvariance(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxUtterance = 3 * time.Second // so a cut is in the stream too
	in := stream(fan(secs(16), -45, 12), burst{0.5, 1}, burst{2.2, 0.5}, burst{4, 6}, burst{11, 1.75}, burst{14.5, 1.5})
	mix(in, secs(3.3), click(secs(0.05)))
	want := segment(t, cfg, in, len(in))
	if len(want) < 5 {
		t.Fatalf("whole-stream utterances = %s, want at least 5", describe(want))
	}
	for _, chunk := range []int{1, 7, 160, 319, 320, 321, 4096, 48000} {
		t.Run(fmt.Sprint(chunk), func(t *testing.T) {
			got := segment(t, cfg, in, chunk)
			if diff := cmp.Diff(want, got, cmp.Comparer(slicesEqual)); diff != "" {
				t.Errorf("Write(%d at a time) differs from one Write (-want +got):\n%s", chunk, diff)
			}
		})
	}
}

func TestMaxUtterance(t *testing.T) {
	cfg := DefaultConfig()
	in := stream(silence(secs(42)), burst{1, 40})
	got := segment(t, cfg, in, 4096)
	if len(got) != 2 {
		t.Fatalf("utterances = %s, want 2", describe(got))
	}
	first, second := got[0], got[1]
	if d := first.Duration(); d > 25*time.Second || d < 24*time.Second {
		t.Errorf("first utterance is %v, want 24s..25s", d)
	}
	if first.End != second.Start {
		t.Errorf("cut loses or repeats audio: first ends at %d, second starts at %d", first.End, second.Start)
	}
	// The cut is in a pause between syllables, not mid-syllable.
	if e := envelope(float64(first.End-int64(secs(1))) / rate); e > 0.1 {
		t.Errorf("cut at %.3fs where the envelope is %.2f, want a pause (< 0.1)", float64(first.End)/rate, e)
	}
	if d := second.End - int64(secs(41.2)); d < -rate/10 || d > rate/10 {
		t.Errorf("second utterance ends at %.3fs, want 41.2s", float64(second.End)/rate)
	}
}

// TestMaxUtteranceInPause: when MaxUtterance falls in a pause after the
// speech, the utterance ends there; no speechless remainder follows.
func TestMaxUtteranceInPause(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxUtterance = 3 * time.Second // the utterance opens at 0.7 s: full at 3.7 s
	tests := []struct {
		name   string
		bursts []burst
		want   [][2]float64
	}{
		{"silence follows", []burst{{1, 2.5}}, [][2]float64{{0.7, 3.7}}},
		{"speech resumes", []burst{{1, 2.5}, {4, 1}}, [][2]float64{{0.7, 3.7}, {3.7, 5.2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := segment(t, cfg, stream(silence(secs(7)), tt.bursts...), 4096)
			if len(got) != len(tt.want) {
				t.Fatalf("utterances = %s, want %v", describe(got), tt.want)
			}
			for i, w := range tt.want {
				if d := got[i].Start - int64(secs(w[0])); d < -rate/10 || d > rate/10 {
					t.Errorf("utterance %d starts at %.3fs, want %.1fs", i, float64(got[i].Start)/rate, w[0])
				}
				if d := got[i].End - int64(secs(w[1])); d < -rate/10 || d > rate/10 {
					t.Errorf("utterance %d ends at %.3fs, want %.1fs", i, float64(got[i].End)/rate, w[1])
				}
				if !HasSpeech(got[i].Samples, cfg) {
					t.Errorf("HasSpeech(utterance %d) = false", i)
				}
			}
		})
	}
}

func TestMemoryBounded(t *testing.T) {
	cfg := DefaultConfig()
	for _, tt := range []struct {
		name  string
		chunk []int16
	}{
		{"silence", silence(4096)},
		{"fan", fan(4096, -42, 13)},
		{"odd chunk of fan", fan(999, -42, 13)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSegmenter(cfg)
			ringCap := cap(s.ring)
			// Ten minutes.
			for range 10 * 60 * rate / len(tt.chunk) {
				if out := s.Write(tt.chunk); out != nil {
					t.Fatalf("utterance in %s: %s", tt.name, describe(out))
				}
			}
			if cap(s.ring) != ringCap || s.utt != nil || cap(s.pend) != frameLen {
				t.Errorf("buffers grew: ring %d (was %d), utt %d, pend %d", cap(s.ring), ringCap, cap(s.utt), cap(s.pend))
			}
			if a := testing.AllocsPerRun(50, func() { s.Write(tt.chunk) }); a != 0 {
				t.Errorf("Write() allocates %v times per call between utterances, want 0", a)
			}
		})
	}
	// Endless speech is bounded by MaxUtterance.
	cfg.MaxUtterance = 2 * time.Second
	s := NewSegmenter(cfg)
	long := speech(secs(20), -20)
	maxLen := int(resolve(cfg).maxUtt) + frameLen
	for i := 0; i < len(long); i += 1000 {
		s.Write(long[i:min(i+1000, len(long))])
		if len(s.utt) > maxLen {
			t.Fatalf("open utterance holds %d samples, want at most %d", len(s.utt), maxLen)
		}
	}
}

func TestFlush(t *testing.T) {
	cfg := DefaultConfig()
	t.Run("open utterance", func(t *testing.T) {
		in := stream(silence(secs(2)+123), burst{1, 1})
		s := NewSegmenter(cfg)
		if got := s.Write(in); len(got) != 0 {
			t.Fatalf("Write() = %s before EOF", describe(got))
		}
		if !s.InSpeech() {
			t.Fatalf("InSpeech() = false at EOF inside speech")
		}
		got := s.Flush()
		if len(got) != 1 || got[0].End != int64(len(in)) {
			t.Fatalf("Flush() = %s, want one utterance to EOF %d", describe(got), len(in))
		}
		if !slicesEqual(got[0].Samples, in[got[0].Start:]) {
			t.Errorf("flushed samples are not the stream's tail (with the partial frame)")
		}
		if again := s.Flush(); again != nil {
			t.Errorf("second Flush() = %s, want nothing", describe(again))
		}
	})
	t.Run("post-roll at EOF", func(t *testing.T) {
		// Speech ends 400 ms before EOF: not yet MinSilence, but more than
		// PostRoll, so the utterance ends 200 ms after the speech.
		in := stream(silence(secs(2.4)), burst{1, 1})
		s := NewSegmenter(cfg)
		if got := s.Write(in); len(got) != 0 {
			t.Fatalf("Write() = %s before EOF", describe(got))
		}
		got := s.Flush()
		if len(got) != 1 {
			t.Fatalf("Flush() = %s, want one utterance", describe(got))
		}
		if d := got[0].End - int64(secs(2.2)); d < -rate/10 || d > rate/10 {
			t.Errorf("flushed utterance ends at %.3fs, want 2.2s", float64(got[0].End)/rate)
		}
	})
	t.Run("speech too short at EOF", func(t *testing.T) {
		s := NewSegmenter(cfg)
		s.Write(append(silence(secs(1)), speech(secs(0.08), -20)...))
		if got := s.Flush(); got != nil {
			t.Errorf("Flush() = %s, want nothing", describe(got))
		}
	})
	t.Run("positions go on after Flush", func(t *testing.T) {
		s := NewSegmenter(cfg)
		s.Write(silence(secs(1) + 5))
		s.Flush()
		got := append(s.Write(stream(silence(secs(3)), burst{1, 1})), s.Flush()...)
		if len(got) != 1 || got[0].Start < int64(secs(1)+5) {
			t.Errorf("after Flush utterances = %s, want one starting after 1s", describe(got))
		}
	})
}

func TestSamplesAreCopies(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxUtterance = 3 * time.Second
	in := stream(silence(secs(12)), burst{1, 6}, burst{8, 1})
	orig := append([]int16(nil), in...)
	got := segment(t, cfg, in, 500)
	if len(got) < 3 {
		t.Fatalf("utterances = %s, want at least 3", describe(got))
	}
	for i := range in {
		in[i] = 0
	}
	for i, u := range got {
		if !slicesEqual(u.Samples, orig[u.Start:u.End]) {
			t.Errorf("utterance %d changed with the caller's buffer", i)
		}
		for j := range u.Samples {
			u.Samples[j] = 1
		}
	}
	for i, u := range got[1:] {
		if !slicesEqual(u.Samples, orig[u.Start:u.End]) && u.Samples[0] != 1 {
			t.Errorf("utterance %d shares memory with another", i+1)
		}
	}
}

func TestDefaults(t *testing.T) {
	if diff := cmp.Diff(resolve(DefaultConfig()), resolve(Config{}), cmp.AllowUnexported(params{})); diff != "" {
		t.Errorf("zero Config differs from DefaultConfig (-default +zero):\n%s", diff)
	}
	p := resolve(DefaultConfig())
	if p.minSpeech != 6 || p.endSilence != 30 || p.preRoll != 4800 || p.postRoll != 3200 || p.maxUtt != 25*rate {
		t.Errorf("resolve(DefaultConfig()) = %+v", p)
	}
}

func TestThresholds(t *testing.T) {
	in := stream(fan(secs(4), -40, 14), burst{1, 2}) // speech 20 dB above the fan
	tests := []struct {
		name string
		cfg  Config
		want bool
	}{
		{"default", DefaultConfig(), true},
		{"threshold 30 dB", Config{Threshold: 30}, false},
		{"min level -10 dBFS", Config{MinLevel: -10}, false},
		{"min speech 3s", Config{MinSpeech: 3 * time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HasSpeech(in, tt.cfg); got != tt.want {
				t.Errorf("HasSpeech() = %v, want %v", got, tt.want)
			}
			if got := len(segment(t, tt.cfg, in, 320)) > 0; got != tt.want {
				t.Errorf("Segmenter found speech = %v, want %v", got, tt.want)
			}
		})
	}
}

// jfkPath finds the whisper.cpp bindings' sample in the module cache.
func jfkPath(t *testing.T) string {
	t.Helper()
	const mod = "github.com/ggerganov/whisper.cpp/bindings/go"
	var dirs []string
	if out, err := exec.CommandContext(testwait.Context(t), "go", "list", "-m", "-f", "{{.Dir}}", mod).Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		cache = filepath.Join(build.Default.GOPATH, "pkg", "mod")
	}
	dirs = append(dirs, filepath.Join(cache, mod+"@v0.0.0-20260227185758-9453b4b9be9b"))
	for _, d := range dirs {
		p := filepath.Join(d, "samples", "jfk.wav")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("jfk.wav not found in %v (is the whisper.cpp module downloaded? go mod download)", dirs)
	return ""
}

// readWAV reads a 16 kHz mono s16 WAV file, walking its chunks (jfk.wav has
// a LIST chunk before its data).
func readWAV(t *testing.T, path string) []int16 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 44 || !bytes.Equal(b[:4], []byte("RIFF")) || !bytes.Equal(b[8:12], []byte("WAVE")) {
		t.Fatalf("%s: not a RIFF/WAVE file", path)
	}
	var fmtOK bool
	for p := 12; p+8 <= len(b); {
		id, size := string(b[p:p+4]), int(binary.LittleEndian.Uint32(b[p+4:]))
		body := b[p+8 : min(len(b), p+8+size)]
		switch id {
		case "fmt ":
			fmtOK = binary.LittleEndian.Uint16(body[0:]) == 1 && binary.LittleEndian.Uint16(body[2:]) == 1 &&
				binary.LittleEndian.Uint32(body[4:]) == rate && binary.LittleEndian.Uint16(body[14:]) == 16
		case "data":
			if !fmtOK {
				t.Fatalf("%s: not 16 kHz mono s16 PCM", path)
			}
			return pcm.Decode(nil, body)
		}
		p += 8 + size + size%2
	}
	t.Fatalf("%s: no data chunk", path)
	return nil
}

func TestJFK(t *testing.T) {
	cfg := DefaultConfig()
	in := readWAV(t, jfkPath(t))
	if d := pcm.Duration(len(in)); d < 10*time.Second || d > 12*time.Second {
		t.Fatalf("jfk.wav is %v, want about 11s", d)
	}
	got := segment(t, cfg, in, 1024)
	t.Logf("jfk.wav utterances: %s", describe(got))
	if len(got) == 0 {
		t.Fatal("no utterance in jfk.wav")
	}
	lo, hi := int64(secs(0.3)), int64(secs(10.6))
	var covered int64
	for i, u := range got {
		if u.Start < 0 || u.End > int64(secs(11)) {
			t.Errorf("utterance %d = [%d, %d) outside [0, 11s]", i, u.Start, u.End)
		}
		covered += max(0, min(u.End, hi)-max(u.Start, lo))
		if !HasSpeech(u.Samples, cfg) {
			t.Errorf("HasSpeech(utterance %d) = false", i)
		}
	}
	if frac := float64(covered) / float64(hi-lo); frac < 0.8 {
		t.Errorf("utterances cover %.0f%% of the speech span, want at least 80%%", 100*frac)
	}
	if !HasSpeech(in, cfg) {
		t.Errorf("HasSpeech(jfk.wav) = false")
	}
	// The same speech over a steady fan is still found.
	noisy := mix(fan(len(in), -40, 15), 0, in)
	if got := segment(t, cfg, noisy, 1024); len(got) == 0 {
		t.Errorf("no utterance in jfk.wav over a -40 dBFS fan")
	}
}

func BenchmarkWrite(b *testing.B) {
	in := stream(fan(secs(10), -45, 16), burst{1, 2}, burst{4, 1.5}, burst{7, 2})
	for _, chunk := range []int{160, 4096} {
		b.Run(fmt.Sprint(chunk), func(b *testing.B) {
			b.SetBytes(int64(len(in) * pcm.FrameBytes))
			b.ReportAllocs()
			for b.Loop() {
				s := NewSegmenter(DefaultConfig())
				for i := 0; i < len(in); i += chunk {
					s.Write(in[i:min(i+chunk, len(in))])
				}
				s.Flush()
			}
		})
	}
}
