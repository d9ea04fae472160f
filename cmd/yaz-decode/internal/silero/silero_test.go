package silero

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/lib/modelfile"
	"github.com/yazses/yazses/lib/vadspan"
)

// cliSpans runs `whisper-cli --vad -vm MODEL` on a WAV file with the
// given parameters and returns the VAD segments it logs, in seconds.
func cliSpans(t *testing.T, wavPath string, p vadspan.Params) [][2]float64 {
	t.Helper()
	ms := func(d time.Duration) string { return strconv.Itoa(int(d / time.Millisecond)) }
	args := []string{"-m", miniWhisper(t), "-f", wavPath, "-t", "1", "-nf",
		"--vad", "-vm", modelPath(t),
		"-vt", strconv.FormatFloat(float64(p.Threshold), 'f', -1, 32),
		"-vspd", ms(p.MinSpeech), "-vsd", ms(p.MinSilence), "-vp", ms(p.SpeechPad)}
	out, err := exec.Command(whisperCLI(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("whisper-cli %v: %v\n%s", args, err, out)
	}
	re := regexp.MustCompile(`VAD segment (\d+): start = ([0-9.]+), end = ([0-9.]+)`)
	var got [][2]float64
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		a, _ := strconv.ParseFloat(m[2], 64)
		b, _ := strconv.ParseFloat(m[3], 64)
		got = append(got, [2]float64{a, b})
	}
	if !regexp.MustCompile(`whisper_vad: detected \d+ speech segments`).Match(out) {
		t.Fatalf("whisper-cli ran no VAD:\n%s", out)
	}
	return got
}

// TestOracleJFK: on jfk.wav the detector finds whisper.cpp's own four
// speech spans (whisper-cli --vad on the same model and parameters, run
// here), within 150 ms, in one shot and streamed in blocks of any size;
// a stream computes the very same probabilities as one shot.
func TestOracleJFK(t *testing.T) {
	m := model(t)
	audio := jfk(t)
	for i, p := range []vadspan.Params{
		vadspan.DefaultParams(),
		{Threshold: 0.6, MinSpeech: 500 * time.Millisecond, MinSilence: 300 * time.Millisecond, SpeechPad: 100 * time.Millisecond},
	} {
		t.Run(p.String(), func(t *testing.T) {
			want := cliSpans(t, jfkPath(t), p)
			if i == 0 && len(want) != 4 {
				t.Fatalf("whisper-cli found %d spans in jfk.wav, the oracle says 4: %v", len(want), want)
			}
			if len(want) == 0 {
				t.Fatal("whisper-cli found no speech in jfk.wav")
			}
			near := func(what string, got []vadspan.Span) {
				t.Helper()
				if len(got) != len(want) {
					t.Fatalf("%s: %d spans %v, whisper-cli %d %v", what, len(got), got, len(want), want)
				}
				for i, s := range got {
					for j, at := range []time.Duration{s.StartTime(), s.EndTime()} {
						d := at - time.Duration(want[i][j]*float64(time.Second))
						if d.Abs() > 150*time.Millisecond {
							t.Errorf("%s: span %d %v, whisper-cli %.2f–%.2f s: %v apart", what, i, s, want[i][0], want[i][1], d)
						}
					}
				}
			}
			oneShot := spans(t, m, audio, p)
			t.Logf("whisper-cli %v; one shot %v", want, oneShot)
			near("one shot", oneShot)
			probs, err := m.Probs(context.Background(), audio)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{160, 512, 1000, 16000} {
				got, sprobs := streamSpans(t, m, audio, p, n)
				if !cmp.Equal(oneShot, got) {
					t.Errorf("blocks of %d: stream spans %v, one shot %v", n, got, oneShot)
				}
				if !cmp.Equal(probs, sprobs) {
					t.Errorf("blocks of %d: the stream's probabilities differ from one shot's", n)
				}
			}
		})
	}
}

