package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/cli"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/tts"
	"github.com/yazses/yazses/lib/wav"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// speakBin builds yaz-speak once for the package's tests.
func speakBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "yaz-speak-test-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "yaz-speak")
		// A guard against a build that never ends, not a speed requirement.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

type result struct {
	stdout, stderr []byte
	code           int
}

// runBin runs the binary with args and stdin to its end (killed after
// testwait.Hang).
func runBin(t *testing.T, stdin string, env []string, args ...string) result {
	t.Helper()
	ctx := testwait.Context(t)
	cmd := exec.CommandContext(ctx, speakBin(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run yaz-speak: %v", err)
		}
		code = ee.ExitCode()
	}
	if ctx.Err() != nil {
		t.Fatalf("waiting for yaz-speak %q to end: killed after %v\nstderr:\n%s", args, testwait.Hang, stderr.Bytes())
	}
	return result{stdout.Bytes(), stderr.Bytes(), code}
}

func rms(samples []int16) float64 {
	var sum float64
	for _, s := range samples {
		f := float64(s) / 32768
		sum += f * f
	}
	if len(samples) == 0 {
		return 0
	}
	return math.Sqrt(sum / float64(len(samples)))
}

func TestOutRawStdout(t *testing.T) {
	r := runBin(t, "", nil, "--out", "-", "hello")
	if r.code != 0 {
		t.Fatalf("yaz-speak --out - hello: exit %d, stderr %s", r.code, r.stderr)
	}
	if len(r.stdout)%2 != 0 {
		t.Errorf("stdout has %d bytes, want an even count", len(r.stdout))
	}
	if bytes.HasPrefix(r.stdout, []byte("RIFF")) {
		t.Error("raw output starts with a RIFF header")
	}
	samples := pcm.Decode(nil, r.stdout)
	if d := pcm.Duration(len(samples)); d < 200*time.Millisecond || d > 3*time.Second {
		t.Errorf("hello lasts %v, want 0.2-3 s", d)
	}
	if v := rms(samples); v < 0.02 {
		t.Errorf("RMS = %.4f, want audible speech", v)
	}
	if len(r.stderr) != 0 {
		t.Errorf("stderr = %q, want nothing", r.stderr)
	}
}

// checkWAV parses a WAV file both with lib/wav and by its header bytes.
func checkWAV(t *testing.T, b []byte, minDur time.Duration) []float32 {
	t.Helper()
	if len(b) < 44 {
		t.Fatalf("WAV of %d bytes", len(b))
	}
	if got := binary.LittleEndian.Uint32(b[4:]); int(got) != len(b)-8 {
		t.Errorf("RIFF size = %d, want %d", got, len(b)-8)
	}
	if got := binary.LittleEndian.Uint32(b[40:]); int(got) != len(b)-44 {
		t.Errorf("data size = %d, want %d", got, len(b)-44)
	}
	f, _, err := wav.ReadAll16k(bytes.NewReader(b), 1<<24)
	if err != nil {
		t.Fatalf("wav.ReadAll16k: %v", err)
	}
	if len(f) != (len(b)-44)/2 {
		t.Errorf("lib/wav read %d samples, want %d", len(f), (len(b)-44)/2)
	}
	if d := pcm.Duration(len(f)); d < minDur {
		t.Errorf("WAV lasts %v, want at least %v", d, minDur)
	}
	return f
}

func TestOutWAVFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "f.wav")
	r := runBin(t, "", nil, "--format", "wav", "--out", out, "hello", "world")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
	if len(r.stdout) != 0 {
		t.Errorf("stdout = %d bytes, want nothing with --out FILE", len(r.stdout))
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	f := checkWAV(t, b, 300*time.Millisecond)
	if v := rms(pcm.FromFloat32(nil, f)); v < 0.02 {
		t.Errorf("RMS = %.4f, want audible speech", v)
	}
}

