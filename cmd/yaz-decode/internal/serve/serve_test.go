package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/asr"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/decodetest"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/transcript"
	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// newConfig is serve's settings at the flags' defaults that matter here.
func newConfig() *Config {
	c := &Config{VADGate: true}
	c.VAD.MinSpeech, c.VAD.MinSilence = 120*time.Millisecond, 600*time.Millisecond
	return c
}

// holdingRecognizer reports each call on started and holds it until its
// context is done or the test releases it: a decode in progress, for as
// long as a test wants.
type holdingRecognizer struct {
	started chan int // samples of each call, as it starts
	release chan struct{}
	mu      sync.Mutex
	calls   int
}

func newHolding() *holdingRecognizer {
	return &holdingRecognizer{started: make(chan int, 16), release: make(chan struct{}, 16)}
}

func (h *holdingRecognizer) Transcribe(ctx context.Context, s []float32, opt asr.Options) (asr.Result, error) {
	h.mu.Lock()
	h.calls++
	h.mu.Unlock()
	h.started <- len(s)
	select {
	case <-ctx.Done():
		return asr.Result{}, ctx.Err()
	case <-h.release:
		d := pcm.Duration(len(s))
		return asr.Result{Segments: []transcript.Segment{{Start: 0, End: d, Text: "held " + d.String()}}}, nil
	}
}

func (h *holdingRecognizer) n() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls
}

// serveSession runs serve on a pipe: the test writes frames as it goes and
// reads each result as it comes.
type serveSession struct {
	t       *testing.T
	w       *frame.Writer
	in      *io.PipeWriter
	results chan frame.Result
	done    chan error
}

func startServe(t *testing.T, c *Config, m Recognizer) *serveSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &serveSession{t: t, w: frame.NewWriter(inW), in: inW, results: make(chan frame.Result, 16), done: make(chan error, 1)}
	go func() {
		err := c.Run(context.Background(), discard, m, inR, outW)
		outW.Close()
		s.done <- err
	}()
	go func() {
		defer close(s.results)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var r frame.Result
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Errorf("result line %q: %v", sc.Text(), err)
				return
			}
			s.results <- r
		}
	}()
	t.Cleanup(func() { inW.Close() })
	return s
}

func (s *serveSession) utterance(samples []int16) {
	s.t.Helper()
	if err := s.w.Audio(samples); err != nil {
		s.t.Fatal(err)
	}
	if err := s.w.End(); err != nil {
		s.t.Fatal(err)
	}
}

func (s *serveSession) abandon() {
	s.t.Helper()
	if err := s.w.Abandon(); err != nil {
		s.t.Fatal(err)
	}
}

func (s *serveSession) next() frame.Result {
	s.t.Helper()
	select {
	case r, ok := <-s.results:
		if !ok {
			s.t.Fatal("serve ended before the result")
		}
		return r
	case <-time.After(time.Minute):
		s.t.Fatal("no result within a minute")
	}
	return frame.Result{}
}

func (s *serveSession) close() {
	s.t.Helper()
	s.in.Close()
	if err := <-s.done; err != nil {
		s.t.Errorf("serve: %v", err)
	}
	if r, ok := <-s.results; ok {
		s.t.Errorf("a result no utterance asked for: %+v", r)
	}
}

func TestServe(t *testing.T) {
	var in bytes.Buffer
	w := frame.NewWriter(&in)
	w.Audio(decodetest.Speech(time.Second))
	w.Audio(decodetest.Speech(time.Second))
	w.End()
	w.Audio(decodetest.Speech(3 * time.Second))
	w.Abandon() // the person cancelled: never decoded
	w.Audio(decodetest.Silence(2 * time.Second))
	w.End() // silence: an empty result, whisper not called
	w.Audio(decodetest.Speech(1500 * time.Millisecond))
	w.End()

	f := &decodetest.Recognizer{}
	var out bytes.Buffer
	if err := newConfig().Run(context.Background(), discard, f, &in, &out); err != nil {
		t.Fatal(err)
	}
	var got []frame.Result
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var r frame.Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		r.DecodeMs = 0
		got = append(got, r)
	}
	want := []frame.Result{
		{Utt: 1, Text: "2s", Segments: []frame.Segment{{StartMs: 0, EndMs: 2000, Text: "2s"}}, AudioMs: 2000},
		{Utt: 2, Text: "", Segments: []frame.Segment{}, AudioMs: 2000},
		{Utt: 3, Text: "1.5s", Segments: []frame.Segment{{StartMs: 0, EndMs: 1500, Text: "1.5s"}}, AudioMs: 1500},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("serve results (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{32000, 24000}, f.Calls); diff != "" {
		t.Errorf("utterances decoded (-want +got):\n%s", diff)
	}
}

