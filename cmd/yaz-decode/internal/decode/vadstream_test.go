package decode

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/asr"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/decodetest"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/silero"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/vadwire"
)

// childEnv makes the test binary run yaz-decode's Main with the JSON
// argument list it holds, as a real child process with real pipes.
const childEnv = "YAZ_DECODE_TEST_CHILD_ARGS"

func TestMain(m *testing.M) {
	if a, ok := os.LookupEnv(childEnv); ok {
		var args []string
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(3)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := Main(ctx, args, os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	// The tests share this process, and ggml lists its devices once per
	// process. Listed now, they are all there for every test: a decode
	// under auto first, on a machine with no GPU device node, would keep
	// Vulkan out (asr.SelectDeviceFor) and take lavapipe from the Vulkan
	// tests after it.
	asr.Devices()
	os.Exit(m.Run())
}

// child is yaz-decode with args in a process of its own.
type child struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	fw     *frame.Writer
	out    *vadwire.Reader
	rawOut io.ReadCloser
	stderr bytes.Buffer
}

func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	a, _ := json.Marshal(args)
	c := &child{cmd: exec.Command(os.Args[0])}
	c.cmd.Env = append(os.Environ(), childEnv+"="+string(a))
	c.cmd.Stderr = &c.stderr
	var err error
	if c.in, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.in.Close()
		c.cmd.Process.Kill()
		c.cmd.Wait()
	})
	c.fw = frame.NewWriter(c.in)
	c.out = vadwire.NewReader(out)
	c.rawOut = out
	return c
}

// wait closes stdin and returns the exit code.
func (c *child) wait(t *testing.T) int {
	t.Helper()
	c.in.Close()
	err := c.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return c.cmd.ProcessState.ExitCode()
}

// use reads the lines of one use up to its E line: the probabilities.
func (c *child) use(t *testing.T) []float32 {
	t.Helper()
	var probs []float32
	for {
		rec, err := c.out.Next()
		if err != nil {
			t.Fatalf("reading the child's lines: %v; stderr:\n%s", err, c.stderr.String())
		}
		if rec.Kind == vadwire.End {
			if rec.Windows != int64(len(probs)) {
				t.Fatalf("E %d after %d probabilities", rec.Windows, len(probs))
			}
			return probs
		}
		probs = append(probs, rec.Probs...)
	}
}

// sendIn writes samples as Audio frames of size samples each (the last
// shorter), then an End, from a goroutine of the test (the child answers
// while it reads, so the test reads at the same time). The returned
// channel yields the write error.
func (c *child) sendIn(samples []int16, size int) <-chan error {
	done := make(chan error, 1)
	go func() {
		for len(samples) > 0 {
			n := min(size, len(samples))
			if err := c.fw.Audio(samples[:n]); err != nil {
				done <- err
				return
			}
			samples = samples[n:]
		}
		done <- c.fw.End()
	}()
	return done
}

// vadAudio is real and synthetic audio for the detector: jfk.wav, white
// noise at about −20 dBFS, and digital silence.
func vadAudio(t *testing.T) map[string][]int16 {
	rng := rand.New(rand.NewPCG(13, 6))
	noise := make([]int16, 5*pcm.SampleRate+77)
	for i := range noise {
		noise[i] = int16(max(-32768, min(32767, rng.NormFloat64()*3300)))
	}
	return map[string][]int16{
		"jfk":     decodetest.JFK(t),
		"noise":   noise,
		"silence": decodetest.Silence(3*time.Second + 5*time.Millisecond),
	}
}

// inProcess is cmd/yaz-decode/internal/silero's own probabilities for samples (one thread, no
// gate: whisper.cpp's numbers).
func inProcess(t *testing.T, m *silero.Model, samples []int16) []float32 {
	t.Helper()
	p, err := m.Probs(context.Background(), pcm.ToFloat32(nil, samples))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var sameBits = cmp.Comparer(func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) })

