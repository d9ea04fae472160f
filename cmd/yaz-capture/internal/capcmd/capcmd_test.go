package capcmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/pcm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func runMain(t *testing.T, stdout *bytes.Buffer, args ...string) (code int, stderr string) {
	t.Helper()
	var errb bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(""), stdout, &errb)
	return code, errb.String()
}

func TestFlagsAndExitCodes(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stdout string // substring
		stderr string // substring
	}{
		{[]string{"--help"}, 0, "--list-devices", ""},
		{[]string{"--version"}, 0, "dev", ""},
		{[]string{"--bogus"}, 2, "", "yaz-capture: error: unknown flag --bogus"},
		{[]string{"--format", "mp3"}, 2, "", "--format must be one of"},
		{[]string{"--backend", "oss"}, 2, "", "--backend must be one of"},
		{[]string{"--seconds=-1"}, 2, "", "--seconds must be 0 (no limit) or a positive number"},
		{[]string{"--seconds", "x"}, 2, "", "yaz-capture: error:"},
		{[]string{"--seconds", "0.00001", "--backend", "null"}, 2, "", "shorter than one sample"},
		{[]string{"--backend", "null", "--device", "nonexistent"}, 1, "", `yaz-capture: error: open capture device "nonexistent" (backend null): no such device; list devices with yaz-capture --list-devices`},
		{[]string{"--file", "/nonexistent/x.wav"}, 1, "", "yaz-capture: error: read /nonexistent/x.wav: no such file or directory"},
		{[]string{"--backend", "null", "--list-devices"}, 0, "capture   *        00  NULL Capture Device", ""},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		code, stderr := runMain(t, &out, tt.args...)
		if code != tt.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tt.args, code, tt.code, stderr)
		}
		if !strings.Contains(out.String(), tt.stdout) {
			t.Errorf("%v: stdout %q, want it to contain %q", tt.args, out.String(), tt.stdout)
		}
		if !strings.Contains(stderr, tt.stderr) {
			t.Errorf("%v: stderr %q, want it to contain %q", tt.args, stderr, tt.stderr)
		}
		if tt.code == 1 && strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: runtime error is more than one line: %q", tt.args, stderr)
		}
	}
}

func TestSampleLimit(t *testing.T) {
	tests := []struct {
		sec  float64
		want int64
	}{{0, -1}, {1, 16000}, {2.5, 40000}, {0.02, 320}, {1.00003, 16000}}
	for _, tt := range tests {
		got, err := sampleLimit(tt.sec)
		if err != nil || got != tt.want {
			t.Errorf("sampleLimit(%v) = %d, %v; want %d", tt.sec, got, err, tt.want)
		}
	}
}

func TestNullSecondsExact(t *testing.T) {
	var out bytes.Buffer
	begin := time.Now()
	code, stderr := runMain(t, &out, "--backend", "null", "--seconds", "0.25")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if out.Len() != 8000 {
		t.Errorf("--seconds 0.25 wrote %d bytes, want 8000", out.Len())
	}
	if took := time.Since(begin); took < 200*time.Millisecond {
		t.Errorf("0.25 s of the null device took only %v: not real time", took)
	}
}

func writeWAV(t *testing.T, samples []int16) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.wav")
	data := pcm.Encode(nil, samples)
	if err := os.WriteFile(p, append(pcm.WAVHeader(int64(len(data))), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFileRawAndWAV(t *testing.T) {
	in := make([]int16, 4800) // 0.3 s
	for i := range in {
		in[i] = int16(i*7 - 10000)
	}
	path := writeWAV(t, in)

	var out bytes.Buffer
	begin := time.Now()
	if code, stderr := runMain(t, &out, "--file", path); code != 0 {
		t.Fatalf("--file: exit %d: %s", code, stderr)
	}
	if took := time.Since(begin); took < 280*time.Millisecond {
		t.Errorf("--file of 0.3 s ended after %v: not real time", took)
	}
	if got := pcm.Decode(nil, out.Bytes()); !cmp.Equal(got, in) {
		t.Errorf("--file output: %d samples, not the file's %d", len(got), len(in))
	}

	out.Reset()
	if code, stderr := runMain(t, &out, "--file", path, "--seconds", "0.1"); code != 0 || out.Len() != 3200 {
		t.Errorf("--file --seconds 0.1: exit %d, %d bytes, want 3200 (%s)", code, out.Len(), stderr)
	}

	// WAV into a regular file: the header carries the real sizes.
	dst := filepath.Join(t.TempDir(), "out.wav")
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	code := Main(context.Background(), []string{"--file", path, "--format", "wav", "--seconds", "0.2"}, nil, f, &errb)
	f.Close()
	if code != 0 {
		t.Fatalf("--format wav: exit %d: %s", code, errb.String())
	}
	b, _ := os.ReadFile(dst)
	if !bytes.Equal(b[:44], pcm.WAVHeader(6400)) || len(b) != 44+6400 {
		t.Errorf("wav file: %d bytes, header % x; want 6444 and % x", len(b), b[:44], pcm.WAVHeader(6400))
	}
}

// TestClosedStdout: the reader going away (EPIPE) is a clean exit 0.
func TestClosedStdout(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- Main(context.Background(), []string{"--backend", "null"}, nil, w, &errb) }()
	// The null device never ends by itself: only the closed stdout ends Main.
	if code := testwait.Recv(t, done, "Main's exit after a closed stdout"); code != 0 {
		t.Errorf("exit %d after EPIPE, want 0: %s", code, errb.String())
	}
}

// TestCancelIsCleanEnd: cancellation (SIGINT/SIGTERM in main) ends with 0
// and whole frames.
func TestCancelIsCleanEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var out, errb bytes.Buffer
	if code := Main(ctx, []string{"--backend", "null"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d after cancel: %s", code, errb.String())
	}
	if out.Len() == 0 || out.Len()%2 != 0 {
		t.Errorf("wrote %d bytes, want a non-zero even count", out.Len())
	}
}