// TestSpansAreWhisperCpps: package vadspan computes exactly what
// whisper.cpp's whisper_vad_segments_from_probs computes, on jfk.wav's
// probabilities and on random ones, with random parameters (merges,
// drops, pads that meet, MaxSpeech splits).
func TestSpansAreWhisperCpps(t *testing.T) {
	m := model(t)
	v, err := newVctx(m.buf, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer v.free()
	check := func(probs []float32, p vadspan.Params) {
		t.Helper()
		// The same parameters in whisper.cpp's terms: zero takes the
		// default, negative is none.
		r := p
		def := vadspan.DefaultParams()
		if r.Threshold == 0 {
			r.Threshold = def.Threshold
		}
		for _, d := range []struct{ v, def *time.Duration }{
			{&r.MinSpeech, &def.MinSpeech}, {&r.MinSilence, &def.MinSilence}, {&r.SpeechPad, &def.SpeechPad},
		} {
			switch {
			case *d.v == 0:
				*d.v = *d.def
			case *d.v < 0:
				*d.v = 0
			}
		}
		t0, t1, err := v.whisperSegments(probs, r.Threshold, r.MinSpeech, r.MinSilence, r.SpeechPad, r.MaxSpeech)
		if err != nil {
			t.Fatal(err)
		}
		got := vadspan.Spans(probs, p)
		cs := func(n int64) float32 { return float32(int64(float64(n)/vadspan.SampleRate*100 + 0.5)) }
		if len(got) != len(t0) {
			t.Fatalf("%v: vadspan %v, whisper.cpp %v–%v (cs)", p, got, t0, t1)
		}
		for i, s := range got {
			if cs(s.Start) != t0[i] || cs(s.End) != t1[i] {
				t.Fatalf("%v: span %d %v, whisper.cpp %v–%v cs\nprobs %v", p, i, s, t0[i], t1[i], probs)
			}
		}
	}
	probs, err := m.Probs(context.Background(), jfk(t))
	if err != nil {
		t.Fatal(err)
	}
	check(probs, vadspan.DefaultParams())
	check(probs, vadspan.Params{Threshold: 0.3, MinSilence: 500 * time.Millisecond, SpeechPad: 300 * time.Millisecond})
	check(probs, vadspan.Params{MaxSpeech: 2 * time.Second})

	rng := rand.New(rand.NewPCG(5, 6))
	pick := func(ds ...time.Duration) time.Duration { return ds[rng.IntN(len(ds))] }
	for _, n := range []int{40, 150, 400} {
		for range 60 {
			p := vadspan.Params{
				Threshold:  []float32{0.5, 0.3, 0.7}[rng.IntN(3)],
				MinSpeech:  pick(250*time.Millisecond, 50*time.Millisecond, time.Second, -1),
				MinSilence: pick(100*time.Millisecond, -1, 500*time.Millisecond),
				SpeechPad:  pick(30*time.Millisecond, -1, 150*time.Millisecond, 400*time.Millisecond),
				MaxSpeech:  pick(0, 0, time.Second, 3*time.Second),
			}
			probs := make([]float32, 0, n)
			for len(probs) < n {
				v := []float32{rng.Float32(), 0.9, 0.05, 0.4, p.Threshold}[rng.IntN(5)]
				for range 1 + rng.IntN(30) {
					probs = append(probs, v)
				}
			}
			check(probs[:n], p)
		}
	}
}

// TestEspeakSentences: spoken sentences, with pauses of silence and room
// noise between them, give spans that cover each sentence and lie around
// it, none elsewhere.
func TestEspeakSentences(t *testing.T) {
	m := model(t)
	sentences := []string{
		"The build is green and the tests pass.",
		"Please review the pull request before lunch.",
		"Seven hundred and twelve.",
	}
	rng := rand.New(rand.NewPCG(7, 8))
	var audio []float32
	type region struct{ from, to int64 }
	var spoken []region
	for i, s := range sentences {
		gap := silence(1 + 0.5*float64(i))
		audio = append(audio, gap...)
		say := espeak(t, s)
		from, to := extent(say)
		base := int64(len(audio))
		spoken = append(spoken, region{base + from, base + to})
		audio = append(audio, say...)
	}
	audio = append(audio, silence(1)...)
	audio = quantize(mix(audio, white(rng, float64(len(audio))/sr+1, -65)))

	got := spans(t, m, audio, vadspan.DefaultParams())
	t.Logf("sentences at %v, spans %v", spoken, got)
	slack := int64(0.15 * sr)
	covered := make([]int64, len(spoken))
	for _, s := range got {
		inside := false
		for i, r := range spoken {
			if s.Start >= r.from-slack && s.End <= r.to+slack {
				inside = true
				covered[i] += min(s.End, r.to) - max(s.Start, r.from)
			}
		}
		if !inside {
			t.Errorf("span %v lies outside every sentence %v", s, spoken)
		}
	}
	for i, r := range spoken {
		if frac := float64(covered[i]) / float64(r.to-r.from); frac < 0.9 {
			t.Errorf("sentence %d (%.2f–%.2f s) is %.0f%% covered by spans %v, want 90%%",
				i, float64(r.from)/sr, float64(r.to)/sr, 100*frac, got)
		}
	}
}

// noises are 10 s each of what must never count as speech.
func noises() map[string][]float32 {
	rng := rand.New(rand.NewPCG(9, 10))
	n := map[string][]float32{
		"digital silence":          silence(10),
		"hum 50 Hz -20 dBFS":       hum(10, -20),
		"hum 50 Hz -40 dBFS":       hum(10, -40),
		"clicks 4/s":               clicks(10, 0.25, 0.5),
		"clicks 1/s loud":          clicks(10, 1, 0.99),
		"abrupt white after zeros": concat(silence(5), white(rng, 5, -20)),
		"abrupt pink after zeros":  concat(silence(5), pink(rng, 5, -20)),
	}
	for _, db := range []float64{-60, -40, -20} {
		n[fmt.Sprintf("white %v dBFS", db)] = white(rng, 10, db)
		n[fmt.Sprintf("pink %v dBFS", db)] = pink(rng, 10, db)
	}
	for k, v := range n {
		n[k] = quantize(v)
	}
	return n
}

// TestNoiseIsNotSpeech: silence, white and pink noise at several levels,
// hum, noise that starts abruptly after digital zeros, and clicks give no
// span, in one shot, streamed, or cut into utterances.
func TestNoiseIsNotSpeech(t *testing.T) {
	m := model(t)
	for name, audio := range noises() {
		t.Run(name, func(t *testing.T) {
			if got := spans(t, m, audio, vadspan.DefaultParams()); len(got) != 0 {
				t.Errorf("one shot: spans %v", got)
			}
			if got, _ := streamSpans(t, m, audio, vadspan.DefaultParams(), 320); len(got) != 0 {
				t.Errorf("stream: spans %v", got)
			}
			g, err := m.NewSegmenter(vadspan.DefaultParams(), 0)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			s16 := toS16(audio)
			var utts int
			for i := 0; i < len(s16); i += 800 {
				utts += len(g.Write(s16[i:min(i+800, len(s16))]))
			}
			utts += len(g.Flush())
			if utts != 0 || g.Err() != nil {
				t.Errorf("segmenter: %d utterances, err %v", utts, g.Err())
			}
		})
	}
}

// TestSpeechInNoise: jfk.wav in white and pink noise at a moderate
// signal-to-noise ratio (10 dB below the speech's level) still gives
// spans over each of its four phrases, each starting inside the speech.
func TestSpeechInNoise(t *testing.T) {
	m := model(t)
	speech := jfk(t)
	clean := spans(t, m, speech, vadspan.DefaultParams())
	if len(clean) != 4 {
		t.Fatalf("clean jfk.wav: %d spans %v, want 4", len(clean), clean)
	}
	var speechPart []float32
	for _, s := range clean {
		speechPart = append(speechPart, speech[s.Start:s.End]...)
	}
	level := 20 * math.Log10(rms(speechPart))
	rng := rand.New(rand.NewPCG(11, 12))
	for name, noise := range map[string][]float32{
		"white": white(rng, 12, level-10),
		"pink":  pink(rng, 12, level-10),
	} {
		t.Run(name, func(t *testing.T) {
			noisy := quantize(mix(speech, noise))
			got := spans(t, m, noisy, vadspan.DefaultParams())
			t.Logf("clean %v, in %s noise %v", clean, name, got)
			for i, c := range clean {
				overlap := false
				for _, s := range got {
					overlap = overlap || (s.Start < c.End && s.End > c.Start)
				}
				if !overlap {
					t.Errorf("phrase %d (%v) has no span in %s noise: %v", i, c, name, got)
				}
			}
			slack := int64(0.15 * sr)
			for _, s := range got {
				inside := false
				for _, c := range clean {
					inside = inside || (s.Start >= c.Start-slack && s.Start < c.End)
				}
				if !inside {
					t.Errorf("span %v starts outside the speech %v", s, clean)
				}
			}
		})
	}
}

// TestBadModels: a VAD model path that is missing, a folder, empty,
// random, an HTML page, truncated anywhere, a whisper model or a header
// alone is an error of one line that names the file, never a crash.
func TestBadModels(t *testing.T) {
	real, err := os.ReadFile(modelPath(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	random := make([]byte, len(real))
	rng := rand.New(rand.NewPCG(13, 14))
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	cases := []struct {
		name, path string
		want       error
	}{
		{"missing", filepath.Join(dir, "none.bin"), modelfile.ErrMissing},
		{"folder", dir, modelfile.ErrNotGGML},
		{"empty", write("empty.bin", nil), modelfile.ErrNotGGML},
		{"random", write("random.bin", random), modelfile.ErrNotGGML},
		{"html", write("page.bin", []byte("<!DOCTYPE html><html>Not found</html>")), modelfile.ErrNotGGML},
		{"whisper model", miniWhisper(t), modelfile.ErrWrongKind},
		{"magic only", write("magic.bin", real[:4]), nil},
		{"header only", write("header.bin", real[:26]), modelfile.ErrTruncated},
		{"hyper-parameters only", write("hparams.bin", real[:106]), modelfile.ErrTruncated},
		{"last byte missing", write("last.bin", real[:len(real)-1]), modelfile.ErrTruncated},
		{"one byte more", write("more.bin", append(real[:len(real):len(real)], 0)), modelfile.ErrBadHeader},
	}
	for _, cut := range []int{10, 30, 107, 150, 1000, 100000, len(real) / 2, len(real) - 5} {
		cases = append(cases, struct {
			name, path string
			want       error
		}{fmt.Sprintf("cut at %d", cut), write(fmt.Sprintf("cut%d.bin", cut), real[:cut]), nil})
	}
	// A tensor header whose sizes whisper.cpp would allocate blindly.
	huge := append([]byte(nil), real...)
	copy(huge[106:], []byte{4, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f})
	cases = append(cases, struct {
		name, path string
		want       error
	}{"absurd tensor header", write("huge.bin", huge), modelfile.ErrBadHeader})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Load(tc.path, Options{})
			if err == nil {
				m.Close()
				t.Fatalf("Load(%s) succeeded", tc.path)
			}
			msg := err.Error()
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("Load = %v, want %v", err, tc.want)
			}
			if !regexp.MustCompile(`^[^\n]+$`).MatchString(msg) || !regexp.MustCompile(regexp.QuoteMeta(tc.path)).MatchString(msg) {
				t.Errorf("Load error %q is not one line naming %s", msg, tc.path)
			}
		})
	}
	// And the real one loads.
	m, err := Load(write("ggml-silero.bin", real), Options{})
	if err != nil {
		t.Fatalf("Load(real model) = %v", err)
	}
	if got := m.Describe(); got != "Silero VAD model (silero-16k 6.2.0)" {
		t.Errorf("Describe() = %q", got)
	}
	m.Close()
}

