package asr

import (
	"errors"
	"strings"
	"testing"
)

// TestSelectDevice: auto takes the best hardware GPU (discrete before
// integrated before virtual) and never a software device, else the CPU;
// gpu takes the best hardware GPU too, never a software device (slower
// than the CPU), and with none decodes on the CPU with a warning that says
// so; gpu:N takes device N when it is a GPU, a software one with a warning
// that it is slower than the CPU; a spec naming nothing is ErrNoDevice.
func TestSelectDevice(t *testing.T) {
	cpu := Device{Index: 9, Backend: "CPU", Name: "CPU", Kind: KindCPU}
	soft := Device{Index: 0, Backend: "Vulkan", Name: "Vulkan0", Description: "llvmpipe (LLVM 15.0.6, 256 bits)", Kind: KindSoftware, slot: 1}
	igpu := Device{Index: 1, Backend: "Vulkan", Name: "Vulkan1", Kind: KindIntegrated, slot: 2}
	dgpu := Device{Index: 2, Backend: "Vulkan", Name: "Vulkan2", Kind: KindDiscrete, slot: 3}
	blas := Device{Index: 3, Backend: "BLAS", Name: "BLAS", Kind: KindAccel}
	// One NVIDIA GPU as a Vulkan driver and CUDA both list it (CUDA's
	// module registers after the CPU).
	cuda := Device{Index: 10, Backend: "CUDA", Name: "CUDA0", Kind: KindDiscrete, slot: 4}
	cudaIGPU := Device{Index: 10, Backend: "CUDA", Name: "CUDA0", Kind: KindIntegrated, slot: 4}
	for _, tc := range []struct {
		name string
		list []Device
		spec string
		want string // Name; "" an ErrNoDevice
		warn string // in the warning; "": none
	}{
		{"auto: discrete over integrated and software", []Device{soft, igpu, dgpu, cpu}, "auto", "Vulkan2", ""},
		{"auto: integrated over software", []Device{soft, igpu, cpu}, "auto", "Vulkan1", ""},
		{"auto: never software", []Device{soft, blas, cpu}, "auto", "CPU", ""},
		{"empty is auto", []Device{soft, cpu}, "", "CPU", ""},
		{"auto: the CPU alone", []Device{cpu}, "auto", "CPU", ""},
		{"cpu over a GPU", []Device{dgpu, cpu}, "cpu", "CPU", ""},
		{"gpu: never software, the CPU instead", []Device{soft, cpu}, "gpu", "CPU", "no hardware GPU found: decoding on the CPU: Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits), software) is a software device, slower than the CPU (--device gpu:0 takes it"},
		{"gpu: discrete first", []Device{soft, igpu, dgpu, cpu}, "GPU", "Vulkan2", ""},
		{"gpu: none, the CPU instead", []Device{blas, cpu}, "gpu", "CPU", "--device gpu: no hardware GPU found: decoding on the CPU"},
		{"auto: CUDA before Vulkan for one kind", []Device{soft, dgpu, cpu, cuda}, "auto", "CUDA0", ""},
		{"gpu: CUDA before Vulkan for one kind", []Device{dgpu, cpu, cuda}, "gpu", "CUDA0", ""},
		{"auto: a discrete Vulkan GPU before an integrated CUDA one", []Device{dgpu, cpu, cudaIGPU}, "auto", "Vulkan2", ""},
		{"gpu:N", []Device{soft, igpu, dgpu, cpu}, "gpu:1", "Vulkan1", ""},
		{"gpu:N of a software device", []Device{soft, igpu, dgpu, cpu}, "gpu:0", "Vulkan0", "--device gpu:0: Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits), software) is a software device: it runs on the CPU and decodes slower than the CPU itself"},
		{"gpu:N past the end", []Device{soft, cpu}, "gpu:2", "", ""},
		{"gpu:N is the CPU", []Device{soft, cpu}, "gpu:1", "", ""},
	} {
		what, n, err := parseDevice(tc.spec)
		if err != nil {
			t.Fatalf("%s: parseDevice(%q) = %v", tc.name, tc.spec, err)
		}
		got, _, warn, err := selectFrom(tc.list, what, n, 0, false)
		switch {
		case tc.want == "" && !errors.Is(err, ErrNoDevice):
			t.Errorf("%s: selectFrom(%q) = %v, %v; want ErrNoDevice", tc.name, tc.spec, got, err)
		case tc.want != "" && (err != nil || got.Name != tc.want):
			t.Errorf("%s: selectFrom(%q) = %v, %v; want %s", tc.name, tc.spec, got.Name, err, tc.want)
		case tc.warn == "" && warn != "", tc.warn != "" && !strings.Contains(warn, tc.warn):
			t.Errorf("%s: selectFrom(%q) warns %q; want %q", tc.name, tc.spec, warn, tc.warn)
		}
	}
	// Without a GPU device node, Vulkan is kept out before the list is
	// made (SelectDeviceFor): the warning says why there is no GPU.
	if d, _, warn, err := selectFrom([]Device{cpu}, "gpu", -1, 0, true); err != nil || d.Name != "CPU" ||
		!strings.Contains(warn, "no hardware GPU found: decoding on the CPU: no GPU device node (/dev/dri/renderD*, /dev/nvidiactl)") {
		t.Errorf("gpu with no GPU device node: %s, %q, %v; want the CPU and a warning naming the device nodes", d.Name, warn, err)
	}
	for _, bad := range []string{"gpu:", "gpu:-1", "gpu:x", "cuda", "vulkan0", "gpu1"} {
		if err := ParseDevice(bad); err == nil {
			t.Errorf("ParseDevice(%q) = nil, want an error", bad)
		}
	}
}

