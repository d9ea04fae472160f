package e2e

import (
	"bufio"
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDecodeFileInterrupt: Ctrl-C while whisper encodes a file stops it at
// once, not at the end of its 30 s window: yaz-decode exits 0 (an
// interruption is not an error) in a fraction of the time the whole file
// takes, measured in the same test. The file is one window long, so
// whisper.cpp's own per-window check would only stop it at the end.
func TestDecodeFileInterrupt(t *testing.T) {
	path := jfkOfLength(t, t.TempDir(), 29)
	args := []string{"-m", world.tinyEn, "-t", "2", "--audio-ctx", "full", "--no-vad-gate", "--progress", "always", "-o", "json", path}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	if _, stderr, code := command(t, ctx, nil, "yaz-decode", args...); code != 0 {
		t.Fatalf("yaz-decode: exit %d\n%s", code, tail(stderr, 10))
	}
	full := time.Since(start)

	cmd := exec.CommandContext(ctx, bin("yaz-decode"), args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The bar's first drawing ("  0%") comes right before the encoder
	// starts on the window.
	br := bufio.NewReader(stderr)
	var seen strings.Builder
	for !strings.Contains(seen.String(), "%") {
		b, err := br.ReadByte()
		if err != nil {
			t.Fatalf("yaz-decode ended before its progress bar: %v\n%s", err, seen.String())
		}
		seen.WriteByte(b)
	}
	cmd.Process.Signal(syscall.SIGINT)
	signalled := time.Now()
	for {
		b, err := br.ReadByte()
		if err != nil {
			break
		}
		seen.WriteByte(b)
	}
	err = cmd.Wait()
	stopped := time.Since(signalled)
	if err != nil {
		t.Fatalf("yaz-decode after SIGINT: %v\n%s", err, seen.String())
	}
	t.Logf("whole file %v; exit %v after SIGINT", full, stopped)
	if stopped > full/2 {
		t.Errorf("yaz-decode exited %v after SIGINT, more than half the time of the whole file (%v)", stopped, full)
	}
	if strings.Contains(seen.String(), "panic") {
		t.Errorf("stderr: %s", seen.String())
	}
}
