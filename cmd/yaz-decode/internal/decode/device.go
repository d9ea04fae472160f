package decode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/asr"
)

// causeDeviceMissing: --device gpu or gpu:N and no such device (contract 2:
// a restart cannot make one appear).
const causeDeviceMissing = "device_missing"

// listDevices prints every device ggml finds, one a line under a header:
// the index --device gpu:N takes, the backend, ggml's name, the kind
// (discrete, integrated, virtual, software, cpu), the memory free and in
// all, and the device's own name. The line "auto:" says which one
// --device auto takes.
func listDevices(log *slog.Logger, w io.Writer) error {
	asr.SetLogger(log) // ggml's lines about the devices: debug records
	list := asr.Devices()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INDEX\tBACKEND\tNAME\tKIND\tFREE MiB\tTOTAL MiB\tDESCRIPTION")
	for _, d := range list {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%s\n", d.Index, d.Backend, d.Name, d.Kind, d.MemoryFree>>20, d.MemoryTotal>>20, d.Description)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	auto, err := asr.SelectDevice("auto")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "auto: %s\n", auto.Name)
	return err
}

// device chooses the device --device names and says which on one line: an
// INFO record for a GPU, a DEBUG one for the CPU (a decode on the CPU says
// on stderr what it said before there were devices to choose from).
// A model larger than a GPU's free memory is not put there: auto says so
// on a WARN line and takes the next device (or the CPU), gpu and gpu:N
// refuse it.
func (c *CLI) device(log *slog.Logger) (asr.Device, error) {
	var need uint64
	if st, err := os.Stat(c.Model); err == nil {
		need = uint64(st.Size())
	}
	d, skipped, err := asr.SelectDeviceFor(c.Device, need)
	if errors.Is(err, asr.ErrNoDevice) {
		return d, &startupError{cause: causeDeviceMissing, msg: err.Error(), err: err}
	}
	if err != nil {
		return d, err
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
