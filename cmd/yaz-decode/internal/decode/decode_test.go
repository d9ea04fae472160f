package decode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/asr"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/transcript"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
)

// fakeRecognizer names each utterance by its length, so tests can tell which
// audio reached it; it is the unit-test stand-in for whisper.
type fakeRecognizer struct {
	mu      sync.Mutex
	calls   []int
	prompts []string
	fail    bool
}

func (f *fakeRecognizer) Transcribe(ctx context.Context, s []float32, opt asr.Options) (asr.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, len(s))
	f.prompts = append(f.prompts, opt.Prompt)
	if f.fail {
		return asr.Result{}, errors.New("whisper exploded: SECRET-MARKER")
	}
	d := pcm.Duration(len(s))
	return asr.Result{Segments: []transcript.Segment{{Start: 0, End: d, Text: " " + d.Round(100*time.Millisecond).String()}}}, nil
}

// speech is a loud, speech-like burst: syllables of a 200 Hz harmonic tone,
// 180 ms each with 70 ms gaps (a steady tone is a hum, not speech).
func speech(d time.Duration) []int16 {
	n := pcm.Samples(d)
	out := make([]int16, n)
	for i := range out {
		t := float64(i) / pcm.SampleRate
		phase := math.Mod(t, 0.25)
		if phase > 0.18 {
			continue
		}
		env := math.Sin(math.Pi * phase / 0.18)
		v := env * 0.25 * (math.Sin(2*math.Pi*200*t) + 0.5*math.Sin(2*math.Pi*400*t) + 0.3*math.Sin(2*math.Pi*800*t))
		out[i] = int16(v * 32767 / 1.8)
	}
	return out
}

func silence(d time.Duration) []int16 { return make([]int16, pcm.Samples(d)) }

func newCLI() *settings {
	c := &settings{}
	c.VADGate, c.MinSpeech, c.MinSilence, c.Output = true, 120*time.Millisecond, 600*time.Millisecond, "txt"
	return c
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestServe(t *testing.T) {
	var in bytes.Buffer
	w := frame.NewWriter(&in)
	w.Audio(speech(time.Second))
	w.Audio(speech(time.Second))
	w.End()
	w.Audio(speech(3 * time.Second))
	w.Abandon() // the person cancelled: never decoded
	w.Audio(silence(2 * time.Second))
	w.End() // silence: an empty result, whisper not called
	w.Audio(speech(1500 * time.Millisecond))
	w.End()

	f := &fakeRecognizer{}
	var out bytes.Buffer
	if err := newCLI().serve(context.Background(), discard, f, &in, &out); err != nil {
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
	if diff := cmp.Diff([]int{32000, 24000}, f.calls); diff != "" {
		t.Errorf("utterances decoded (-want +got):\n%s", diff)
	}
}

func TestServeDecodeFailureIsContentFree(t *testing.T) {
	var in bytes.Buffer
	w := frame.NewWriter(&in)
	w.Audio(speech(time.Second))
	w.End()
	var out, logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	if err := newCLI().serve(context.Background(), log, &fakeRecognizer{fail: true}, &in, &out); err != nil {
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
	err := newCLI().serve(context.Background(), discard, &fakeRecognizer{}, in, io.Discard)
	if err == nil {
		t.Fatal("serve of a truncated frame = nil error, want one")
	}
}

func TestStream(t *testing.T) {
	var audio []int16
	audio = append(audio, silence(time.Second)...)
	audio = append(audio, speech(2*time.Second)...)
	audio = append(audio, silence(1500*time.Millisecond)...)
	audio = append(audio, speech(time.Second)...) // EOF right after: flushed
	raw := pcm.Encode(nil, audio)

	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"raw", raw},
		{"wav", append(pcm.StreamWAVHeader(), raw...)},
		{"raw odd reads", raw},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI()
			c.JSON = true
			var in io.Reader = bytes.NewReader(tc.in)
			if tc.name == "raw odd reads" {
				in = &oddReader{b: tc.in}
			}
			var out bytes.Buffer
			if err := c.stream(context.Background(), discard, &fakeRecognizer{}, in, &out); err != nil {
				t.Fatal(err)
			}
			var lines []StreamLine
			sc := bufio.NewScanner(&out)
			for sc.Scan() {
				var l StreamLine
				if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
					t.Fatal(err)
				}
				lines = append(lines, l)
			}
			if len(lines) != 2 {
				t.Fatalf("got %d utterances, want 2: %s", len(lines), out.String())
			}
			// Speech at 1.0–3.0 s and 4.5–5.5 s; boundaries carry pre- and post-roll.
			if l := lines[0]; l.StartMs < 500 || l.StartMs > 1000 || l.EndMs < 3000 || l.EndMs > 3700 {
				t.Errorf("first utterance [%d, %d] ms, want about [700, 3200]", l.StartMs, l.EndMs)
			}
			if l := lines[1]; l.StartMs < 4000 || l.StartMs > 4500 || l.EndMs < 5400 {
				t.Errorf("second utterance [%d, %d] ms, want about [4200, 5500]", l.StartMs, l.EndMs)
			}
			if s := lines[0].Segments; len(s) != 1 || s[0].StartMs != lines[0].StartMs {
				t.Errorf("segments %+v: want one, offset to stream time %d", s, lines[0].StartMs)
			}
		})
	}
}