// TestOutWAVByName: an output file whose name ends in .wav, in any case,
// is a WAV file without --format (raw PCM once went into x.wav);
// another name, and stdout, stay raw; --format raw with a .wav name is
// refused with the flag that writes WAV.
func TestOutWAVByName(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.wav", "B.WAV", "c.Wav"} {
		out := filepath.Join(dir, name)
		r := runBin(t, "", nil, "--out", out, "hello")
		if r.code != 0 {
			t.Fatalf("--out %s: exit %d, stderr %s", name, r.code, r.stderr)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("RIFF")) {
			t.Fatalf("--out %s wrote no WAV header: % x", name, b[:min(len(b), 12)])
		}
		checkWAV(t, b, 200*time.Millisecond)
	}
	raw := filepath.Join(dir, "d.raw")
	if r := runBin(t, "", nil, "-o", raw, "hello"); r.code != 0 {
		t.Fatalf("-o d.raw: exit %d, stderr %s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(raw); len(b) == 0 || bytes.HasPrefix(b, []byte("RIFF")) {
		t.Errorf("-o d.raw: %d bytes starting % x, want raw PCM", len(b), b[:min(len(b), 4)])
	}
	r := runBin(t, "", nil, "--format", "raw", "--out", filepath.Join(dir, "e.wav"), "hello")
	if r.code != cli.ExitUsage || !strings.Contains(string(r.stderr), "--format wav") {
		t.Errorf("--format raw --out e.wav: exit %d, stderr %q; want a usage error naming --format wav", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "e.wav")); err == nil {
		t.Error("--format raw --out e.wav wrote the file it refused")
	}
}

