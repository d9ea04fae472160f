package app

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/devices"
)

// TestConfigCheckDevice: config check asks the decoder (children.decode
// with --list-devices -f json) where decode.device = "gpu" or "gpu:N"
// would run the model: a device that exists is named on stdout, with the
// decoder's warning on a line of its own when it is not what the key
// meant (gpu on the CPU, gpu:N of a software device), none is the key's
// error with its line and exit 1; auto and cpu need no GPU and are not
// asked about. A decoder that cannot answer leaves the key
// unchecked, said on stdout.
func TestConfigCheckDevice(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", dir)
	model := filepath.Join(dir, "ggml-mini.bin")
	var b bytes.Buffer
	if err := testmodel.Write(&b, testmodel.Mini, 1); err != nil {
		t.Fatal(err)
	}
	writeFile(t, model, b.String())
	// The fake decoder prints $FAKE_LIST and exits $FAKE_CODE, and keeps
	// its arguments.
	fake := filepath.Join(dir, "fake-decode")
	args := filepath.Join(dir, "args")
	writeFile(t, fake, "#!/bin/sh\nprintf '%s\\n' \"$*\" > "+args+"\nprintf '%s\\n' \"$FAKE_LIST\"\nexit ${FAKE_CODE:-0}\n")
	if err := os.Chmod(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	const lavapipe = `{"index":0,"backend":"Vulkan","name":"Vulkan0","kind":"software","description":"llvmpipe (LLVM 15.0.6, 256 bits)","free_mib":1000,"total_mib":1000}`
	const cpu = `{"index":1,"backend":"CPU","name":"CPU","kind":"cpu","description":"AMD EPYC","free_mib":1000,"total_mib":1000}`
	for _, tc := range []struct {
		name, device, list, code string
		exit                     int
		out                      string // on stdout (exit 0) or stderr
		asked                    bool
	}{
		{"gpu:N of a software device", "gpu:0", `{"devices":[` + lavapipe + `,` + cpu + `],"auto":"CPU","device":"gpu:0","chosen":` + lavapipe +
			`,"warning":"--device gpu:0: Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits), software) is a software device: it runs on the CPU and decodes slower than the CPU itself (--device cpu or auto)"}`, "0", 0,
			`decode.device "gpu:0" → Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits), software)` + "\n" +
				dir + `/dev.toml: decode.device "gpu:0": warning: --device gpu:0: Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits), software) is a software device: it runs on the CPU and decodes slower than the CPU itself`, true},
		{"gpu:N found, CUDA not available", "gpu:0", `{"devices":[` + lavapipe + `,` + cpu + `],"auto":"CPU","device":"gpu:0","chosen":` + lavapipe +
			`,"notes":["CUDA: libcuda.so.1: cannot open shared object file: No such file or directory"]}`, "0", 0,
			`decode.device "gpu:0" → Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits), software)` + "\n" +
				dir + `/dev.toml: decode.device "gpu:0": not available: CUDA: libcuda.so.1: cannot open shared object file`, true},
		{"gpu without a hardware GPU", "gpu", `{"devices":[` + lavapipe + `,` + cpu + `],"auto":"CPU","device":"gpu","chosen":` + cpu +
			`,"warning":"--device gpu: no hardware GPU found: decoding on the CPU: no GPU device node (/dev/dri/renderD*, /dev/nvidiactl)"}`, "0", 0,
			`decode.device "gpu" → CPU` + "\n" +
				dir + `/dev.toml: decode.device "gpu": warning: --device gpu: no hardware GPU found: decoding on the CPU: no GPU device node`, true},
		{"gpu:N missing", "gpu:3", `{"devices":[` + cpu + `],"auto":"CPU","device":"gpu:3","error":"--device gpu:3: no device 3: ggml finds 1 (see --list-devices)"}`, "1", 1,
			`dev.toml:3: decode.device: "gpu:3": no device 3: ggml finds 1 (see yaz-decode --list-devices)`, true},
		{"decoder cannot answer", "gpu", `not json`, "2", 0, `decode.device "gpu" not checked: `, true},
		{"auto", "auto", "", "0", 0, "dev.toml: ok", false},
		{"cpu", "cpu", "", "0", 0, "dev.toml: ok", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(args)
			t.Setenv("FAKE_LIST", tc.list)
			t.Setenv("FAKE_CODE", tc.code)
			path := filepath.Join(dir, "dev.toml")
			writeFile(t, path, "[decode]\nmodel = "+strconv.Quote(model)+"\ndevice = "+strconv.Quote(tc.device)+
				"\n[children]\ndecode = ["+strconv.Quote(fake)+"]\n")
			out, stderr, code := run("config", "check", path)
			got := out
			if tc.exit != 0 {
				got = stderr
			}
			if code != tc.exit || !strings.Contains(got, tc.out) {
				t.Errorf("config check with decode.device %q: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.device, code, out, stderr, tc.exit, tc.out)
			}
			a, err := os.ReadFile(args)
			switch {
			case !tc.asked && err == nil:
				t.Errorf("decode.device %q: the decoder was asked (%q)", tc.device, a)
			case tc.asked && (err != nil || !strings.Contains(string(a), "--list-devices") || !strings.Contains(string(a), "--device="+tc.device) ||
				!strings.Contains(string(a), "--model "+model)):
				t.Errorf("decode.device %q: the decoder's arguments %q (%v), want --list-devices -f json --device=%s --model %s", tc.device, a, err, tc.device, model)
			}
		})
	}
}

// TestConfigCheckDeviceArgs: the device question goes to the yaz-decode
// of children.decode as its devices command, without the serve mode and
// its flags (which devices refuses), in either spelling and behind a
// wrapper; another decoder program gets all its words and the old
// --list-devices.
func TestConfigCheckDeviceArgs(t *testing.T) {
	ask := []string{"-f", "json", "--device=gpu", "--model", "m.bin"}
	for _, tc := range []struct{ argv, want []string }{
		{[]string{"/bin/yaz-decode", "--serve"}, append([]string{"/bin/yaz-decode", "devices"}, ask...)},
		{[]string{"/bin/yaz-decode", "serve", "--threads", "2", "--prompt", "Kubernetes"}, append([]string{"/bin/yaz-decode", "devices"}, ask...)},
		{[]string{"/bin/yaz-decode", "-t", "2", "--serve"}, append([]string{"/bin/yaz-decode", "devices"}, ask...)},
		{[]string{"/usr/bin/nice", "-n", "5", "yaz-decode", "--serve"}, append([]string{"/usr/bin/nice", "-n", "5", "yaz-decode", "devices"}, ask...)},
		{[]string{"/bin/fake-decode", "--x"}, append([]string{"/bin/fake-decode", "--x", "--list-devices"}, ask...)},
	} {
		if got := deviceArgs(tc.argv, "gpu", "m.bin"); !slices.Equal(got, tc.want) {
			t.Errorf("deviceArgs(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
}

// TestDeviceLine: status's device line names the setting and the device
// the decoder loaded on, the decoder's warning when the device is not what
// the setting meant (gpu with no hardware GPU: the CPU), and why a GPU
// backend installed is not available.
func TestDeviceLine(t *testing.T) {
	cpu := &devices.Info{Index: 1, Backend: "CPU", Name: "CPU", Kind: "cpu", Description: "AMD EPYC"}
	for _, tc := range []struct {
		d    daemonapi.DeviceStatus
		want string
	}{
		{daemonapi.DeviceStatus{Setting: "auto"}, "auto (not known until the decoder is ready)"},
		{daemonapi.DeviceStatus{Setting: "auto", Device: cpu}, "auto → CPU"},
		{daemonapi.DeviceStatus{Setting: "gpu", Device: cpu, Warning: "--device gpu: no hardware GPU found: decoding on the CPU: no GPU device node"},
			"gpu → CPU; warning: --device gpu: no hardware GPU found: decoding on the CPU: no GPU device node"},
		{daemonapi.DeviceStatus{Setting: "auto", Device: cpu, Notes: []string{"CUDA: libcuda.so.1: cannot open"}},
			"auto → CPU; not available: CUDA: libcuda.so.1: cannot open"},
	} {
		if got := deviceLine(tc.d); got != tc.want {
			t.Errorf("deviceLine(%+v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
