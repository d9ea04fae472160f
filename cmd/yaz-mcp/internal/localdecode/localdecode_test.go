package localdecode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake writes a shell script standing in for yaz-decode.
func fake(t *testing.T, body string) []string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake-decode")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{p}
}

// fixture makes a model file and a WAV file of 1 s of silence and opens
// the WAV file.
func fixture(t *testing.T) (model string, f *os.File) {
	t.Helper()
	return fixtureOf(t, 1)
}

// fixtureOf is fixture with a WAV file of secs seconds.
func fixtureOf(t *testing.T, secs int) (model string, f *os.File) {
	t.Helper()
	dir := t.TempDir()
	model = filepath.Join(dir, "ggml-test.bin")
	if err := os.WriteFile(model, []byte("model"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in.wav")
	n := int64(secs) * 32000
	if err := os.WriteFile(in, append(pcm.WAVHeader(n), make([]byte, n)...), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return model, f
}

// answer is yaz-decode serve's answer line to utterance utt, with one
// segment of text over 0 to ms.
func answer(utt int, text string, ms int64) string {
	b, _ := json.Marshal(frame.Result{Utt: utt, Text: text, Segments: []frame.Segment{{StartMs: 0, EndMs: ms, Text: text}}, AudioMs: ms, DecodeMs: 7})
	return string(b)
}

// frames reads the frames of b: each frame's type, and for audio the
// samples it carried, summed up to the next other frame.
func frames(t *testing.T, b []byte) []string {
	t.Helper()
	r := frame.NewReader(bytes.NewReader(b))
	var out []string
	audio := 0
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the decoder's stdin: %v", err)
		}
		if f.Type == frame.Audio {
			audio += len(f.Payload) / 2
			continue
		}
		if audio > 0 {
			out = append(out, fmt.Sprintf("A%d", audio))
			audio = 0
		}
		out = append(out, string(f.Type))
	}
	return out
}

// TestRunDecodesPieces: Run starts the decoder with its command and
// flags, sends each piece of the file as one utterance on its stdin (the
// prompt before each), and joins the answers on the file's timeline; a
// silent 35 s file is a piece of 30 s and one of 5 s. Progress is after
// each piece.
func TestRunDecodesPieces(t *testing.T) {
	dir := t.TempDir()
	argsFile, stdinFile := filepath.Join(dir, "args"), filepath.Join(dir, "stdin")
	cmd := fake(t, `printf '%s\n' "$@" > `+argsFile+`
echo '`+answer(1, " hello ", 30000)+`'
echo '`+answer(2, "there", 5000)+`'
cat > `+stdinFile+"\n")
	model, f := fixtureOf(t, 35)
	var got []int64
	res, err := Run(testwait.Context(t), Options{Command: append(cmd, "serve"), Flags: []string{"--model=" + model, "--threads=2"}, Model: model, Prompt: "-x"}, f,
		func(ms int64) { got = append(got, ms) }, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := []int64{30000, 35000}; !slices.Equal(got, want) {
		t.Errorf("progress = %v, want %v", got, want)
	}
	b, _ := os.ReadFile(argsFile)
	if args, want := strings.Fields(string(b)), []string{"serve", "--model=" + model, "--threads=2"}; !slices.Equal(args, want) {
		t.Errorf("argv %q, want %q", args, want)
	}
	b, _ = os.ReadFile(stdinFile)
	if fs, want := frames(t, b), []string{"P", "A480000", "E", "P", "A80000", "E"}; !slices.Equal(fs, want) {
		t.Errorf("frames on stdin %q, want %q", fs, want)
	}
	want := Result{Text: "hello there", Segments: []Segment{{0, 30000, " hello "}, {30000, 35000, "there"}}, AudioMs: 35000, DecodeMs: 14, Pieces: 2, PID: res.PID}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

func TestRunFailures(t *testing.T) {
	const marker = "SYNTHETIC-MARKER-7731"
	model, f := fixture(t)
	failed := strings.Replace(answer(1, "", 1000), `"decode_ms"`, `"error":"decode_failed","decode_ms"`, 1)
	cases := []struct {
		name  string
		body  string
		model string
		want  error
	}{
		{"exit 1", "echo '" + marker + "'; echo 'error: " + marker + "' >&2; exit 1\n", model, ErrDecodeFailed},
		{"killed", "kill -SEGV $$\n", model, ErrDecodeFailed},
		{"not json", "echo '" + marker + "'\n", model, ErrDecodeFailed},
		{"ends without an answer", "head -c 1 >/dev/null\n", model, ErrDecodeFailed},
		{"another utterance's answer", "echo '" + answer(2, "x", 1000) + "'; cat >/dev/null\n", model, ErrDecodeFailed},
		{"the utterance failed", "echo '" + failed + "'; cat >/dev/null\n", model, ErrDecodeFailed},
		{"answered, then exit 1", "echo '" + answer(1, "x", 1000) + "'; cat >/dev/null; exit 1\n", model, ErrDecodeFailed},
		{"model missing", "echo '" + answer(1, "x", 1000) + "'\n", filepath.Join(t.TempDir(), marker+".bin"), ErrModelMissing},
		{"model is a folder", "echo '" + answer(1, "x", 1000) + "'\n", t.TempDir(), ErrModelMissing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Run(testwait.Context(t), Options{Command: fake(t, c.body), Model: c.model}, f, nil, nil)
			if !errors.Is(err, c.want) {
				t.Fatalf("Run = %v, want %v", err, c.want)
			}
		})
	}
	_, err := Run(testwait.Context(t), Options{Command: []string{filepath.Join(t.TempDir(), "none")}, Model: model}, f, nil, nil)
	if !errors.Is(err, ErrStart) {
		t.Errorf("Run with a missing program = %v, want ErrStart", err)
	}
	text := filepath.Join(t.TempDir(), "notes.wav")
	os.WriteFile(text, []byte("not audio"), 0o644)
	nf, err := os.Open(text)
	if err != nil {
		t.Fatal(err)
	}
	defer nf.Close()
	if _, err := Run(testwait.Context(t), Options{Command: fake(t, "cat >/dev/null\n"), Model: model}, nf, nil, nil); !errors.Is(err, ErrDecodeFailed) {
		t.Errorf("Run on a file that is not a WAV file = %v, want ErrDecodeFailed", err)
	}
}

// TestCancelKillsGroup: cancelling kills the decoder and anything it
// started (which would otherwise sleep far longer than testwait.Hang).
func TestCancelKillsGroup(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	cmd := fake(t, `sleep 600 & echo "$$ $!" > `+pids+`
wait
`)
	model, f := fixture(t)
	w, err := testwait.WatchFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithCancel(testwait.Context(t))
	errc := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Options{Command: cmd, Model: model}, f, nil, nil)
		errc <- err
	}()
	var procs []int
	both := func() bool {
		b, _ := os.ReadFile(pids)
		fs := strings.Fields(string(b))
		if len(fs) != 2 || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		procs = procs[:0]
		for _, s := range fs {
			n, _ := strconv.Atoi(s)
			procs = append(procs, n)
		}
		return true
	}
	if err := testwait.Until(testwait.Context(t), both, w); err != nil {
		cancel()
		t.Fatalf("waiting for the fake decoder to write its pid and its child's: %v", err)
	}
	var exited []<-chan struct{}
	for _, pid := range procs {
		ch, err := testwait.Exited(pid)
		if err != nil {
			t.Fatal(err)
		}
		exited = append(exited, ch)
	}
	cancel()
	if err := testwait.Recv(t, errc, "Run to return after its cancel"); !errors.Is(err, context.Canceled) {
		t.Errorf("Run after cancel = %v, want context.Canceled", err)
	}
	for i, pid := range procs {
		testwait.Closed(t, exited[i], fmt.Sprintf("process %d to be killed by the cancel", pid))
	}
}