// TestVADStreamProbs: the probabilities the child reports equal cmd/yaz-decode/internal/silero's
// in-process probabilities bit for bit, on speech (jfk.wav), noise and
// digital silence, for frames of every size (one sample, a window less or
// more one, several windows, a whole file at once), use after use in one
// child: the detector's state restarts at each End, so the same audio gives
// the same numbers again. No whisper model is needed: YAZ_MODEL names
// none (vad-stream has no -m at all: TestCommandConflicts).
func TestVADStreamProbs(t *testing.T) {
	model := sileroModel(t)
	m, err := silero.Load(model, silero.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	audio := vadAudio(t)
	want := map[string][]float32{}
	for name, s := range audio {
		want[name] = inProcess(t, m, s)
	}
	// jfk.wav holds speech and the noise and silence none: the numbers
	// compared are the ones that matter.
	if maxOf(want["jfk"]) < 0.9 || maxOf(want["noise"]) > 0.5 || maxOf(want["silence"]) > 0.5 {
		t.Fatalf("in-process maxima jfk %v noise %v silence %v", maxOf(want["jfk"]), maxOf(want["noise"]), maxOf(want["silence"]))
	}
	t.Setenv("YAZ_MODEL", filepath.Join(t.TempDir(), "no-whisper-model.bin"))
	c := startChild(t, "--vad-stream", "--log-format", "json", "--vad", "silero", "--vad-model", model)
	uses := []struct {
		name string
		size int
	}{
		{"jfk", 4096}, {"noise", 4096}, {"silence", 4096},
		{"jfk", 1}, {"jfk", 511}, {"jfk", 512}, {"jfk", 513}, {"jfk", 16000}, {"jfk", 1 << 30},
		{"noise", 1}, {"noise", 513}, {"silence", 511},
		{"jfk", 4096}, // again after all that: the same numbers
	}
	for _, u := range uses {
		sent := c.sendIn(audio[u.name], u.size)
		got := c.use(t)
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want[u.name], got, sameBits); d != "" {
			t.Errorf("%s in frames of %d samples: probabilities differ from cmd/yaz-decode/internal/silero's (-want +got):\n%s", u.name, u.size, d)
		}
	}
	// An End without audio is an empty use.
	c.fw.End()
	if got := c.use(t); len(got) != 0 {
		t.Errorf("an empty use reported %d probabilities", len(got))
	}
	if code := c.wait(t); code != 0 {
		t.Errorf("exit %d at EOF, want 0; stderr:\n%s", code, c.stderr.String())
	}
	recs := records(t, c.stderr.String())
	if len(recs) != 1 || recs[0]["msg"] != "serving" || recs[0]["mode"] != "vad-stream" {
		t.Errorf("stderr records %v, want the one INFO record that says it serves", recs)
	}
}

func maxOf(p []float32) float32 {
	var m float32
	for _, v := range p {
		m = max(m, v)
	}
	return m
}

// TestVADStreamAnswersEachFrame: a frame that completes windows is
// answered before the next frame is sent (the daemon hears about speech
// while it still speaks), one that completes none is not answered, and EOF
// ends the open use with its padded window and E line, exit 0.
func TestVADStreamAnswersEachFrame(t *testing.T) {
	c := startChild(t, "--vad-stream", "--vad-model", sileroModel(t))
	jfk := decodetest.JFK(t)
	next := func() vadwire.Record {
		t.Helper()
		rec, err := c.out.Next()
		if err != nil {
			t.Fatalf("%v; stderr:\n%s", err, c.stderr.String())
		}
		return rec
	}
	// 511 samples complete nothing; one more completes window 0: the
	// first line is window 0 alone.
	c.fw.Audio(jfk[:511])
	c.fw.Audio(jfk[511:512])
	if rec := next(); rec.Kind != vadwire.Probs || rec.First != 0 || len(rec.Probs) != 1 {
		t.Fatalf("first line %+v, want window 0 alone", rec)
	}
	// Each frame of 3 windows is answered, in lockstep.
	for i := range 4 {
		off := 512 + i*1536
		c.fw.Audio(jfk[off : off+1536])
		if rec := next(); rec.Kind != vadwire.Probs || rec.First != int64(1+3*i) || len(rec.Probs) != 3 {
			t.Fatalf("answer to frame %d: %+v, want windows %d to %d", i, rec, 1+3*i, 3+3*i)
		}
	}
	// 100 samples more, then EOF: the padded window and E 14.
	c.fw.Audio(jfk[6656 : 6656+100])
	c.in.Close()
	if rec := next(); rec.Kind != vadwire.Probs || rec.First != 13 || len(rec.Probs) != 1 {
		t.Fatalf("at EOF: %+v, want the padded window 13", rec)
	}
	if rec := next(); rec.Kind != vadwire.End || rec.Windows != 14 {
		t.Fatalf("at EOF: %+v, want E 14", rec)
	}
	if _, err := c.out.Next(); err != io.EOF {
		t.Errorf("after E: %v, want EOF", err)
	}
	if code := c.wait(t); code != 0 {
		t.Errorf("exit %d, want 0; stderr:\n%s", code, c.stderr.String())
	}
}

// TestVADStreamBadFrames: a frame that is not Audio or End, or a malformed
// one, ends the child with exit 1 and one error line; what came before it
// was answered.
func TestVADStreamBadFrames(t *testing.T) {
	model := sileroModel(t)
	hdr := func(typ byte, n uint32, payload ...byte) []byte {
		b := []byte{typ, 0, 0, 0, 0}
		binary.LittleEndian.PutUint32(b[1:], n)
		return append(b, payload...)
	}
	good := hdr(frame.Audio, 1024, make([]byte, 1024)...) // one window
	for _, tt := range []struct {
		name string
		bad  []byte
		says string
	}{
		{"abandon", hdr(frame.Abandon, 0), "only A and E"},
		{"prompt", hdr(frame.Prompt, 2, 'h', 'i'), "only A and E"},
		{"unknown type", hdr('Z', 0), "unknown frame type"},
		{"odd audio", hdr(frame.Audio, 3, 1, 2, 3), "odd number"},
		{"end with payload", hdr(frame.End, 1, 0), "control frame with a payload"},
		{"too large", hdr(frame.Audio, frame.MaxPayload+2), "larger than"},
		{"truncated header", []byte{frame.Audio, 4, 0}, "unexpected EOF"},
		{"truncated payload", hdr(frame.Audio, 8, 1, 2), "unexpected EOF"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := startChild(t, "--vad-stream", "--vad-model", model)
			if _, err := c.in.Write(append(append([]byte(nil), good...), tt.bad...)); err != nil {
				t.Fatal(err)
			}
			if rec, err := c.out.Next(); err != nil || rec.Kind != vadwire.Probs || len(rec.Probs) != 1 {
				t.Errorf("the good frame before: %+v, %v", rec, err)
			}
			if code := c.wait(t); code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			lines := strings.Split(strings.TrimSpace(c.stderr.String()), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "yaz-decode: error: ") || !strings.Contains(last, tt.says) {
				t.Errorf("last stderr line %q, want an error that says %q", last, tt.says)
			}
		})
	}
}