// TestOutWAVLines speaks several stdin lines into one WAV file and into a
// WAV stream on stdout: the file gets its real sizes, the stream the
// streaming header, and both hold the same samples as the raw output.
func TestOutWAVLines(t *testing.T) {
	t.Parallel()
	const input = "one\n\n  two  \r\nthree"
	raw := runBin(t, input, nil, "--out", "-")
	if raw.code != 0 {
		t.Fatalf("raw: exit %d, stderr %s", raw.code, raw.stderr)
	}
	out := filepath.Join(t.TempDir(), "lines.wav")
	file := runBin(t, input, nil, "--out", out, "--format", "wav")
	if file.code != 0 {
		t.Fatalf("file: exit %d, stderr %s", file.code, file.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	checkWAV(t, b, time.Second)
	if !bytes.Equal(b[44:], raw.stdout) {
		t.Errorf("WAV file data (%d bytes) differs from raw output (%d bytes)", len(b)-44, len(raw.stdout))
	}
	stream := runBin(t, input, nil, "--out", "-", "--format", "wav")
	if stream.code != 0 {
		t.Fatalf("stream: exit %d, stderr %s", stream.code, stream.stderr)
	}
	if !bytes.Equal(stream.stdout[:44], pcm.StreamWAVHeader()) {
		t.Errorf("stdout header = % x, want the streaming header", stream.stdout[:44])
	}
	if !bytes.Equal(stream.stdout[44:], raw.stdout) {
		t.Error("WAV stream data differs from raw output")
	}
	// Three utterances: clearly longer than any one of them.
	one := runBin(t, "", nil, "--out", "-", "three")
	if len(raw.stdout) < 2*len(one.stdout) {
		t.Errorf("three lines gave %d bytes, one word %d: lines were lost", len(raw.stdout), len(one.stdout))
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--format", "mp3", "--out", "-", "hi"}, "--format"},
		{[]string{"--format", "wav", "hi"}, "needs --out"},
		{[]string{"--rate", "5", "--out", "-", "hi"}, "rate"},
		{[]string{"--voice", "-x", "--out", "-", "hi"}, "voice"},
		{[]string{"--serve", "hi"}, "--serve"},
		{[]string{"--serve", "--out", "-"}, "--serve"},
		{[]string{"--out", "-", "\x01", "\t"}, "no text"},
		{[]string{"--no-such-flag"}, "unknown flag"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tt.args, strings.NewReader(""), &stdout, &stderr)
			if code != 2 {
				t.Errorf("exit %d, want 2 (stderr %q)", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) || !strings.HasPrefix(stderr.String(), "yaz-speak: error: ") {
				t.Errorf("stderr = %q, want \"yaz-speak: error: …%s…\"", stderr.String(), tt.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
		})
	}
}

// openPTY returns the two ends of a new pseudo-terminal.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

func TestNoTextFromTerminal(t *testing.T) {
	_, tty := openPTY(t)
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"--out", "-"}, tty, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "no text") {
		t.Errorf("exit %d, stderr %q; want 2 and \"no text\"", code, stderr.String())
	}
}

func TestMissingEspeak(t *testing.T) {
	r := runBin(t, "", []string{"PATH=" + t.TempDir()}, "--out", "-", "secret words")
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
	want := "yaz-speak: error: espeak-ng not found: install it (apt install espeak-ng)\n"
	if string(r.stderr) != want {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}
	// The same in serve mode, before readiness.
	r = runBin(t, "", []string{"YAZ_ESPEAK=/nonexistent/espeak-ng"}, "--serve")
	if r.code != 1 || !strings.Contains(string(r.stderr), "apt install espeak-ng") {
		t.Errorf("--serve without espeak-ng: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestRuntimeErrorKeepsTextPrivate(t *testing.T) {
	r := runBin(t, "", nil, "--voice", "zz-nosuch", "--out", "-", "my", "secret", "password")
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
	if !strings.Contains(string(r.stderr), "zz-nosuch") {
		t.Errorf("stderr = %q, want the unknown voice named", r.stderr)
	}
	for _, w := range []string{"secret", "password"} {
		if strings.Contains(string(r.stderr), w) {
			t.Errorf("stderr %q contains the text", r.stderr)
		}
	}
}

// TestEPIPE closes stdout early: yaz-speak exits 0 without an error.
func TestEPIPE(t *testing.T) {
	t.Parallel()
	ctx := testwait.Context(t) // kills it after testwait.Hang: the read and Wait below end
	cmd := exec.CommandContext(ctx, speakBin(t), "--out", "-")
	cmd.Stdin = strings.NewReader(strings.Repeat("a long line of words to speak\n", 50))
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = pw
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	buf := make([]byte, 100)
	if _, err := io.ReadFull(pr, buf); err != nil {
		t.Fatalf("waiting for yaz-speak's first 100 bytes on stdout: %v (bound: %v)", err, ctx.Err())
	}
	pr.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("yaz-speak with a closed stdout: %v (bound: %v), stderr %q; want exit 0", err, ctx.Err(), stderr.String())
	}
}

// TestSignalStopsPlayback plays a long text on the null device (real time)
// and sends SIGTERM or SIGINT once the device plays (its "playback
// started" log line): yaz-speak exits 0, stopped by the signal, before the
// audio would have ended.
func TestSignalStopsPlayback(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(speakBin(t), "--backend", "null", "--log-level", "debug",
				strings.Repeat("this goes on and on ", 10))
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			type exit struct {
				err      error
				signaled time.Time
				audio    time.Duration // the utterance's length, from its "playing" line
				log      string
			}
			done := make(chan exit, 1)
			go func() {
				var e exit
				var log strings.Builder
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					line := sc.Text()
					log.WriteString(line + "\n")
					if strings.Contains(line, "msg=playing") {
						if _, v, ok := strings.Cut(line, "audio_ms="); ok {
							ms, _ := strconv.Atoi(strings.Fields(v)[0])
							e.audio = time.Duration(ms) * time.Millisecond
						}
					}
					if e.signaled.IsZero() && strings.Contains(line, `msg="playback started"`) {
						e.signaled = time.Now()
						cmd.Process.Signal(sig)
					}
				}
				e.err = cmd.Wait()
				e.log = log.String()
				done <- e
			}()
			select {
			case e := <-done:
				if e.signaled.IsZero() {
					t.Fatalf("yaz-speak never logged that playback started: %v\n%s", e.err, e.log)
				}
				if e.err != nil {
					t.Errorf("after %v: %v; want exit 0", sig, e.err)
				}
				if !strings.Contains(e.log, `msg="stopped by signal"`) {
					t.Errorf("after %v: no \"stopped by signal\" in its log: it played to the end\n%s", sig, e.log)
				}
				// Stopping at once ends it well before the audio would
				// have: the bound is the audio's own length, not a
				// stopwatch a loaded machine can miss.
				if d := time.Since(e.signaled); e.audio == 0 || d >= e.audio {
					t.Errorf("exit came %v after %v for %v of audio: not stopped", d, sig, e.audio)
				}
			case <-time.After(testwait.Hang):
				cmd.Process.Kill()
				t.Fatalf("waiting for yaz-speak to exit after %v: still running after %v", sig, testwait.Hang)
			}
		})
	}
}