// TestQuiet: whisper.cpp's own log lines never reach stderr, unless
// Options.Verbose asks for them. Each case runs in a child process, as the
// log hook is process-wide.
func TestQuiet(t *testing.T) {
	if mode := os.Getenv("SILERO_TEST_CHILD"); mode != "" {
		m, err := Load(os.Getenv("SILERO_TEST_MODEL"), Options{Verbose: mode == "verbose"})
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		if _, err := m.Spans(context.Background(), silence(1), vadspan.DefaultParams()); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	for _, mode := range []string{"quiet", "verbose"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestQuiet$")
		cmd.Env = append(os.Environ(), "SILERO_TEST_CHILD="+mode, "SILERO_TEST_MODEL="+modelPath(t))
		var stderr, stdout strBuf
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s child: %v\n%s%s", mode, err, stdout, stderr)
		}
		logged := regexp.MustCompile(`whisper_vad`).MatchString(stderr.String())
		if logged != (mode == "verbose") {
			t.Errorf("%s: whisper.cpp logged %v; stderr %q", mode, logged, stderr.String())
		}
	}
}

type strBuf struct{ b []byte }

func (s *strBuf) Write(p []byte) (int, error) { s.b = append(s.b, p...); return len(p), nil }
func (s *strBuf) String() string              { return string(s.b) }

