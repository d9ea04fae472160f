package tts

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/pcm"

	"github.com/yazses/yazses/internal/testwait"
)

// rms is the root mean square of samples, as a fraction of full scale.
func rms(samples []int16) float64 {
	if len(samples) == 0 {
		return 0
	}
	var sum float64
	for _, s := range samples {
		f := float64(s) / 32768
		sum += f * f
	}
	return math.Sqrt(sum / float64(len(samples)))
}

func TestSynthesizeHelloWorld(t *testing.T) {
	samples, err := Synthesize(t.Context(), "hello world", Options{Voice: "en-us", Rate: 170})
	if err != nil {
		t.Fatalf("Synthesize: %v", err)
	}
	d := pcm.Duration(len(samples))
	if d < 300*time.Millisecond || d > 3*time.Second {
		t.Errorf("Synthesize(hello world) gave %v of audio, want 0.3-3 s", d)
	}
	if r := rms(samples); r < 0.02 {
		t.Errorf("Synthesize(hello world) RMS = %.4f, want audible (>= 0.02)", r)
	}
}

// TestSynthesizeRateAndRate checks that the options reach espeak-ng: a slow
// rate gives clearly longer audio than a fast one.
func TestSynthesizeRate(t *testing.T) {
	const text = "the quick brown fox jumps over the lazy dog"
	slow, err := Synthesize(t.Context(), text, Options{Rate: 90})
	if err != nil {
		t.Fatalf("Synthesize(rate 90): %v", err)
	}
	fast, err := Synthesize(t.Context(), text, Options{Rate: 400})
	if err != nil {
		t.Fatalf("Synthesize(rate 400): %v", err)
	}
	if len(slow) < 2*len(fast) {
		t.Errorf("rate 90 gave %d samples, rate 400 gave %d: want the slow one at least twice as long", len(slow), len(fast))
	}
}

func TestSynthesizeHostileText(t *testing.T) {
	for _, text := range []string{
		"-v xx --version",
		"--help",
		"-hello",
		"\x1b[2J\x00hello\x07 \u202eworld\u202c\r\nagain",
	} {
		t.Run(strconv.Quote(text), func(t *testing.T) {
			samples, err := Synthesize(t.Context(), text, Options{Voice: "en-us"})
			if err != nil {
				t.Fatalf("Synthesize: %v", err)
			}
			if r := rms(samples); r < 0.01 || len(samples) < pcm.Samples(100*time.Millisecond) {
				t.Errorf("Synthesize gave %d samples, RMS %.4f: want speech", len(samples), r)
			}
		})
	}
}

func TestSynthesizeEmpty(t *testing.T) {
	for _, text := range []string{"", "   ", "\x01\x02\n\t"} {
		_, err := Synthesize(t.Context(), text, Options{})
		if !errors.Is(err, ErrEmptyText) {
			t.Errorf("Synthesize(%q) error = %v, want ErrEmptyText", text, err)
		}
	}
}

func TestSynthesizeMissingBinary(t *testing.T) {
	t.Run("default name not in PATH", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		_, err := Synthesize(t.Context(), "secret words", Options{})
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("error = %v, want ErrNotFound", err)
		}
		const want = "synthesize speech: espeak-ng not found: install it (apt install espeak-ng)"
		if err.Error() != want {
			t.Errorf("error = %q, want %q", err, want)
		}
	})
	t.Run("explicit path", func(t *testing.T) {
		_, err := Synthesize(t.Context(), "secret words", Options{Binary: filepath.Join(t.TempDir(), "espeak-ng")})
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("error = %v, want ErrNotFound", err)
		}
		if !strings.Contains(err.Error(), "apt install espeak-ng") {
			t.Errorf("error = %q, want the install hint", err)
		}
	})
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		opt Options
		ok  bool
	}{
		{Options{}, true},
		{Options{Voice: "en-us", Rate: 170}, true},
		{Options{Voice: "en-us+f3"}, true},
		{Options{Voice: "mb/mb-en1"}, true},
		{Options{Rate: MinRate}, true},
		{Options{Rate: MaxRate}, true},
		{Options{Voice: "-x"}, false},
		{Options{Voice: "--stdout"}, false},
		{Options{Voice: "en us"}, false},
		{Options{Voice: "en\x00"}, false},
		{Options{Voice: strings.Repeat("a", 101)}, false},
		{Options{Rate: MinRate - 1}, false},
		{Options{Rate: MaxRate + 1}, false},
		{Options{Rate: -5}, false},
	}
	for _, tt := range tests {
		err := tt.opt.Validate()
		if (err == nil) != tt.ok {
			t.Errorf("%+v.Validate() = %v, want ok=%v", tt.opt, err, tt.ok)
		}
		if !tt.ok {
			// Synthesize refuses it before running anything.
			if _, err := Synthesize(t.Context(), "hi", tt.opt); err == nil {
				t.Errorf("Synthesize with %+v succeeded, want an error", tt.opt)
			}
		}
	}
}