// oddReader returns 3 bytes at a time, so samples straddle reads.
type oddReader struct{ b []byte }

func (r *oddReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 3)], r.b)
	r.b = r.b[n:]
	return n, nil
}

func TestMainUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"--help"}, 0, ""},
		{[]string{"--output", "docx", "a.wav"}, 2, "--output"},
		{[]string{"--serve", "a.wav"}, 2, "takes no files"},
		{[]string{"--prompt-stdin"}, 2, "--prompt-stdin needs files"},
		{[]string{"serve", "--prompt-stdin"}, 2, "--prompt-stdin"}, // not a flag of serve
		{[]string{"--prompt-stdin", "a.wav"}, 1, "--prompt-stdin: read the prompt frame: EOF"},
		{[]string{"--beam-size", "99", "a.wav"}, 2, "--beam-size"},
		{[]string{"--vad", "webrtc", "a.wav"}, 2, "--vad"},
		{[]string{"--vad-threshold", "1.5", "a.wav"}, 2, "--vad-threshold must be between 0.01 and 0.99"},
		{[]string{"--vad-threshold", "0", "a.wav"}, 2, "--vad-threshold must be between 0.01 and 0.99"},
		{[]string{"--vad-threshold", "NaN", "a.wav"}, 2, "--vad-threshold must be between 0.01 and 0.99"},
		{[]string{"-m", "/nonexistent/ggml-tiny.en.bin", "a.wav"}, 1, "yaz-fetch-model tiny.en"},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), tc.args, strings.NewReader(""), &out, &errb)
		if code != tc.code {
			t.Errorf("Main(%q) = %d, want %d; stderr %s", tc.args, code, tc.code, errb.String())
		}
		if tc.err != "" && !strings.Contains(errb.String(), tc.err) {
			t.Errorf("Main(%q) stderr = %q, want it to mention %q", tc.args, errb.String(), tc.err)
		}
		if n := strings.Count(strings.TrimSpace(errb.String()), "\n"); tc.code == 1 && n > 0 {
			t.Errorf("Main(%q) printed %d lines on stderr, want one", tc.args, n+1)
		}
	}
}

// TestServePrompt: a Prompt frame replaces --prompt for its utterance only.
func TestServePrompt(t *testing.T) {
	var in bytes.Buffer
	w := frame.NewWriter(&in)
	w.Audio(speech(time.Second))
	w.End() // the --prompt
	w.Prompt("Grüße, Kubernetes")
	w.Audio(speech(time.Second))
	w.End() // its own
	w.Prompt("dropped")
	w.Abandon()
	w.Prompt("")
	w.Audio(speech(time.Second))
	w.End() // none at all
	w.Audio(speech(time.Second))
	w.End() // the --prompt again
	f := &fakeRecognizer{}
	c := newCLI()
	c.Prompt = "default hint"
	if err := c.serve(context.Background(), discard, f, &in, io.Discard); err != nil {
		t.Fatal(err)
	}
	want := []string{"default hint", "Grüße, Kubernetes", "", "default hint"}
	if diff := cmp.Diff(want, f.prompts); diff != "" {
		t.Errorf("prompts per utterance (-want +got):\n%s", diff)
	}
}

// TestServeContext: a Context frame (the text said before, from the
// daemon's eager pieces) is read after the utterance's vocabulary hint,
// for its utterance only, and dropped with it by an Abandon; an engine
// without prompts (Parakeet: promptUnused is set) decodes without it and
// says nothing, as it is no setting of the person's.
func TestServeContext(t *testing.T) {
	send := func() *bytes.Buffer {
		var in bytes.Buffer
		w := frame.NewWriter(&in)
		w.Context("and so my fellow Americans")
		w.Audio(speech(time.Second))
		w.End() // --prompt, then the context
		w.Prompt("Kubernetes")
		w.Context("ask not")
		w.Audio(speech(time.Second))
		w.End() // its own prompt, then the context
		w.Context("dropped")
		w.Abandon()
		w.Audio(speech(time.Second))
		w.End() // no context
		return &in
	}
	f := &fakeRecognizer{}
	c := newCLI()
	c.Prompt = "default hint"
	if err := c.serve(context.Background(), discard, f, send(), io.Discard); err != nil {
		t.Fatal(err)
	}
	want := []string{"default hint and so my fellow Americans", "Kubernetes ask not", "default hint"}
	if diff := cmp.Diff(want, f.prompts); diff != "" {
		t.Errorf("prompts per utterance (-want +got):\n%s", diff)
	}

	f = &fakeRecognizer{}
	c = newCLI()
	warned := 0
	c.promptUnused = func() { warned++ }
	if err := c.serve(context.Background(), discard, f, send(), io.Discard); err != nil {
		t.Fatal(err)
	}
	// The Prompt frame of the second utterance still warns (a setting);
	// the contexts never reach the engine.
	if want := []string{"", "Kubernetes", ""}; !slices.Equal(f.prompts, want) || warned != 1 {
		t.Errorf("without prompts: prompts %q (want %q), %d warnings (want 1)", f.prompts, want, warned)
	}
}