// serveProc is a running `yaz-speak --serve`.
type serveProc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	events chan timedLine // stdout's lines as they come; closed at its end
	stderr *testwait.Buffer
	waited bool // Wait was called (by wait)
}

// timedLine is a line of output and when it was read.
type timedLine struct {
	text string
	at   time.Time
}

func startServe(t *testing.T, env []string, args ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(speakBin(t), append([]string{"--serve"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: cmd, in: in, events: make(chan timedLine, 64), stderr: &testwait.Buffer{}}
	cmd.Stderr = p.stderr
	rr, rw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles = []*os.File{rw}
	cmd.Env = append(cmd.Env, tts.ReadyFDEnv+"=3")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rw.Close()
	go func() {
		defer close(p.events)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.events <- timedLine{sc.Text(), time.Now()}
		}
	}()
	t.Cleanup(func() {
		if !p.waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	// Readiness: one newline, then EOF.
	rr.SetReadDeadline(time.Now().Add(testwait.Hang))
	ready, err := io.ReadAll(rr)
	rr.Close()
	if err != nil || string(ready) != "\n" {
		t.Fatalf("waiting for readiness on fd 3: got %q, %v; want \"\\n\" then EOF (stderr %s)", ready, err, p.stderr)
	}
	return p
}

// wait waits for the server to exit, after what (a signal, stdin's EOF);
// after testwait.Hang it kills it and fails.
func (p *serveProc) wait(t *testing.T, what string) error {
	t.Helper()
	p.waited = true
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(testwait.Hang):
		p.cmd.Process.Kill()
		<-done // killed: Wait returns
		t.Fatalf("waiting for yaz-speak --serve to exit after %s: still running after %v (stderr %s)", what, testwait.Hang, p.stderr)
		return nil
	}
}

func (p *serveProc) send(t *testing.T, id, text string) {
	t.Helper()
	b, _ := json.Marshal(tts.Request{ID: id, Text: text})
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		t.Fatalf("send request: %v", err)
	}
}

type timedEvent struct {
	tts.Event
	at time.Time
}

// next returns the next event, with when it was read; after
// testwait.Hang, or at the end of stdout, it fails.
func (p *serveProc) next(t *testing.T) timedEvent {
	t.Helper()
	var line timedLine
	select {
	case l, ok := <-p.events:
		if !ok {
			t.Fatalf("waiting for the next event: stdout ended; stderr %s", p.stderr)
		}
		line = l
	case <-time.After(testwait.Hang):
		t.Fatalf("waiting for the next event: none within %v; stderr %s", testwait.Hang, p.stderr)
	}
	var ev tts.Event
	if err := json.Unmarshal([]byte(line.text), &ev); err != nil {
		t.Fatalf("event %q: %v", line.text, err)
	}
	// "started" carries the utterance's length, and only "started" does;
	// tests compare the rest.
	if (ev.Event == tts.EventStarted) != (ev.AudioMs > 0) {
		t.Fatalf("event %q: audio_ms must be set on started, and only there", line.text)
	}
	ev.AudioMs = 0
	return timedEvent{ev, line.at}
}

// TestServeNullDevice runs the server on the null backend: a good request,
// a malformed one and a synthesis failure (unknown voice in a second server),
// and a SIGTERM while idle.
func TestServeNullDevice(t *testing.T) {
	t.Parallel()
	p := startServe(t, nil, "--backend", "null")
	p.send(t, "a", "hi")
	p.in.Write([]byte("{\"id\":\"broken\",\"text\":1}\n"))
	p.send(t, "b", "-v ok")
	want := []tts.Event{
		{ID: "a", Event: tts.EventStarted, Audible: true},
		{ID: "a", Event: tts.EventDone, Audible: true},
		{ID: "broken", Event: tts.EventFailed},
		{ID: "b", Event: tts.EventStarted, Audible: true},
		{ID: "b", Event: tts.EventDone, Audible: true},
	}
	for _, w := range want {
		if got := p.next(t); got.Event != w {
			t.Fatalf("event = %+v, want %+v", got.Event, w)
		}
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(t, "SIGTERM while idle"); err != nil {
		t.Errorf("SIGTERM while idle: %v, want exit 0", err)
	}

	bad := startServe(t, nil, "--backend", "null", "--voice", "zz-nosuch")
	bad.send(t, "c", "hello")
	if got := bad.next(t); got.Event != (tts.Event{ID: "c", Event: tts.EventFailed}) {
		t.Errorf("event = %+v, want c failed, not audible", got.Event)
	}
	bad.in.Close()
	if err := bad.wait(t, "stdin's EOF"); err != nil {
		t.Errorf("EOF: %v, want exit 0", err)
	}
}

// TestServeSkip sends SIGUSR1 while a long text plays: it ends with failed,
// audible, and the next request is served.
func TestServeSkip(t *testing.T) {
	t.Parallel()
	p := startServe(t, nil, "--backend", "null")
	p.send(t, "long", strings.Repeat("this goes on and on ", 20))
	if got := p.next(t); got.Event != (tts.Event{ID: "long", Event: tts.EventStarted, Audible: true}) {
		t.Fatalf("event = %+v, want long started", got.Event)
	}
	p.cmd.Process.Signal(syscall.SIGUSR1)
	if got := p.next(t); got.Event != (tts.Event{ID: "long", Event: tts.EventFailed, Audible: true}) {
		t.Fatalf("event after SIGUSR1 = %+v, want long failed audible", got.Event)
	}
	p.send(t, "short", "ok")
	for _, w := range []string{tts.EventStarted, tts.EventDone} {
		if got := p.next(t); got.ID != "short" || got.Event.Event != w {
			t.Fatalf("event = %+v, want short %s", got.Event, w)
		}
	}
	p.in.Close()
	if err := p.wait(t, "stdin's EOF"); err != nil {
		t.Errorf("EOF: %v, want exit 0", err)
	}
}

// TestServePulseAudio plays two requests into a private PulseAudio null
// sink: started then done for each, in order, audible, and each utterance
// takes about its real playing time between started and done.
func TestServePulseAudio(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("pulseaudio"); err != nil {
		t.Fatal("pulseaudio is not installed (apt-get install pulseaudio pulseaudio-utils): this test needs it")
	}
	env := startPulse(t)
	p := startServe(t, env, "--backend", "pulseaudio")
	texts := map[string]string{"one": "hello", "two": "okay then"}
	p.send(t, "one", texts["one"])
	p.send(t, "two", texts["two"])
	for _, id := range []string{"one", "two"} {
		started := p.next(t)
		if started.Event != (tts.Event{ID: id, Event: tts.EventStarted, Audible: true}) {
			t.Fatalf("event = %+v, want %s started", started.Event, id)
		}
		done := p.next(t)
		if done.Event != (tts.Event{ID: id, Event: tts.EventDone, Audible: true}) {
			t.Fatalf("event = %+v, want %s done", done.Event, id)
		}
		samples, err := tts.Synthesize(t.Context(), texts[id], tts.Options{Voice: "en-us", Rate: 170})
		if err != nil {
			t.Fatal(err)
		}
		audio := pcm.Duration(len(samples))
		if played := done.at.Sub(started.at); played < audio/2 {
			t.Errorf("%s: %v between started and done for %v of audio: not really played", id, played, audio)
		}
	}
	p.in.Close()
	if err := p.wait(t, "stdin's EOF"); err != nil {
		t.Errorf("EOF: %v, want exit 0 (stderr %s)", err, p.stderr)
	}
}

// startPulse starts a private PulseAudio with scripts/pulse-test-server.sh
// and returns the environment its clients need.
func startPulse(t *testing.T) []string {
	t.Helper()
	script, err := filepath.Abs("../../scripts/pulse-test-server.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, err := exec.CommandContext(testwait.Context(t), "sh", script, "start", dir).Output()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "pulse.log"))
		t.Fatalf("start pulseaudio: %v\n%s", err, log)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Hang)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "sh", script, "stop", dir).CombinedOutput(); err != nil {
			t.Errorf("stop pulseaudio: %v\n%s", err, out)
		}
	})
	var env []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(l, "=") {
			env = append(env, l)
		}
	}
	if len(env) == 0 {
		t.Fatalf("pulse-test-server.sh printed no environment: %q", out)
	}
	return env
}