// TestNice: every thread of the decoder runs at the niceness asked for.
// The decoder looks at its niceness only once Run has set it: Run calls
// started after that, and started lets the decoder go (a FIFO it reads).
func TestNice(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "nice")
	gate := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := fake(t, `read go < `+gate+`; cut -d' ' -f19 /proc/$$/stat > `+out+`; echo '`+answer(1, "", 1000)+`'; cat >/dev/null`)
	model, f := fixture(t)
	base, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	var held *os.File
	defer func() {
		if held != nil {
			held.Close()
		}
	}()
	letGo := func(int) {
		// Opened read-write, the FIFO does not wait for its reader, and
		// keeps the line until the decoder opens it and reads.
		var err error
		if held, err = os.OpenFile(gate, os.O_RDWR, 0); err != nil {
			t.Errorf("open the decoder's gate: %v", err)
			return
		}
		held.WriteString("go\n")
	}
	if _, err := Run(testwait.Context(t), Options{Command: cmd, Model: model, Nice: 10}, f, nil, letGo); err != nil {
		t.Fatalf("Run: %v", err)
	}
	b, _ := os.ReadFile(out)
	got, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	// getpriority(2) returns 20-nice on Linux.
	want := min(20-base+10, 19)
	if got != want {
		t.Errorf("decoder niceness = %d, want %d", got, want)
	}
}

