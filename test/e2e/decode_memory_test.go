package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// speechMinutes is a file of the given minutes of speech-like audio: jfk.wav
// and 4 s of silence, over and over (15 s each).
func speechMinutes(t *testing.T, minutes int) string {
	t.Helper()
	unit := join(jfkSamples(t), zeros(4))
	var audio []float32
	for len(audio) < minutes*60*sr {
		audio = append(audio, unit...)
	}
	return writeWAVFile(t, filepath.Join(t.TempDir(), "speech.wav"), audio[:minutes*60*sr])
}

// peakRSSEnv, set in the test binary's environment, makes it a small
// parent that runs its arguments as a command and prints the command's
// peak resident memory (getrusage maxrss, KiB) on stdout. A child started
// by this test process itself would report this process's own size
// instead, if larger: Linux carries the high-water mark across the
// vfork and exec that start a child.
const peakRSSEnv = "YAZ_E2E_PEAK_RSS"

func init() {
	if os.Getenv(peakRSSEnv) == "" {
		return
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stderr = os.Stderr // stdout (the transcript) is discarded
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "peak RSS:", err)
		os.Exit(1)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "peak RSS: no rusage for the child")
		os.Exit(1)
	}
	fmt.Println(ru.Maxrss)
	os.Exit(0)
}

// peakRSS runs a command and returns its peak resident memory in MiB; it
// fails the test when the command fails.
func peakRSS(t *testing.T, name string, args ...string) float64 {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, append([]string{name}, args...)...)
	cmd.Env = append(os.Environ(), peakRSSEnv+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v (waited at most 8 min)\n%s", filepath.Base(name), err, tail(stderr.String(), 10))
	}
	kib, err := strconv.ParseInt(strings.TrimSpace(stdout.String()), 10, 64)
	if err != nil {
		t.Fatalf("%s: peak RSS %q: %v", filepath.Base(name), stdout.String(), err)
	}
	return float64(kib) / 1024
}

// TestDecodeFileMemoryFlat: yaz-decode decodes a file in pieces (lib/piece,
// as yazsesd does), so its peak memory does not grow with the file's
// length: from 1 to 8 minutes of audio it grows by less than 20 MiB (the
// 7 minutes more as float32 alone are 27 MiB; before the fix it grew about
// 20 MiB a minute; from run to run it varies by about 9 MiB at any
// length), and on the 8 minutes it is no more than whisper-cli's with the
// same model. Every piece is decoded (--no-vad-gate): whisper's
// own state is part of what is measured.
func TestDecodeFileMemoryFlat(t *testing.T) {
	short, long := speechMinutes(t, 1), speechMinutes(t, 8)
	yaz := func(path string) float64 {
		return peakRSS(t, filepath.Join(world.bin, "yaz-decode"), "-m", world.mini, "-t", "2", "--vad", "energy",
			"--no-vad-gate", "-o", "json", path)
	}
	s, l := yaz(short), yaz(long)
	cli := peakRSS(t, world.whisperCLI, "-m", world.mini, "-f", long, "-t", "2", "-bs", "1", "-np", "-nt")
	t.Logf("peak RSS: yaz-decode 1 min %.1f MiB, 8 min %.1f MiB; whisper-cli 8 min %.1f MiB", s, l, cli)
	if l-s >= 20 {
		t.Errorf("yaz-decode's peak memory grew by %.1f MiB from 1 to 8 minutes of audio (%.1f to %.1f MiB): it holds the file, not a piece", l-s, s, l)
	}
	if l > cli {
		t.Errorf("yaz-decode used %.1f MiB on 8 minutes of audio, more than whisper-cli's %.1f MiB", l, cli)
	}
}
