// Package devices is how yaz-decode names the compute devices ggml finds
// to the programs that start it. Two messages carry them, both JSON:
//
//   - Ready, the readiness line of yaz-decode serve (the text before the
//     newline it writes on $YAZ_READY_FD): the device its model loaded
//     on, which `yazsesd status` shows. The line is not part of the
//     --serve wire contract (frames in, one result per utterance out); a
//     decoder that writes a bare newline names no device.
//   - List, what `yaz-decode devices -f json` prints: every device,
//     the one --device auto takes and the one --device takes (or why
//     none), which `yazsesd config check` reads for decode.device.
package devices

import "fmt"

// Info is one device.
type Info struct {
	Index       int    `json:"index"`       // ggml's index: --device gpu:N takes a GPU's
	Backend     string `json:"backend"`     // ggml's backend: CPU, Vulkan, CUDA
	Name        string `json:"name"`        // ggml's name: CPU, Vulkan0, CUDA0
	Kind        string `json:"kind"`        // discrete, integrated, virtual, software, cpu or accelerator
	Description string `json:"description"` // the device's own name ("NVIDIA H200", "llvmpipe (LLVM 15.0.6, 256 bits)")
	FreeMiB     uint64 `json:"free_mib"`
	TotalMiB    uint64 `json:"total_mib"`
}

// String names the device for a person: "Vulkan0 (llvmpipe (LLVM 15.0.6,
// 256 bits), software)", "CPU".
func (i Info) String() string {
	if i.Description == "" || i.Kind == "cpu" {
		return i.Name
	}
	return fmt.Sprintf("%s (%s, %s)", i.Name, i.Description, i.Kind)
}

// Ready is the readiness line of yaz-decode serve.
type Ready struct {
	Device Info `json:"device"` // where the model loaded
	// Notes: a GPU backend installed but not available, one line each (as
	// in List).
	Notes []string `json:"notes,omitempty"`
	// Warning, when not empty, says that the device is not what its
	// setting meant, in one line: gpu found no hardware GPU and decodes on
	// the CPU, or gpu:N named a software device (slower than the CPU).
	Warning string `json:"warning,omitempty"`
}

// List is yaz-decode devices -f json.
type List struct {
	Devices []Info `json:"devices"`
	Auto    string `json:"auto"`             // the name of the device --device auto takes
	Device  string `json:"device"`           // --device as given: auto, cpu, gpu or gpu:N
	Chosen  *Info  `json:"chosen,omitempty"` // the device --device takes; nil when none
	Error   string `json:"error,omitempty"`  // why --device takes none
	// Warning: the device --device takes is not what it meant (as in
	// Ready).
	Warning string `json:"warning,omitempty"`
	// Notes: a GPU backend installed but not available, one line each
	// ("CUDA: libcuda.so.1: cannot open shared object file ...").
	Notes []string `json:"notes,omitempty"`
}
