package decode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/asr"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/startup"
	"github.com/yazses/yazses/lib/devices"
)

// listDevices prints every device ggml finds, one a line under a header:
// the index --device gpu:N takes, the backend, ggml's name, the kind
// (discrete, integrated, virtual, software, cpu), the memory free and in
// all, and the device's own name. The line "auto:" says which one
// --device auto takes, and a --device other than auto has a line of its
// own ("gpu: Vulkan0"), for the model --model names when its file is
// there (a GPU it does not fit is passed over, as a decode would). A
// --device that finds none is the error (exit 1) once the list is out.
// A device that is not what --device meant (gpu with no hardware GPU, on
// the CPU; gpu:N of a software device) has a line "warning: why". A
// backend that is installed but cannot run (the CUDA module without the
// NVIDIA driver) has a line "not available: CUDA: why".
// With -f json it is one object instead (devices.List), the error in it
// too.
func listDevices(log *slog.Logger, w io.Writer, model, device string, asJSON bool) error {
	asr.SetLogger(log) // ggml's lines about the devices: debug records
	list := asr.Devices()
	auto, err := asr.SelectDevice("auto")
	if err != nil {
		return err
	}
	var need uint64
	if st, err := os.Stat(model); err == nil && st.Mode().IsRegular() {
		need = uint64(st.Size())
	}
	chosen, _, warn, cerr := asr.SelectDeviceFor(device, need)
	out := devices.List{Auto: auto.Name, Device: device, Devices: []devices.Info{}, Notes: asr.Notes(), Warning: warn}
	for _, d := range list {
		out.Devices = append(out.Devices, info(d))
	}
	if cerr == nil {
		i := info(chosen)
		out.Chosen = &i
	} else {
		out.Error = cerr.Error()
	}
	if asJSON {
		if err := json.NewEncoder(w).Encode(out); err != nil {
			return err
		}
		return deviceError(cerr)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INDEX\tBACKEND\tNAME\tKIND\tFREE MiB\tTOTAL MiB\tDESCRIPTION")
	for _, d := range out.Devices {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%s\n", d.Index, d.Backend, d.Name, d.Kind, d.FreeMiB, d.TotalMiB, d.Description)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "auto: %s\n", auto.Name); err != nil {
		return err
	}
	if device != "auto" && cerr == nil {
		if _, err := fmt.Fprintf(w, "%s: %s\n", device, chosen.Name); err != nil {
			return err
		}
	}
	if warn != "" {
		if _, err := fmt.Fprintf(w, "warning: %s\n", warn); err != nil {
			return err
		}
	}
	for _, n := range out.Notes {
		if _, err := fmt.Fprintf(w, "not available: %s\n", n); err != nil {
			return err
		}
	}
	return deviceError(cerr)
}

// deviceError is a --device that finds no device as yaz-decode reports
// it: contract 2's device_missing under a supervisor.
func deviceError(err error) error {
	if errors.Is(err, asr.ErrNoDevice) {
		return &startup.Error{Cause: startup.DeviceMissing, Msg: err.Error(), Err: err}
	}
	return err
}

// info is d as package devices names it.
func info(d asr.Device) devices.Info {
	i := devices.Info{Index: d.Index, Backend: d.Backend, Name: d.Name, Kind: string(d.Kind),
		Description: d.Description, FreeMiB: d.MemoryFree >> 20, TotalMiB: d.MemoryTotal >> 20}
	if i.Name == "" { // the zero Device
		i.Backend, i.Name, i.Kind = "CPU", "CPU", string(asr.KindCPU)
	}
	return i
}

// device chooses the device --device names and says which on one line: an
// INFO record for a GPU, a DEBUG one for the CPU (a decode on the CPU says
// on stderr what it said before there were devices to choose from).
// A model larger than a GPU's free memory is not put there: auto says so
// on a WARN line and takes the next device (or the CPU), gpu and gpu:N
// refuse it. gpu with no hardware GPU decodes on the CPU, and gpu:N of a
// software device there, each with a WARN line that says so (and the
// readiness line of serve carries it: yazsesd status shows it).
func (c *settings) device(log *slog.Logger) (asr.Device, error) {
	var need uint64
	if st, err := os.Stat(c.Model); err == nil {
		need = uint64(st.Size())
	}
	d, skipped, warn, err := asr.SelectDeviceFor(c.Device, need)
	if err != nil {
		return d, deviceError(err)
	}
	if warn != "" {
		log.Warn(warn, "device", d.Name, "kind", string(d.Kind))
		c.devWarning = warn
	}
	for _, s := range skipped {
		log.Warn(fmt.Sprintf("the model needs %d MiB and %s has %d MiB free: not decoding there", need>>20, s.Name, s.MemoryFree>>20),
			"device", s.Name, "need_mib", need>>20, "free_mib", s.MemoryFree>>20)
	}
	level := slog.LevelDebug
	if d.GPU() {
		level = slog.LevelInfo
	}
	log.Log(context.Background(), level, "decoding on "+d.Name, "device", d.Name, "backend", d.Backend, "kind", string(d.Kind), "description", d.Description)
	return d, nil
}
