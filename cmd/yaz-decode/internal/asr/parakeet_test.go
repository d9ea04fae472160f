package asr

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/transcript"
	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/lib/pcm"
)

// parakeetFile writes a parakeet-mini model, with n_audio_ctx set to ctx
// mel frames when ctx > 0, and returns its path.
func parakeetFile(t *testing.T, ctx int32) string {
	t.Helper()
	h, err := testmodel.ParakeetMini.ParakeetHparams()
	if err != nil {
		t.Fatal(err)
	}
	if ctx > 0 {
		h.NAudioCtx = ctx
	}
	path := filepath.Join(t.TempDir(), "parakeet.bin")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := testmodel.WriteParakeet(f, h, 1); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func parakeetModel(t *testing.T, ctx int32) *Model {
	t.Helper()
	m, err := Load(parakeetFile(t, ctx), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestParakeetTranscribe runs real Parakeet inference on the generated
// model: the engine is told from the file, segments are timed inside the
// audio and in order, and the same audio gives the same output.
func TestParakeetTranscribe(t *testing.T) {
	m := parakeetModel(t, 0)
	if m.Engine() != Parakeet || m.Features() != (Features{}) || m.Multilingual() {
		t.Errorf("Engine() = %q, Features() = %+v, Multilingual() = %v; want parakeet with no whisper features", m.Engine(), m.Features(), m.Multilingual())
	}
	if w := miniModel(t); w.Engine() != Whisper || !w.Features().Prompt || !w.Features().Language {
		t.Errorf("whisper model: Engine() = %q, Features() = %+v", w.Engine(), w.Features())
	}
	audio := speechLike(11)
	var progress []int
	opt := Options{Threads: 2, Progress: func(p int) { progress = append(progress, p) }}
	r1, err := m.Transcribe(context.Background(), audio, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(r1.Segments) == 0 || r1.Text() == "" {
		t.Fatal("no text from the generated Parakeet model")
	}
	if r1.Language != "" {
		t.Errorf("Language = %q, want none (Parakeet does not say)", r1.Language)
	}
	var last time.Duration
	for _, s := range r1.Segments {
		if s.Start < last || s.End < s.Start || s.End > 11*time.Second {
			t.Errorf("segment [%s, %s] out of order or outside the 11 s of audio", s.Start, s.End)
		}
		last = s.Start
	}
	if len(progress) == 0 || progress[len(progress)-1] != 100 {
		t.Errorf("progress %v, want it to end at 100", progress)
	}
	r2, err := m.Transcribe(context.Background(), audio, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r1.Segments, r2.Segments); diff != "" {
		t.Errorf("the same audio decoded twice differs (-first +second):\n%s", diff)
	}
	// Under 20 ms: nothing to decode, and no error.
	if r, err := m.Transcribe(context.Background(), audio[:100], Options{Threads: 2}); err != nil || len(r.Segments) != 0 {
		t.Errorf("Transcribe(100 samples) = %+v, %v; want nothing", r, err)
	}
}

// TestParakeetLanguage: a Parakeet model has no language selection. The
// default (en) and auto pass; any other language is refused, with a
// message that says why and what to do, rather than silently ignored.
func TestParakeetLanguage(t *testing.T) {
	m := parakeetModel(t, 0)
	for _, lang := range []string{"", "en", "EN", "auto"} {
		if code, err := m.Language(lang); err != nil || code != "auto" {
			t.Errorf("Language(%q) = %q, %v; want auto", lang, code, err)
		}
	}
	for _, lang := range []string{"de", "fr", "german", "xx"} {
		_, err := m.Language(lang)
		if !errors.Is(err, ErrLanguageUnsupported) || !strings.Contains(err.Error(), "Parakeet model has no language selection") {
			t.Errorf("Language(%q) = %v, want ErrLanguageUnsupported explaining Parakeet", lang, err)
		}
		if _, err := m.Transcribe(context.Background(), chirp(1), Options{Threads: 2, Language: lang}); !errors.Is(err, ErrLanguageUnsupported) {
			t.Errorf("Transcribe(language %q) = %v, want ErrLanguageUnsupported", lang, err)
		}
	}
}

// TestParakeetIndependentOfHistory: the same audio gives the same segments
// alone, after a long input (two chunks) and after a short one.
func TestParakeetIndependentOfHistory(t *testing.T) {
	m := parakeetModel(t, 0)
	opt := Options{Threads: 2}
	note, long, short := speechLike(11), speechLike(66), chirp(3)
	decode := func(a []float32) Result {
		t.Helper()
		r, err := m.Transcribe(context.Background(), a, opt)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	want := decode(note)
	if len(want.Segments) == 0 {
		t.Fatal("no segments: the comparison proves nothing")
	}
	for _, h := range []struct {
		name   string
		before [][]float32
	}{
		{"after a long input", [][]float32{long}},
		{"after a short input", [][]float32{short}},
		{"after long and short", [][]float32{long, short}},
	} {
		for _, a := range h.before {
			decode(a)
		}
		if diff := cmp.Diff(want.Segments, decode(note).Segments); diff != "" {
			t.Errorf("the note decoded %s differs from the note decoded first (-first +now):\n%s", h.name, diff)
		}
	}
}

// TestParakeetChunks: input longer than the model's audio context is
// decoded in chunks it holds, and each chunk's segments are the chunk
// decoded alone, moved to where the chunk starts in the input.
func TestParakeetChunks(t *testing.T) {
	const ctxFrames = 600 // 6 s a pass
	m := parakeetModel(t, ctxFrames)
	if want := (ctxFrames - 1) * melHop; m.pk.maxChunk != want {
		t.Fatalf("maxChunk = %d, want %d", m.pk.maxChunk, want)
	}
	audio := speechLike(20)
	whole, err := m.Transcribe(context.Background(), audio, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	chunks := chunkBounds(audio, m.pk.maxChunk)
	if len(chunks) < 4 {
		t.Fatalf("%d chunks for 20 s at 6 s a pass, want at least 4", len(chunks))
	}
	var want []transcript.Segment
	for _, ch := range chunks {
		if ch.end-ch.start > m.pk.maxChunk {
			t.Errorf("chunk %v holds %d samples, more than the model's %d", ch, ch.end-ch.start, m.pk.maxChunk)
		}
		r, err := m.Transcribe(context.Background(), audio[ch.start:ch.end], Options{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		off := pcm.Duration(ch.start)
		for _, s := range r.Segments {
			want = append(want, transcript.Segment{Start: s.Start + off, End: s.End + off, Text: s.Text})
		}
	}
	if len(want) == 0 {
		t.Fatal("no segments: the comparison proves nothing")
	}
	// A token's end may reach past its chunk: decoded alone it is cut at
	// the chunk's end, in the whole input not.
	got := whole.Segments
	for i := range got {
		if i < len(want) && got[i].End > want[i].End {
			for _, ch := range chunks {
				if end := pcm.Duration(ch.end); want[i].End == end {
					got[i].End = end
				}
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("chunked segments differ from the chunks decoded alone (-alone +whole):\n%s", diff)
	}
}

// TestParakeetAbortCheckedInsideGraphs: the graph hook hands the abort flag
// to Parakeet's graphs too, so it is read node by node.
func TestParakeetAbortCheckedInsideGraphs(t *testing.T) {
	m := parakeetModel(t, 0)
	r, err := m.pk.chunk(context.Background(), speechLike(3), 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d graphs, %d checks of the abort flag", r.graphs, r.checks)
	if r.graphs == 0 {
		t.Fatal("no graph computation went through the hook: is the --wrap link flag lost?")
	}
	if r.checks < 10*r.graphs {
		t.Errorf("%d checks for %d graphs: the abort flag is not read inside graph computations", r.checks, r.graphs)
	}
}

// TestParakeetCancelMidway: a context cancelled while Parakeet works stops
// it: cancelled as the second chunk of a long file begins, Transcribe
// returns context.Canceled without starting another chunk, and a chunk
// whose context is already cancelled computes at most one graph (the
// abort flag is read node by node inside each: see
// TestParakeetAbortCheckedInsideGraphs); the model then decodes the same
// audio as before. (What is counted is work, never time: a busy machine
// changes how long, not how much.)
func TestParakeetCancelMidway(t *testing.T) {
	m := parakeetModel(t, 600) // 6 s a pass: 20 s is four chunks
	audio := speechLike(20)
	var starts []int
	opt := Options{Threads: 2, Progress: func(p int) { starts = append(starts, p) }}
	want, err := m.Transcribe(context.Background(), audio, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(starts) < 3 {
		t.Fatalf("a %d s file made %d progress calls (%v), want two chunks or more", len(audio)/16000, len(starts), starts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	opt.Progress = func(int) {
		calls++
		if calls == 2 { // the second chunk begins
			cancel()
		}
	}
	if _, err := m.Transcribe(ctx, audio, opt); !errors.Is(err, context.Canceled) {
		t.Fatalf("Transcribe cancelled as its second chunk began = %v, want context.Canceled", err)
	}
	if calls != 2 {
		t.Errorf("%d progress calls after a cancel at the second, want none after it", calls)
	}
	r, err := m.pk.chunk(ctx, audio[:16000*5], 2)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a chunk with a cancelled context = %v, want context.Canceled", err)
	}
	if r.graphs > 1 {
		t.Errorf("a chunk with a cancelled context computed %d graphs, want at most one", r.graphs)
	}
	opt.Progress = nil
	again, err := m.Transcribe(context.Background(), audio, opt)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Segments, again.Segments); diff != "" {
		t.Errorf("after a cancelled call the same audio decodes differently (-before +after):\n%s", diff)
	}
}

// TestParakeetLogThroughSlog: Parakeet's own lines become debug records
// too, and none at all when debug is off.
func TestParakeetLogThroughSlog(t *testing.T) {
	path := parakeetFile(t, 0)
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var buf bytes.Buffer
		m, err := Load(path, slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: level})))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Transcribe(context.Background(), chirp(2), Options{Threads: 2}); err != nil {
			t.Fatal(err)
		}
		m.Close()
		n, parakeet := 0, 0
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			if line == "" {
				continue
			}
			var rec struct{ Level, Msg, Src string }
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("not a JSON record: %q", line)
			}
			if rec.Src != "whisper.cpp" || rec.Level != "DEBUG" || strings.Contains(rec.Msg, "\n") {
				t.Errorf("record %q: want a one-line DEBUG record from whisper.cpp", line)
			}
			if strings.HasPrefix(rec.Msg, "parakeet_") {
				parakeet++
			}
			n++
		}
		if level == slog.LevelDebug && parakeet < 5 {
			t.Errorf("%d Parakeet records at debug level, want its load lines", parakeet)
		}
		if level == slog.LevelInfo && n != 0 {
			t.Errorf("%d whisper.cpp records at info level, want none", n)
		}
	}
	setLogger(nil)
}
