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
)

// TestConfigCheckDevice: config check asks the decoder (children.decode
// with --list-devices -f json) where decode.device = "gpu" or "gpu:N"
// would run the model: a device that exists is named on stdout, none is
// the key's error with its line and exit 1; auto and cpu need no GPU and
// are not asked about. A decoder that cannot answer leaves the key
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
		{"gpu found", "gpu", `{"devices":[` + lavapipe + `,` + cpu + `],"auto":"CPU","device":"gpu","chosen":` + lavapipe + `}`, "0", 0,
			`decode.device "gpu" → Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits), software)`, true},
		{"gpu found, CUDA not available", "gpu", `{"devices":[` + lavapipe + `,` + cpu + `],"auto":"CPU","device":"gpu","chosen":` + lavapipe +
			`,"notes":["CUDA: libcuda.so.1: cannot open shared object file: No such file or directory"]}`, "0", 0,
			`decode.device "gpu" → Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits), software)` + "\n" +
				dir + `/dev.toml: decode.device "gpu": not available: CUDA: libcuda.so.1: cannot open shared object file`, true},
		{"gpu missing", "gpu", `{"devices":[` + cpu + `],"auto":"CPU","device":"gpu","error":"--device gpu: no GPU found: no Vulkan loader, driver or device"}`, "1", 1,
			`dev.toml:3: decode.device: "gpu": no GPU found: no Vulkan loader, driver or device`, true},
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
