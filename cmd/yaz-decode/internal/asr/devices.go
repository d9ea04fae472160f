package asr

/*
#include <ggml-backend.h>
#include "yaz.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Kind is what sort of device a Device is.
type Kind string

// The kinds of device. A software device is a Vulkan driver that runs on
// the CPU (Mesa's lavapipe, llvmpipe): slower than ggml's own CPU backend,
// never taken by "auto" or "gpu", only when named by its index (gpu:N).
const (
	KindDiscrete   Kind = "discrete"
	KindIntegrated Kind = "integrated"
	KindVirtual    Kind = "virtual"
	KindSoftware   Kind = "software"
	KindCPU        Kind = "cpu"
	KindAccel      Kind = "accelerator" // ggml's ACCEL devices (BLAS): they help the CPU, never chosen alone
)

// Device is one compute device ggml finds. The zero Device is the CPU.
type Device struct {
	Index       int    // ggml's device index: --list-devices and gpu:N
	Backend     string // ggml's backend: CPU, Vulkan, CUDA
	Name        string // ggml's name: CPU, Vulkan0, CUDA0
	Description string // the device's own name
	Kind        Kind
	MemoryFree  uint64 // bytes
	MemoryTotal uint64 // bytes
	// slot is whisper.cpp's gpu_device for this device plus one (its place
	// among ggml's GPU devices, which is how whisper.h and parakeet.h name
	// one); 0: the CPU.
	slot int
}

// GPU reports whether the device is a graphics device (software ones too):
// the models' weights and compute go there, the CPU helps with what it
// cannot do.
func (d Device) GPU() bool { return d.slot > 0 }

// String names the device for a log line: "Vulkan0 (llvmpipe ..., software)".
func (d Device) String() string {
	if d.Name == "" {
		return "CPU"
	}
	if d.Description == "" {
		return d.Name
	}
	return fmt.Sprintf("%s (%s, %s)", d.Name, d.Description, d.Kind)
}

// ErrNoDevice reports a --device that names no device ggml finds.
var ErrNoDevice = errors.New("no such device")

// noDevice is an ErrNoDevice with its own message.
type noDevice string

func (e noDevice) Error() string        { return string(e) }
func (e noDevice) Is(target error) bool { return target == ErrNoDevice }

var (
	devicesOnce sync.Once
	devices     []Device
	cudaNote    string // why the CUDA module is not there ("": it is, or none is installed)
	cpuOnly     sync.Once
)

// Devices lists every device ggml finds, in ggml's order (the backends
// linked in, the CPU, then CUDA's, from its module). The list is made once
// per process, after the CUDA module is opened.
// ggml's lines about them go where SetLogger (or Load) sent its log.
func Devices() []Device {
	logInstall.Do(func() { C.yaz_log_install() })
	devicesOnce.Do(func() {
		cudaNote = loadCUDA()
		devices = listDevices()
	})
	return slices.Clone(devices)
}

// Notes says, one line a backend, why a GPU backend this program could use
// is not there: "CUDA: libcuda.so.1: cannot open shared object file ..."
// when the CUDA module is installed but the NVIDIA driver is not. Empty
// when nothing is missing (or Devices has not run).
func Notes() []string {
	if cudaNote == "" {
		return nil
	}
	return []string{"CUDA: " + cudaNote}
}

func listDevices() []Device {
	var out []Device
	gpus, vk := 0, 0
	for i := range int(C.ggml_backend_dev_count()) {
		dev := C.ggml_backend_dev_get(C.size_t(i))
		d := Device{
			Index:       i,
			Name:        C.GoString(C.ggml_backend_dev_name(dev)),
			Description: strings.TrimSpace(C.GoString(C.ggml_backend_dev_description(dev))),
		}
		if reg := C.ggml_backend_dev_backend_reg(dev); reg != nil {
			d.Backend = C.GoString(C.ggml_backend_reg_name(reg))
		}
		var free, total C.size_t
		C.ggml_backend_dev_memory(dev, &free, &total)
		d.MemoryFree, d.MemoryTotal = uint64(free), uint64(total)
		switch C.ggml_backend_dev_type(dev) {
		case C.GGML_BACKEND_DEVICE_TYPE_CPU:
			d.Kind = KindCPU
		case C.GGML_BACKEND_DEVICE_TYPE_GPU, C.GGML_BACKEND_DEVICE_TYPE_IGPU:
			// whisper.cpp counts these two types, in this order, for gpu_device.
			gpus++
			d.slot = gpus
			d.Kind = KindDiscrete
			if C.ggml_backend_dev_type(dev) == C.GGML_BACKEND_DEVICE_TYPE_IGPU {
				d.Kind = KindIntegrated
			}
			if d.Backend == "Vulkan" {
				// ggml calls every Vulkan device a GPU or an iGPU; the
				// driver's own type tells the software ones.
				d.Kind = vulkanKind(vulkanType(vk), d.Kind)
				vk++
			}
		default:
			d.Kind = KindAccel
		}
		out = append(out, d)
	}
	return out
}

// vulkanKind maps a VkPhysicalDeviceType to a Kind; def when unknown.
func vulkanKind(t int, def Kind) Kind {
	switch t {
	case 1: // VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU
		return KindIntegrated
	case 2: // VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU
		return KindDiscrete
	case 3: // VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU
		return KindVirtual
	case 4: // VK_PHYSICAL_DEVICE_TYPE_CPU
		return KindSoftware
	}
	return def
}

// rank orders the kinds "auto" and "gpu" choose from (lower is better);
// -1: never chosen, a software device included (it is slower than the
// CPU: only gpu:N takes one). Among devices of one rank CUDA's come first
// (better): an NVIDIA GPU that both CUDA and a Vulkan driver list runs
// whisper.cpp faster through CUDA, and its module is there because
// someone built it.
func rank(k Kind) int {
	switch k {
	case KindDiscrete:
		return 0
	case KindIntegrated:
		return 1
	case KindVirtual:
		return 2
	}
	return -1
}

// best is the best hardware GPU of list: discrete before integrated before
// virtual, ggml's order among equals, never a software device; false:
// none.
func best(list []Device) (Device, bool) {
	var got Device
	found := false
	for _, d := range list {
		r := rank(d.Kind)
		if r < 0 {
			continue
		}
		if g := rank(got.Kind); !found || r < g || r == g && d.Backend == "CUDA" && got.Backend != "CUDA" {
			got, found = d, true
		}
	}
	return got, found
}

// cpuDevice is the CPU entry of list (the zero Device when ggml lists none).
func cpuDevice(list []Device) Device {
	for _, d := range list {
		if d.Kind == KindCPU {
			return d
		}
	}
	return Device{Backend: "CPU", Name: "CPU", Kind: KindCPU}
}

// NoGPU keeps the GPU backends out of the process when no ggml device has
// been looked for yet (Devices, a model load, Silero): ggml then knows the
// CPU alone. A Vulkan driver started for nothing costs tens of MiB (60 for
// lavapipe here) and a start-up in every process; --device cpu and the
// Silero-only --vad-stream call it.
func NoGPU() {
	cpuOnly.Do(func() {
		disableVulkan()
		disableCUDA()
	})
}

// ParseDevice checks a --device value without looking for devices: auto,
// cpu, gpu or gpu:N.
func ParseDevice(spec string) error {
	_, _, err := parseDevice(spec)
	return err
}

// parseDevice splits a --device value: what is auto, cpu or gpu, n the
// index of gpu:N (-1: none given).
func parseDevice(spec string) (what string, n int, err error) {
	s := strings.ToLower(strings.TrimSpace(spec))
	switch s {
	case "", "auto":
		return "auto", -1, nil
	case "cpu", "gpu":
		return s, -1, nil
	}
	if rest, ok := strings.CutPrefix(s, "gpu:"); ok {
		if n, err := strconv.Atoi(rest); err == nil && n >= 0 {
			return "gpu", n, nil
		}
	}
	return "", -1, fmt.Errorf("device %q: want auto, cpu, gpu or gpu:N (N: an index from yaz-decode devices)", spec)
}

// SelectDevice chooses the device spec names: "auto" (or "") the best
// hardware GPU, discrete before integrated, never a software device, else
// the CPU; "cpu" the CPU; "gpu" the best hardware GPU, else the CPU with a
// warning (see SelectDeviceFor); "gpu:N" ggml's device N, which must be a
// GPU, a software one included (with a warning). A spec naming no device
// is an error wrapping ErrNoDevice.
func SelectDevice(spec string) (Device, error) {
	d, _, _, err := SelectDeviceFor(spec, 0)
	return d, err
}

// SelectDeviceFor is SelectDevice for a model that needs need bytes on the
// device (its file size; 0: not checked). A GPU whose free memory is less
// is passed over by auto, which returns it in skipped (for a line saying
// so) and takes the next or the CPU; gpu and gpu:N refuse it with an
// ErrNoDevice that names both sizes.
//
// warn, when not empty, is one line for the person who chose the device:
// gpu found no hardware GPU and decodes on the CPU (a software Vulkan
// device such as Mesa's lavapipe runs on the CPU, many times slower than
// ggml's CPU backend), or gpu:N names a software device, which is taken as
// asked, and is slower than the CPU.
func SelectDeviceFor(spec string, need uint64) (d Device, skipped []Device, warn string, err error) {
	what, n, err := parseDevice(spec)
	if err != nil {
		return Device{}, nil, "", err
	}
	noNode := false
	switch {
	case what == "cpu":
		NoGPU()
	case n < 0 && !gpuNode():
		// auto and gpu never take a software device, the only kind a
		// Vulkan driver finds without a GPU node.
		noNode = true
		disableVulkan()
	}
	return selectFrom(Devices(), what, n, need, noNode)
}

// gpuNodes are the device nodes a hardware Vulkan driver opens: a DRM
// render node (Mesa's radv, anv, nvk, v3dv, panvk, turnip; NVIDIA's with
// nvidia-drm) or NVIDIA's control device. A test points it elsewhere.
var gpuNodes = []string{"/dev/dri/renderD*", "/dev/nvidiactl"}

// gpuNode reports whether this machine has one of gpuNodes. Without one,
// every Vulkan device ggml could list is a software one (lavapipe), which
// auto and gpu never take: they then keep Vulkan out of the process before
// ggml lists its devices, which saves the driver's start and its memory
// (60 MiB for lavapipe, for the life of a resident decoder).
// --list-devices and gpu:N still look.
func gpuNode() bool {
	for _, g := range gpuNodes {
		if m, _ := filepath.Glob(g); len(m) > 0 {
			return true
		}
	}
	return false
}

// fits reports whether need bytes fit d's free memory (a device that
// reports none is taken at its word).
func fits(d Device, need uint64) bool { return need == 0 || d.MemoryFree == 0 || need <= d.MemoryFree }

func tooSmall(spec string, d Device, need uint64) error {
	return noDevice(fmt.Sprintf("--device %s: the model needs %d MiB and %s has %d MiB free", spec, need>>20, d.Name, d.MemoryFree>>20))
}

// selectFrom chooses from list (see SelectDeviceFor). noNode: the machine
// has none of gpuNodes, so Vulkan was kept out before the list was made.
func selectFrom(list []Device, what string, n int, need uint64, noNode bool) (Device, []Device, string, error) {
	var skipped, fitting []Device
	for _, d := range list {
		if d.GPU() && !fits(d, need) {
			skipped = append(skipped, d)
			continue
		}
		fitting = append(fitting, d)
	}
	switch {
	case what == "cpu":
		return cpuDevice(list), nil, "", nil
	case what == "auto":
		if d, ok := best(fitting); ok {
			return d, nil, "", nil
		}
		var passed []Device
		for _, d := range skipped {
			if rank(d.Kind) >= 0 {
				passed = append(passed, d)
			}
		}
		return cpuDevice(list), passed, "", nil
	case n >= 0:
		if n >= len(list) {
			return Device{}, nil, "", noDevice(fmt.Sprintf("--device gpu:%d: no device %d: ggml finds %d (see yaz-decode devices)", n, n, len(list)))
		}
		d := list[n]
		if !d.GPU() {
			return Device{}, nil, "", noDevice(fmt.Sprintf("--device gpu:%d: device %d is the %s, not a GPU (see yaz-decode devices)", n, n, d.Name))
		}
		if !fits(d, need) {
			return Device{}, nil, "", tooSmall(fmt.Sprintf("gpu:%d", n), d, need)
		}
		if d.Kind == KindSoftware {
			return d, nil, fmt.Sprintf("--device gpu:%d: %s is a software device: it runs on the CPU and decodes slower than the CPU itself (--device cpu or auto)", n, d), nil
		}
		return d, nil, "", nil
	}
	if d, ok := best(fitting); ok {
		return d, nil, "", nil
	}
	if d, ok := best(skipped); ok {
		return Device{}, nil, "", tooSmall("gpu", d, need)
	}
	// No hardware GPU: dictation still works, on the CPU, and the person
	// who asked for a GPU is told.
	return cpuDevice(list), nil, "--device gpu: no hardware GPU found: decoding on the CPU: " + strings.Join(noGPUWhy(list, noNode), "; "), nil
}

// noGPUWhy says why gpu found no hardware GPU in list, one reason each.
func noGPUWhy(list []Device, noNode bool) []string {
	var why []string
	if noNode {
		why = append(why, "no GPU device node ("+strings.Join(gpuNodes, ", ")+")")
	}
	for _, d := range list {
		if d.Kind == KindSoftware {
			why = append(why, fmt.Sprintf("%s is a software device, slower than the CPU (--device gpu:%d takes it all the same)", d, d.Index))
		}
	}
	if len(why) == 0 && vulkanBuilt {
		why = append(why, "no Vulkan loader, driver or device (vulkaninfo --summary lists what Vulkan sees)")
	}
	if cudaNote != "" {
		why = append(why, "CUDA: "+cudaNote)
	}
	if len(why) == 0 {
		why = append(why, "this build has no GPU backend (make setup builds Vulkan where glslc, libvulkan-dev and spirv-headers are installed: scripts/install-deps.sh; CUDA where nvcc is found and nvidia-smi lists a GPU)")
	}
	return why
}