// TestVADStreamStartup: --vad-stream needs the Silero model. A missing
// file (with auto too: there is no energy fallback for probabilities) is
// vad_model_missing, a file that is no Silero VAD model vad_model_invalid:
// one ERROR record and exit 125, as --serve's startup failures (it always
// runs under the daemon). Usage errors are refused before anything loads.
func TestVADStreamStartup(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none", "ggml-silero-v5.1.2.bin")
	whisper := decodetest.MiniModel(t, dir)
	for _, tt := range []struct {
		name, vad, path, cause, says string
	}{
		{"missing/silero", "silero", missing, "vad_model_missing", "VAD model not found: " + missing},
		{"missing/auto", "auto", missing, "vad_model_missing", "yaz-fetch-model silero-v5.1.2"},
		{"whisper model", "silero", whisper, "vad_model_invalid", "not a Silero VAD model"},
		{"folder", "auto", dir, "vad_model_invalid", "not a regular file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(context.Background(), []string{"--vad-stream", "--log-format", "json", "--vad", tt.vad, "--vad-model", tt.path},
				strings.NewReader(""), &out, &errb)
			if code != 125 {
				t.Errorf("exit %d, want 125", code)
			}
			recs := records(t, errb.String())
			if len(recs) != 1 || recs[0]["level"] != "ERROR" || recs[0]["cause"] != tt.cause {
				t.Fatalf("stderr records %v, want one ERROR with cause %s", recs, tt.cause)
			}
			if msg, _ := recs[0]["msg"].(string); !strings.Contains(msg, tt.says) {
				t.Errorf("message %q does not say %q", msg, tt.says)
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q", out.String())
			}
		})
	}
	for _, tt := range []struct {
		args []string
		says string
	}{
		{[]string{"--vad-stream", "--vad", "energy"}, "--vad energy has none"},
		{[]string{"--vad-stream", "--serve"}, "pick one"},
		{[]string{"--vad-stream", "a.wav"}, "takes no files"},
		{[]string{"--vad-stream", "--vad-threshold", "2"}, "--vad-threshold"},
	} {
		var out, errb bytes.Buffer
		if code := Main(context.Background(), tt.args, strings.NewReader(""), &out, &errb); code != 2 || !strings.Contains(errb.String(), tt.says) {
			t.Errorf("Main(%q) = %d, stderr %q; want 2 and %q", tt.args, code, errb.String(), tt.says)
		}
	}
	var out, errb bytes.Buffer
	Main(context.Background(), []string{"--help"}, strings.NewReader(""), &out, &errb)
	if !strings.Contains(out.String(), "--vad-stream") {
		t.Errorf("--help does not mention --vad-stream:\n%s", out.String())
	}
}

// TestVADStreamSignal: SIGTERM ends the child with exit 0 while it waits
// for frames.
func TestVADStreamSignal(t *testing.T) {
	c := startChild(t, "--vad-stream", "--vad-model", sileroModel(t))
	c.fw.Audio(make([]int16, 512))
	if rec, err := c.out.Next(); err != nil || rec.Kind != vadwire.Probs {
		t.Fatalf("%+v, %v", rec, err)
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	err := c.cmd.Wait()
	if err != nil {
		t.Errorf("after SIGTERM: %v, want exit 0; stderr:\n%s", err, c.stderr.String())
	}
}

// TestVADStreamReaderGone: when the daemon closes its end of stdout (it
// stopped listening), the child exits 0 at its next answer instead of
// dying of SIGPIPE.
func TestVADStreamReaderGone(t *testing.T) {
	c := startChild(t, "--vad-stream", "--vad-model", sileroModel(t))
	c.fw.Audio(make([]int16, 512))
	if rec, err := c.out.Next(); err != nil || rec.Kind != vadwire.Probs {
		t.Fatalf("%+v, %v", rec, err)
	}
	c.rawOut.Close()
	c.fw.Audio(make([]int16, 4096)) // answered into a closed pipe
	err := c.cmd.Wait()
	if err != nil {
		t.Errorf("after its stdout was closed: %v, want exit 0; stderr:\n%s", err, c.stderr.String())
	}
}