func TestServeDecodeFailureIsContentFree(t *testing.T) {
	var in bytes.Buffer
	w := frame.NewWriter(&in)
	w.Audio(decodetest.Speech(time.Second))
	w.End()
	var out, logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	if err := newConfig().Run(context.Background(), log, &decodetest.Recognizer{Fail: true}, &in, &out); err != nil {
		t.Fatal(err)
	}
	var r frame.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Error != "decode_failed" || r.Text != "" {
		t.Errorf("result = %+v, want error decode_failed and no text", r)
	}
	if strings.Contains(out.String(), "SECRET-MARKER") {
		t.Errorf("internal error text leaked to stdout: %s", out.String())
	}
}

func TestServeTruncatedFrame(t *testing.T) {
	in := bytes.NewReader([]byte{'A', 10, 0, 0, 0, 1, 2}) // promises 10 bytes, has 2
	err := newConfig().Run(context.Background(), discard, &decodetest.Recognizer{}, in, io.Discard)
	if err == nil {
		t.Fatal("serve of a truncated frame = nil error, want one")
	}
}

// TestServePrompt: a Prompt frame replaces --prompt for its utterance only.
func TestServePrompt(t *testing.T) {
	var in bytes.Buffer
	w := frame.NewWriter(&in)
	w.Audio(decodetest.Speech(time.Second))
	w.End() // the --prompt
	w.Prompt("Grüße, Kubernetes")
	w.Audio(decodetest.Speech(time.Second))
	w.End() // its own
	w.Prompt("dropped")
	w.Abandon()
	w.Prompt("")
	w.Audio(decodetest.Speech(time.Second))
	w.End() // none at all
	w.Audio(decodetest.Speech(time.Second))
	w.End() // the --prompt again
	f := &decodetest.Recognizer{}
	c := newConfig()
	c.Options.Prompt = "default hint"
	if err := c.Run(context.Background(), discard, f, &in, io.Discard); err != nil {
		t.Fatal(err)
	}
	want := []string{"default hint", "Grüße, Kubernetes", "", "default hint"}
	if diff := cmp.Diff(want, f.Prompts); diff != "" {
		t.Errorf("prompts per utterance (-want +got):\n%s", diff)
	}
}

// TestServeContext: a Context frame (the text said before, from the
// daemon's eager pieces) is read after the utterance's vocabulary hint,
// for its utterance only, and dropped with it by an Abandon; an engine
// without prompts (Parakeet: PromptUnused is set) decodes without it and
// says nothing, as it is no setting of the person's.
func TestServeContext(t *testing.T) {
	send := func() *bytes.Buffer {
		var in bytes.Buffer
		w := frame.NewWriter(&in)
		w.Context("and so my fellow Americans")
		w.Audio(decodetest.Speech(time.Second))
		w.End() // --prompt, then the context
		w.Prompt("Kubernetes")
		w.Context("ask not")
		w.Audio(decodetest.Speech(time.Second))
		w.End() // its own prompt, then the context
		w.Context("dropped")
		w.Abandon()
		w.Audio(decodetest.Speech(time.Second))
		w.End() // no context
		return &in
	}
	f := &decodetest.Recognizer{}
	c := newConfig()
	c.Options.Prompt = "default hint"
	if err := c.Run(context.Background(), discard, f, send(), io.Discard); err != nil {
		t.Fatal(err)
	}
	want := []string{"default hint and so my fellow Americans", "Kubernetes ask not", "default hint"}
	if diff := cmp.Diff(want, f.Prompts); diff != "" {
		t.Errorf("prompts per utterance (-want +got):\n%s", diff)
	}

	f = &decodetest.Recognizer{}
	c = newConfig()
	warned := 0
	c.PromptUnused = func() { warned++ }
	if err := c.Run(context.Background(), discard, f, send(), io.Discard); err != nil {
		t.Fatal(err)
	}
	// The Prompt frame of the second utterance still warns (a setting);
	// the contexts never reach the engine.
	if want := []string{"", "Kubernetes", ""}; !slices.Equal(f.Prompts, want) || warned != 1 {
		t.Errorf("without prompts: prompts %q (want %q), %d warnings (want 1)", f.Prompts, want, warned)
	}
}

// TestServeAbandonWhileDecoding: X after E stops the utterance being
// decoded; its one result says abandoned, and the next utterance decodes.
func TestServeAbandonWhileDecoding(t *testing.T) {
	h := newHolding()
	s := startServe(t, newConfig(), h)
	s.utterance(decodetest.Speech(2 * time.Second))
	<-h.started // decoding
	s.abandon()
	if r := s.next(); r.Utt != 1 || r.Error != frame.ErrorAbandoned || r.Text != "" || r.AudioMs != 2000 {
		t.Errorf("result of the abandoned utterance = %+v, want utt 1 abandoned", r)
	}
	s.utterance(decodetest.Speech(time.Second))
	<-h.started
	h.release <- struct{}{}
	if r := s.next(); r.Utt != 2 || r.Error != "" || r.Text != "held 1s" {
		t.Errorf("result after the abandon = %+v, want utt 2 decoded", r)
	}
	s.close()
}