// TestDevicesHaveCPU: every build lists the CPU, after the backends linked
// in and before CUDA's (its module registers last), and Load's zero Device
// is the CPU.
func TestDevicesHaveCPU(t *testing.T) {
	list := Devices()
	cpu := cpuDevice(list)
	last := len(list) - 1
	for last > 0 && list[last].Backend == "CUDA" {
		last--
	}
	if cpu.Index != last || cpu.Kind != KindCPU || cpu.GPU() {
		t.Fatalf("Devices() = %+v: want the CPU last but for CUDA's", list)
	}
	if (Device{}).GPU() {
		t.Error("the zero Device is a GPU")
	}
}

// TestSelectDeviceMemory: a model larger than a GPU's free memory is never
// put there: auto passes the GPU over (and says which) for the next one or
// the CPU; gpu and gpu:N refuse with both sizes.
func TestSelectDeviceMemory(t *testing.T) {
	const mib = 1 << 20
	cpu := Device{Index: 2, Backend: "CPU", Name: "CPU", Kind: KindCPU, MemoryFree: 64000 * mib}
	small := Device{Index: 0, Backend: "Vulkan", Name: "Vulkan0", Kind: KindDiscrete, MemoryFree: 500 * mib, slot: 1}
	igpu := Device{Index: 1, Backend: "Vulkan", Name: "Vulkan1", Kind: KindIntegrated, MemoryFree: 8000 * mib, slot: 2}
	list := []Device{small, igpu, cpu}

	d, skipped, _, err := selectFrom(list, "auto", -1, 1600*mib, false)
	if err != nil || d.Name != "Vulkan1" || len(skipped) != 0 {
		t.Errorf("auto, 1600 MiB: %s, skipped %v, %v; want Vulkan1 (the discrete one is too small)", d.Name, skipped, err)
	}
	d, skipped, _, err = selectFrom([]Device{small, cpu}, "auto", -1, 1600*mib, false)
	if err != nil || d.Name != "CPU" || len(skipped) != 1 || skipped[0].Name != "Vulkan0" {
		t.Errorf("auto, 1600 MiB, one small GPU: %s, skipped %v, %v; want the CPU, Vulkan0 passed over", d.Name, skipped, err)
	}
	if d, _, _, err := selectFrom(list, "auto", -1, 100*mib, false); err != nil || d.Name != "Vulkan0" {
		t.Errorf("auto, 100 MiB: %s, %v; want Vulkan0", d.Name, err)
	}
	want := "--device gpu:0: the model needs 1600 MiB and Vulkan0 has 500 MiB free"
	if _, _, _, err := selectFrom(list, "gpu", 0, 1600*mib, false); !errors.Is(err, ErrNoDevice) || err.Error() != want {
		t.Errorf("gpu:0, 1600 MiB: %v; want %q", err, want)
	}
	if d, _, _, err := selectFrom(list, "gpu", -1, 1600*mib, false); err != nil || d.Name != "Vulkan1" {
		t.Errorf("gpu, 1600 MiB: %s, %v; want Vulkan1, the one it fits", d.Name, err)
	}
	if _, _, _, err := selectFrom([]Device{small, cpu}, "gpu", -1, 1600*mib, false); !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "500 MiB free") {
		t.Errorf("gpu, 1600 MiB, one small GPU: %v; want a refusal naming its free memory", err)
	}
}