// TestErrorsNeverContainText runs failures whose diagnostics could carry the
// text: an unknown voice in the real espeak-ng, and a fake espeak-ng that
// echoes its input on stderr and fails.
func TestErrorsNeverContainText(t *testing.T) {
	const secret = "my bank password is hunter2"
	_, err := Synthesize(t.Context(), secret, Options{Voice: "zz-nosuchvoice"})
	if err == nil {
		t.Fatal("Synthesize with an unknown voice succeeded")
	}
	if !strings.Contains(err.Error(), `no voice "zz-nosuchvoice"`) {
		t.Errorf("error = %q, want it to name the missing voice", err)
	}
	echo := writeScript(t, "cat >&2; exit 3")
	_, err2 := Synthesize(t.Context(), secret, Options{Binary: echo})
	if err2 == nil {
		t.Fatal("Synthesize with a failing binary succeeded")
	}
	if !strings.Contains(err2.Error(), "exit status 3") {
		t.Errorf("error = %q, want the exit status", err2)
	}
	garbage := writeScript(t, "cat")
	_, err3 := Synthesize(t.Context(), secret, Options{Binary: garbage})
	if err3 == nil {
		t.Fatal("Synthesize with a binary that writes no WAV succeeded")
	}
	for _, e := range []error{err, err2, err3} {
		for _, w := range strings.Fields(secret) {
			if len(w) > 2 && strings.Contains(e.Error(), w) {
				t.Errorf("error %q contains the text's word %q", e, w)
			}
		}
	}
}

// TestSynthesizeCancelKillsProcessGroup cancels a fake espeak-ng that hangs
// with a child of its own: Synthesize returns promptly with the context's
// error, and the child is gone too (the whole group was killed).
func TestSynthesizeCancelKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	// The child sleeps past testwait.Hang: only the kill of its group ends
	// it within the wait below.
	bin := writeScript(t, "sleep 1000 & echo $! > "+pidFile+".tmp; mv "+pidFile+".tmp "+pidFile+"; wait")
	watch, err := testwait.WatchFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := Synthesize(ctx, "hello", Options{Binary: bin})
		errc <- err
	}()
	started := func() bool { _, err := os.Stat(pidFile); return err == nil }
	if err := testwait.Until(testwait.Context(t), started, watch); err != nil {
		t.Fatal("fake espeak-ng never started its child")
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("child pid %q: %v", b, err)
	}
	exited, err := testwait.Exited(pid)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	// The shell waits for its child: a Synthesize that waited for the shell
	// would not return within the bound.
	if err := testwait.Recv(t, errc, "Synthesize's return after the cancel"); !errors.Is(err, context.Canceled) {
		t.Errorf("Synthesize after cancel: %v, want context.Canceled", err)
	}
	// The grandchild was killed with its group (an exit that its new
	// parent has not reaped yet counts).
	select {
	case <-exited:
	case <-time.After(testwait.Hang):
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("child %d of espeak-ng survived the cancel", pid)
	}
}

// TestConvertCancel: a cancel while espeak-ng's output is being converted
// returns at once with the context's error. The conversion here waits on a
// reader that delivers only a header, so it is still running when the
// cancel comes, however fast the machine is; it ends when the reader does.
func TestConvertCancel(t *testing.T) {
	const rate = 22050
	h := []byte("RIFF")
	h = binary.LittleEndian.AppendUint32(h, 36+rate*2)
	h = append(h, "WAVEfmt "...)
	h = binary.LittleEndian.AppendUint32(h, 16)
	h = binary.LittleEndian.AppendUint16(h, 1)
	h = binary.LittleEndian.AppendUint16(h, 1)
	h = binary.LittleEndian.AppendUint32(h, rate)
	h = binary.LittleEndian.AppendUint32(h, rate*2)
	h = binary.LittleEndian.AppendUint16(h, 2)
	h = binary.LittleEndian.AppendUint16(h, 16)
	h = append(h, "data"...)
	h = binary.LittleEndian.AppendUint32(h, rate*2)
	pr, pw := io.Pipe()
	go pw.Write(append(h, make([]byte, 1000)...)) // then nothing: the rest never comes
	read := make(chan struct{})
	r := &notifyReader{r: pr, first: read}
	ctx, cancel := context.WithCancel(t.Context())
	res := make(chan error, 1)
	go func() {
		_, err := convert(ctx, r)
		res <- err
	}()
	testwait.Closed(t, read, "the conversion to start reading")
	cancel()
	if err := testwait.Recv(t, res, "the cancelled conversion to return"); !errors.Is(err, context.Canceled) {
		t.Errorf("convert = %v, want context.Canceled", err)
	}
	pw.CloseWithError(io.ErrUnexpectedEOF) // lets the conversion's goroutine end
}

// notifyReader closes first on its first Read.
type notifyReader struct {
	r     io.Reader
	first chan struct{}
	once  sync.Once
}

func (n *notifyReader) Read(p []byte) (int, error) {
	n.once.Do(func() { close(n.first) })
	return n.r.Read(p)
}

func TestCappedBuffer(t *testing.T) {
	c := &cappedBuffer{max: 5}
	for _, p := range []string{"ab", "cde", "fg"} {
		if n, err := c.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if got := c.String(); got != "abcde" || !c.overflow {
		t.Errorf("cappedBuffer = %q overflow=%v, want \"abcde\" true", got, c.overflow)
	}
}

func writeScript(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake-espeak-ng")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
