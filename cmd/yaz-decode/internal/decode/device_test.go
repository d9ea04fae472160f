package decode

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/decodetest"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/devices"
)

// TestDeviceErrors: a --device that is no device spelling is a usage error
// (exit 2); gpu:N past ggml's devices is one clear line and exit 1, in
// every build, before any audio is read.
func TestDeviceErrors(t *testing.T) {
	dir := t.TempDir()
	model := decodetest.MiniModel(t, dir)
	wav := decodetest.WriteWAV(t, filepath.Join(dir, "a.wav"), decodetest.Speech(time.Second))
	for _, tc := range []struct {
		device string
		code   int
		want   string
	}{
		{"gpu:99", 1, "gpu:99"},
		{"vulkan", 2, "want auto, cpu, gpu or gpu:N"},
	} {
		stdout, stderr, code := runMain(nil, "-m", model, "-t", "2", "--device", tc.device, wav)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != tc.code || stdout != "" || !strings.Contains(stderr, tc.want) || (tc.code == 1 && len(lines) != 1) {
			t.Errorf("--device %s: exit %d, stdout %q, stderr %q; want exit %d and one line naming %q", tc.device, code, stdout, stderr, tc.code, tc.want)
		}
	}
}

// TestListDevicesCPU: --list-devices shows the CPU in every build, and the
// device auto takes.
func TestListDevicesCPU(t *testing.T) {
	stdout, stderr, code := runMain(nil, "--list-devices")
	if code != 0 || !strings.HasPrefix(stdout, "INDEX") || !strings.Contains(stdout, " cpu ") || !strings.Contains(stdout, "\nauto: ") {
		t.Fatalf("--list-devices: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestListDevicesJSON: --list-devices -f json is one JSON object (what
// yazsesd config check reads): every device, the one auto takes, and the
// one --device takes; a --device that finds none is the object's error,
// one line on stderr and exit 1, as a decode would be. The text listing
// names the --device chosen too.
func TestListDevicesJSON(t *testing.T) {
	stdout, stderr, code := runMain(nil, "--list-devices", "-f", "json")
	var got devices.List
	if code != 0 || json.Unmarshal([]byte(stdout), &got) != nil {
		t.Fatalf("--list-devices -f json: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	var cpu *devices.Info
	for i, d := range got.Devices {
		if d.Kind == "cpu" {
			cpu = &got.Devices[i]
		}
	}
	if cpu == nil || cpu.Name != "CPU" || cpu.Backend != "CPU" {
		t.Errorf("devices %+v: want the CPU among them", got.Devices)
	}
	if got.Device != "auto" || got.Chosen == nil || got.Chosen.Name != got.Auto || got.Error != "" {
		t.Errorf("--list-devices -f json = %+v: want --device auto chosen as auto", got)
	}

	stdout, stderr, code = runMain(nil, "--list-devices", "-f", "json", "--device", "gpu:99")
	got = devices.List{}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code != 1 || json.Unmarshal([]byte(stdout), &got) != nil || got.Chosen != nil || !strings.Contains(got.Error, "gpu:99") ||
		len(lines) != 1 || !strings.Contains(lines[0], "gpu:99") {
		t.Errorf("--list-devices -f json --device gpu:99: exit %d, stdout %q, stderr %q; want exit 1, the error in the object and on one line", code, stdout, stderr)
	}

	stdout, _, code = runMain(nil, "--list-devices", "--device", "cpu")
	if code != 0 || !strings.Contains(stdout, "\ncpu: CPU\n") {
		t.Errorf("--list-devices --device cpu: exit %d, stdout %q; want a line \"cpu: CPU\"", code, stdout)
	}
}

// TestServeReadyNamesDevice: under a supervisor, --serve says on its
// readiness line which device its model loaded on (yazsesd status shows
// it), as one JSON object before the newline.
func TestServeReadyNamesDevice(t *testing.T) {
	ready := serveReady(t, "-m", decodetest.MiniModel(t, t.TempDir()), "-t", "2", "--device", "cpu")
	if d := ready.Device; d.Name != "CPU" || d.Backend != "CPU" || d.Kind != "cpu" || ready.Warning != "" {
		t.Errorf("readiness line %+v: want the CPU, no warning", ready)
	}
}

// serveReady runs serve with args in a process of its own, with nothing on
// stdin, and returns its readiness line.
func serveReady(t *testing.T, args ...string) devices.Ready {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a, _ := json.Marshal(append([]string{"--serve"}, args...))
	cmd := exec.CommandContext(testwait.Context(t), os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+string(a), "YAZ_READY_FD=3")
	cmd.ExtraFiles = []*os.File{w}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run() // stdin is empty: it serves, reads EOF and ends
	w.Close()
	if err != nil {
		t.Fatalf("yaz-decode --serve: %v\n%s", err, stderr.String())
	}
	line, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	var ready devices.Ready
	if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 || json.Unmarshal(line, &ready) != nil {
		t.Fatalf("readiness line %q: want one JSON object and a newline", line)
	}
	return ready
}
