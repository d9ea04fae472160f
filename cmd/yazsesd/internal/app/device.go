package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/devices"
)

// deviceLine is the decoder's device in yazsesd status: decode.device and
// the device the running decoder loaded the model on ("auto → CPU",
// "gpu → Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits), software)"), and why a
// GPU backend installed is not available ("auto → CPU; not available:
// CUDA: libcuda.so.1: ..."), and a device that is not what the setting
// meant ("gpu → CPU; warning: --device gpu: no hardware GPU found: decoding
// on the CPU: ...").
func deviceLine(d daemonapi.DeviceStatus) string {
	if d.Device == nil {
		return d.Setting + " (not known until the decoder is ready)"
	}
	line := d.Setting + " → " + d.Device.String()
	if d.Warning != "" {
		line += "; warning: " + d.Warning
	}
	for _, n := range d.Notes {
		line += "; not available: " + n
	}
	return line
}

// deviceCheckTime bounds the decoder's answer to config check: it starts
// the GPU drivers to list their devices (a fraction of a second; seconds
// for a large GPU's first start).
const deviceCheckTime = 30 * time.Second

// deviceArgs is the decoder's command line for the device question:
// children.decode up to the yaz-decode in it, then "devices -f json
// --device=SPEC --model MODEL", without the words after the program (the
// serve command and its flags, which devices does not take); a decoder
// that is another program gets all its words and the old spelling
// "--list-devices -f json …", which yaz-decode takes too.
func deviceArgs(argv []string, spec, model string) []string {
	ask := []string{"-f", "json", "--device=" + spec, "--model", model}
	for i, a := range argv {
		if filepath.Base(a) == "yaz-decode" {
			return append(append(slices.Clone(argv[:i+1]), "devices"), ask...)
		}
	}
	return append(append(slices.Clone(argv), "--list-devices"), ask...)
}

// checkDevice asks the decoder (children.decode: yaz-decode devices -f json)
// where decode.device = "gpu" or "gpu:N" would run the model: the device
// is named on out (with a warning line when it is not what the key meant,
// and a line for each GPU backend installed that cannot run), and none is
// the key's error. auto and cpu always have
// a device (the CPU at worst) and are not asked about. A decoder that
// cannot be run or answers no list leaves the key unchecked, said on out:
// the daemon would fail at start, where the decoder's own line says why.
func checkDevice(ctx context.Context, cfg config.Config, data []byte, file string, out io.Writer) error {
	spec := cfg.Decode.Device
	if spec == "auto" || spec == "cpu" {
		return nil
	}
	unchecked := func(why string) error {
		fmt.Fprintf(out, "%s: decode.device %q not checked: %s\n", file, spec, why)
		return nil
	}
	argv, err := config.ResolveCommand(cfg.Children.Decode, config.SelfDir())
	if err != nil {
		return unchecked("children.decode: " + err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, deviceCheckTime)
	defer cancel()
	argv = deviceArgs(argv, spec, cfg.Decode.Model)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run() // exit 1 with the error in the list: no such device
	var list devices.List
	if err := json.Unmarshal(stdout.Bytes(), &list); err != nil || list.Device != spec || (list.Chosen == nil) == (list.Error == "") {
		why := "no device list from " + argv[0]
		if runErr != nil {
			why += " (" + runErr.Error() + ")"
		}
		if line, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n"); line != "" {
			why += ": " + line
		}
		return unchecked(why)
	}
	if list.Chosen == nil {
		msg := strings.TrimPrefix(list.Error, "--device "+spec+": ")
		msg = strings.ReplaceAll(msg, "(see --list-devices)", "(see yaz-decode --list-devices)")
		return config.KeyError(data, file, "decode.device", fmt.Sprintf("%q: %s", spec, msg))
	}
	fmt.Fprintf(out, "%s: decode.device %q → %s\n", file, spec, list.Chosen)
	// gpu with no hardware GPU (the CPU), gpu:N of a software device
	// (slower than the CPU): valid, and said.
	if list.Warning != "" {
		fmt.Fprintf(out, "%s: decode.device %q: warning: %s\n", file, spec, list.Warning)
	}
	// A backend installed that cannot run (the CUDA module without the
	// NVIDIA driver): the device above may not be the one meant.
	for _, n := range list.Notes {
		fmt.Fprintf(out, "%s: decode.device %q: not available: %s\n", file, spec, n)
	}
	return nil
}