// privateIn returns the pids whose /proc/PID/cmdline or /proc/PID/environ
// holds marker, each with the file that holds it: what any process that
// may read /proc sees. A process that ends meanwhile is skipped.
func privateIn(marker string) []string {
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	env, _ := filepath.Glob("/proc/[0-9]*/environ")
	var found []string
	for _, p := range append(paths, env...) {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), marker) {
			found = append(found, p)
		}
	}
	return found
}

// TestPromptOnNoCommandLine: the vocabulary prompt is private
// (docs/config.md): it reaches the decoder as a Prompt frame on its stdin
// before the piece's audio, and no process shows it in its command line
// or environment while the decoder runs. The fake decoder waits on a FIFO
// until /proc was read, then keeps what it read on stdin.
func TestPromptOnNoCommandLine(t *testing.T) {
	const marker = "PROMPT-MARKER-3390 Kubernetes, Grüße"
	dir := t.TempDir()
	gate, stdin := filepath.Join(dir, "gate"), filepath.Join(dir, "stdin")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := fake(t, `read go < `+gate+`; echo '`+answer(1, "", 1000)+`'; cat > `+stdin)
	model, f := fixture(t)
	var held *os.File
	defer func() {
		if held != nil {
			held.Close()
		}
	}()
	scanned := false
	look := func(pid int) {
		if found := privateIn(marker); len(found) > 0 {
			t.Errorf("the prompt is readable in %v while the decoder (pid %d) runs", found, pid)
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err != nil || len(b) == 0 {
			t.Errorf("the decoder %d had ended before /proc was read (%v): nothing was checked", pid, err)
		}
		scanned = true
		var err error
		if held, err = os.OpenFile(gate, os.O_RDWR, 0); err != nil {
			t.Errorf("open the decoder's gate: %v", err)
			return
		}
		held.WriteString("go\n")
	}
	if _, err := Run(testwait.Context(t), Options{Command: cmd, Model: model, Prompt: marker}, f, nil, look); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !scanned {
		t.Fatal("started was not called")
	}
	b, err := os.ReadFile(stdin)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := frame.NewReader(bytes.NewReader(b)).Next()
	if err != nil || fr.Type != frame.Prompt || string(fr.Payload) != marker {
		t.Errorf("the decoder read %q on stdin (%v), want a Prompt frame of %q first", b[:min(len(b), 80)], err, marker)
	}
	if fs := frames(t, b); !slices.Equal(fs, []string{"P", "A16000", "E"}) {
		t.Errorf("frames on stdin %q, want the prompt, 1 s of audio, the end", fs)
	}
}
