package child

import (
	"encoding/json"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/lib/devices"
)

// Device is the device the running decoder loaded its model on, as it
// said on its readiness line (package devices); nil while no decoder is
// ready, and for one that names none (a bare newline: an older yaz-decode,
// a test's fake).
func (d *Decoder) Device() *devices.Info {
	r := readyDevice(d.Status())
	if r == nil {
		return nil
	}
	return &r.Device
}

// DeviceNotes says why a GPU backend the running decoder could use is not
// available ("CUDA: libcuda.so.1: cannot open shared object file ..."), as
// it said on its readiness line; nil when none is missing, or no decoder
// is ready.
func (d *Decoder) DeviceNotes() []string {
	if r := readyDevice(d.Status()); r != nil {
		return r.Notes
	}
	return nil
}

// DeviceWarning says, in one line, that the running decoder's device is
// not what decode.device meant ("gpu" with no hardware GPU: the CPU;
// "gpu:N" of a software device, slower than the CPU), as it said on its
// readiness line; "" when it is, or no decoder is ready.
func (d *Decoder) DeviceWarning() string {
	if r := readyDevice(d.Status()); r != nil {
		return r.Warning
	}
	return ""
}

func readyDevice(st supervise.Status) *devices.Ready {
	if st.State != supervise.StateRunning || st.Ready == "" {
		return nil
	}
	var r devices.Ready
	if json.Unmarshal([]byte(st.Ready), &r) != nil || r.Device.Name == "" {
		return nil
	}
	return &r
}
