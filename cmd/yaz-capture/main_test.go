package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/yazses/yazses/lib/pcm"

	"github.com/yazses/yazses/internal/testwait"
)

// bin is the yaz-capture binary built for these tests.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "yaz-capture-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "yaz-capture")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

func capture(t *testing.T, args ...string) (stdout []byte, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("%v: %v", args, err)
	}
	return out.Bytes(), errb.String(), code
}

func TestNullSeconds(t *testing.T) {
	begin := time.Now()
	out, stderr, code := capture(t, "--backend", "null", "--seconds", "1")
	if code != 0 || len(out) != 32000 {
		t.Fatalf("--backend null --seconds 1: exit %d, %d bytes; want 0 and 32000 (%s)", code, len(out), stderr)
	}
	// A floor only: the device is paced at real time, not read in a burst
	// (no ceiling: a loaded machine may be slow).
	if took := time.Since(begin); took < 900*time.Millisecond {
		t.Errorf("1 s of the null device took %v", took)
	}
	if stderr != "" {
		t.Errorf("stderr at the default log level = %q, want nothing", stderr)
	}
}

func TestFileSeconds(t *testing.T) {
	in := make([]int16, 16000)
	for i := range in {
		in[i] = int16((i * 37) % 20000)
	}
	data := pcm.Encode(nil, in)
	path := filepath.Join(t.TempDir(), "tone.wav")
	if err := os.WriteFile(path, append(pcm.WAVHeader(int64(len(data))), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := capture(t, "--file", path, "--seconds", "0.5")
	if code != 0 || !bytes.Equal(out, data[:16000]) {
		t.Fatalf("--file --seconds 0.5: exit %d, %d bytes; want 0 and the first 16000 bytes of the file (%s)", code, len(out), stderr)
	}
}

// startAndWait starts the binary with stdout and waits until ready reports
// that output has arrived, re-checking it at each change of src (bounded:
// testwait.Hang).
func startAndWait(t *testing.T, stdout io.Writer, ready func() bool, src testwait.Source, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdout = stdout
	var errb testwait.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := testwait.Until(testwait.Context(t), ready, src, &errb); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("%v: waiting for its first output: %v (stderr: %s)", args, err, errb.String())
	}
	return cmd
}

func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return cmd.ProcessState.ExitCode()
	case <-time.After(testwait.Hang):
		cmd.Process.Kill()
		<-done
		t.Fatalf("no exit within %v of the signal or the reader going away", testwait.Hang)
		return -1
	}
}

func TestSIGTERM(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	first := make(chan struct{})
	var read testwait.Signal
	go func() {
		var all []byte
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			if len(all) == 0 && n > 0 {
				close(first)
				read.Notify()
			}
			all = append(all, buf[:n]...)
			if err != nil {
				got <- all
				return
			}
		}
	}()
	cmd := startAndWait(t, w, func() bool {
		select {
		case <-first:
			return true
		default:
			return false
		}
	}, &read, "--backend", "null")
	w.Close()
	// The first bytes show it streaming, with its handler set (main sets
	// it before anything is read): the signal comes mid-stream.
	cmd.Process.Signal(syscall.SIGTERM)
	code := waitExit(t, cmd)
	all := testwait.Recv(t, got, "yaz-capture's stdout to end")
	r.Close()
	if code != 0 {
		t.Errorf("exit after SIGTERM = %d, want 0", code)
	}
	if len(all) == 0 || len(all)%2 != 0 {
		t.Errorf("%d bytes after SIGTERM, want a non-zero even count", len(all))
	}
}

func TestSIGTERMPatchesWAV(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.wav")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := testwait.WatchFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cmd := startAndWait(t, f, func() bool {
		st, err := os.Stat(path)
		return err == nil && st.Size() >= 44+3200
	}, w, "--backend", "null", "--format", "wav")
	cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, cmd); code != 0 {
		t.Errorf("exit after SIGTERM = %d, want 0", code)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data := len(b) - 44
	if data%2 != 0 {
		t.Errorf("%d data bytes: half a frame", data)
	}
	if riff, d := binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[40:]); int(d) != data || int(riff) != data+36 {
		t.Errorf("header sizes riff=%d data=%d, want %d and %d", riff, d, data+36, data)
	}
}

func TestReaderGoesAway(t *testing.T) {
	cmd := exec.Command(bin, "--backend", "null")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(stdout, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	stdout.Close() // like `yaz-capture | head -c 100`
	if code := waitExit(t, cmd); code != 0 {
		t.Errorf("exit after the reader went away = %d, want 0 (%s)", code, errb.String())
	}
}

func TestNoSuchDevice(t *testing.T) {
	out, stderr, code := capture(t, "--backend", "null", "--device", "nonexistent")
	if code != 1 || len(out) != 0 {
		t.Errorf("--device nonexistent: exit %d, %d bytes on stdout; want 1 and none", code, len(out))
	}
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "yaz-capture: error: ") || !strings.Contains(lines[0], `"nonexistent"`) || !strings.Contains(lines[0], "--list-devices") {
		t.Errorf("stderr = %q, want one line naming the device and --list-devices", stderr)
	}
}