// TestServeAbandonQueued: an utterance abandoned while it waits behind
// another is never decoded; results stay one per utterance, in order.
func TestServeAbandonQueued(t *testing.T) {
	h := newHolding()
	s := startServe(t, newConfig(), h)
	s.utterance(decodetest.Speech(2 * time.Second))
	<-h.started
	s.utterance(decodetest.Speech(time.Second)) // queued behind 1
	s.abandon()                                 // abandons 2, not 1
	// The abandon's write returns once its bytes are read, not once it is
	// handled; frames are handled one after the other, so once the next
	// frame's write returns the abandon has been applied (else 2 could
	// reach whisper before it and only be stopped there).
	if err := s.w.Prompt("sync"); err != nil {
		t.Fatal(err)
	}
	h.release <- struct{}{}
	if r := s.next(); r.Utt != 1 || r.Error != "" || r.Text != "held 2s" {
		t.Errorf("first result = %+v, want utt 1 decoded", r)
	}
	if r := s.next(); r.Utt != 2 || r.Error != frame.ErrorAbandoned {
		t.Errorf("second result = %+v, want utt 2 abandoned", r)
	}
	s.close()
	if n := h.n(); n != 1 {
		t.Errorf("%d utterances reached whisper, want 1 (the queued one was abandoned)", n)
	}
}

// TestServeAbandonNoOps: an Abandon after the result is out, a second
// Abandon, and an Abandon of an utterance being sent (audio, or only a
// prompt, since the last End) leave the ended utterances alone.
func TestServeAbandonNoOps(t *testing.T) {
	h := newHolding()
	s := startServe(t, newConfig(), h)
	s.utterance(decodetest.Speech(time.Second))
	<-h.started
	h.release <- struct{}{}
	if r := s.next(); r.Utt != 1 || r.Error != "" {
		t.Fatalf("first result = %+v", r)
	}
	s.abandon() // 1 is answered: nothing to abandon
	s.abandon()
	s.utterance(decodetest.Speech(1500 * time.Millisecond))
	<-h.started // 2 decoding
	if err := s.w.Audio(decodetest.Speech(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	s.abandon() // discards the 2 s being sent, not 2
	if err := s.w.Prompt("a hint"); err != nil {
		t.Fatal(err)
	}
	s.abandon() // discards the prompt of the next utterance, not 2
	// The pipe returns from a write only once the frame is read, and frames
	// are handled in order: once 3's End is written, the abandons above have
	// been handled.
	s.utterance(decodetest.Speech(time.Second))
	h.release <- struct{}{}
	if r := s.next(); r.Utt != 2 || r.Error != "" || r.Text != "held 1.5s" {
		t.Errorf("second result = %+v, want utt 2 decoded", r)
	}
	<-h.started
	h.release <- struct{}{}
	if r := s.next(); r.Utt != 3 || r.Error != "" || r.Text != "held 1s" {
		t.Errorf("third result = %+v, want utt 3 decoded", r)
	}
	s.close()
}

// TestServeAbandonReal: with the real decoder on a generated tiny.en-sized
// model, X right after E for a long utterance gives its abandoned result in
// a fraction of the time the same utterance takes to decode (measured in
// this test), and the next utterance decodes exactly as it does alone.
func TestServeAbandonReal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.en.bin")
	if err := testmodel.WriteFile(path, testmodel.TinyEn, 1); err != nil {
		t.Fatal(err)
	}
	m, err := asr.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := newConfig()
	c.Options.Threads = 2
	c.Options.NoSpeechThreshold = 1
	s := startServe(t, c, m)
	short, long := decodetest.Speech(3*time.Second), decodetest.Speech(59*time.Second)

	s.utterance(short)
	first := s.next()
	if first.Error != "" || len(first.Segments) == 0 {
		t.Fatalf("short utterance = %+v, want segments", first)
	}
	start := time.Now()
	s.utterance(long)
	if r := s.next(); r.Error != "" {
		t.Fatalf("long utterance = %+v", r)
	}
	full := time.Since(start)

	start = time.Now()
	s.utterance(long)
	s.abandon()
	r := s.next()
	abandoned := time.Since(start)
	if r.Utt != 3 || r.Error != frame.ErrorAbandoned {
		t.Fatalf("abandoned long utterance = %+v, want utt 3 abandoned", r)
	}
	// How soon is logged, not asserted (a busy machine changes how long,
	// not whether): the decode is cancelled, and asr's
	// TestAbortCheckedInsideGraphs proves a cancel is read node by node.
	t.Logf("long utterance: decoded in %v, abandoned result after %v", full, abandoned)

	s.utterance(short)
	again := s.next()
	if again.Utt != 4 || again.Error != "" {
		t.Fatalf("utterance after the abandon = %+v", again)
	}
	if diff := cmp.Diff(first.Segments, again.Segments); diff != "" {
		t.Errorf("the short utterance after an abandon differs from the first time (-first +now):\n%s", diff)
	}
	s.close()
}