// TestStreamsAreIndependent: two streams fed in turns, and one-shot calls
// in between, do not disturb each other's state.
func TestStreamsAreIndependent(t *testing.T) {
	m := model(t)
	audio := jfk(t)
	want, _ := streamSpans(t, m, audio, vadspan.DefaultParams(), 1000)
	a, err := m.NewStream(vadspan.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := m.NewStream(vadspan.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var ea, eb []vadspan.Event
	for i := 0; i < len(audio); i += 1000 {
		blk := audio[i:min(i+1000, len(audio))]
		e, _ := a.Write(blk)
		ea = append(ea, e...)
		e, _ = b.Write(blk)
		eb = append(eb, e...)
		if i%16000 == 0 {
			spans(t, m, audio[:8000], vadspan.DefaultParams())
		}
	}
	e, _ := a.Flush()
	ea = append(ea, e...)
	e, _ = b.Flush()
	eb = append(eb, e...)
	n := int64(len(audio))
	if got := pairEvents(t, ea, n); !cmp.Equal(got, want) {
		t.Errorf("stream a: %v, want %v", got, want)
	}
	if got := pairEvents(t, eb, n); !cmp.Equal(got, want) {
		t.Errorf("stream b: %v, want %v", got, want)
	}
	// A Reset stream gives the same again.
	a.Reset()
	var er []vadspan.Event
	for i := 0; i < len(audio); i += 3000 {
		e, _ := a.Write(audio[i:min(i+3000, len(audio))])
		er = append(er, e...)
	}
	e, _ = a.Flush()
	if got := pairEvents(t, append(er, e...), n); !cmp.Equal(got, want) {
		t.Errorf("after Reset: %v, want %v", got, want)
	}
}

// TestCancel: a cancelled context stops one-shot detection.
func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := model(t).Spans(ctx, silence(60), vadspan.DefaultParams()); !errors.Is(err, context.Canceled) {
		t.Errorf("Spans(cancelled) = %v, want context.Canceled", err)
	}
}

// TestClosed: a closed model answers with an error; its streams go on.
func TestClosed(t *testing.T) {
	m, err := Load(modelPath(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.NewStream(vadspan.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if _, err := m.Spans(context.Background(), silence(1), vadspan.DefaultParams()); err == nil {
		t.Error("Spans on a closed model succeeded")
	}
	if _, err := m.NewStream(vadspan.DefaultParams()); err == nil {
		t.Error("NewStream on a closed model succeeded")
	}
	if _, err := s.Write(jfk(t)); err != nil {
		t.Errorf("a stream of a closed model: %v", err)
	}
	s.Close()
	if _, err := s.Write(silence(1)); err == nil {
		t.Error("Write on a closed stream succeeded")
	}
}
