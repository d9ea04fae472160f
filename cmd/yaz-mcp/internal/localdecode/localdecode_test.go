package localdecode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/frame"
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

// fixture makes a model file and an input file and opens the input.
func fixture(t *testing.T) (model string, f *os.File) {
	t.Helper()
	dir := t.TempDir()
	model = filepath.Join(dir, "ggml-test.bin")
	if err := os.WriteFile(model, []byte("model"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in.wav")
	if err := os.WriteFile(in, []byte("RIFF....WAVE"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return model, f
}

func TestRunParsesTranscriptAndProgress(t *testing.T) {
	// The fake reports its argv and the first bytes of fd 3 in the text.
	cmd := fake(t, `
printf '\r3 [===      ]   5%% 0s' >&2
printf '\r3 [=====    ]  50%% 1s' >&2
printf '\r3 [=====    ]  50%% 2s' >&2
printf '{"level":"ERROR","msg":"] 99%% is not a bar"}\n' >&2
printf '\r3 [=========] 100%% 2s\n' >&2
head=$(head -c 4 /dev/fd/3)
printf '{"file":"/dev/fd/3","audio_ms":1500,"text":"%s %s","segments":[{"start_ms":0,"end_ms":1500,"text":"hello"}]}\n' "$head" "$*"
`)
	model, f := fixture(t)
	var got []int
	res, err := Run(testwait.Context(t), Options{Command: cmd, Model: model, Language: "en", Threads: 2, Prompt: "-x"}, f,
		func(p int) { got = append(got, p) }, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := []int{5, 50, 100}; !equal(got, want) {
		t.Errorf("progress = %v, want %v", got, want)
	}
	if !strings.HasPrefix(res.Text, "RIFF ") {
		t.Errorf("the child did not read the file on fd 3: text %q", res.Text)
	}
	for _, arg := range []string{"--model=" + model, "--output=json", "--progress=always", "--language=en", "--threads=2", "--prompt-stdin", "-- /dev/fd/3"} {
		if !strings.Contains(res.Text, arg) {
			t.Errorf("argv %q lacks %q", res.Text, arg)
		}
	}
	if res.AudioMs != 1500 || len(res.Segments) != 1 || res.Segments[0] != (Segment{0, 1500, "hello"}) {
		t.Errorf("result = %+v", res)
	}
}

func TestRunFailures(t *testing.T) {
	const marker = "SYNTHETIC-MARKER-7731"
	model, f := fixture(t)
	cases := []struct {
		name  string
		body  string
		model string
		want  error
	}{
		{"exit 1", "echo '" + marker + "'; echo 'error: " + marker + "' >&2; exit 1\n", model, ErrDecodeFailed},
		{"killed", "kill -SEGV $$\n", model, ErrDecodeFailed},
		{"not json", "echo '" + marker + "'\n", model, ErrDecodeFailed},
		{"no text", "echo '{\"segments\":[]}'\n", model, ErrDecodeFailed},
		{"model missing", "echo '{\"text\":\"\"}'\n", filepath.Join(t.TempDir(), marker+".bin"), ErrModelMissing},
		{"model is a folder", "echo '{\"text\":\"\"}'\n", t.TempDir(), ErrModelMissing},
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
	cmd := fake(t, `read go < `+gate+`; cut -d' ' -f19 /proc/$$/stat > `+out+`; echo '{"text":""}'`)
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

func equal(a, b []int) bool {
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
// (docs/config.md): it reaches the decoder as one Prompt frame on its
// stdin (yaz-decode --prompt-stdin), and no process shows it in its
// command line or environment while the decoder runs. The fake decoder
// keeps what it read on stdin and waits on a FIFO until /proc was read.
func TestPromptOnNoCommandLine(t *testing.T) {
	const marker = "PROMPT-MARKER-3390 Kubernetes, Grüße"
	dir := t.TempDir()
	gate, stdin := filepath.Join(dir, "gate"), filepath.Join(dir, "stdin")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := fake(t, `cat > `+stdin+`; read go < `+gate+`; printf '{"text":"%s"}\n' "$*"`)
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
	res, err := Run(testwait.Context(t), Options{Command: cmd, Model: model, Prompt: marker}, f, nil, look)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !scanned {
		t.Fatal("started was not called")
	}
	if !strings.Contains(res.Text, "--prompt-stdin") {
		t.Errorf("argv %q lacks --prompt-stdin", res.Text)
	}
	b, err := os.ReadFile(stdin)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := frame.NewReader(bytes.NewReader(b)).Next()
	if err != nil || fr.Type != frame.Prompt || string(fr.Payload) != marker {
		t.Errorf("the decoder read %q on stdin (%v), want one Prompt frame of %q", b, err, marker)
	}
}
