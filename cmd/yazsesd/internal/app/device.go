package app

import (
	"github.com/yazses/yazses/lib/daemonapi"
)

// deviceLine is the decoder's device in yazsesd status: decode.device and
// the device the running decoder loaded the model on ("auto → CPU",
// "gpu → Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits), software)").
func deviceLine(d daemonapi.DeviceStatus) string {
	if d.Device == nil {
		return d.Setting + " (not known until the decoder is ready)"
	}
	return d.Setting + " → " + d.Device.String()
}
