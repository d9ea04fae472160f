//go:build yaz_vulkan

package asr

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/internal/testwait"
)

// The Vulkan tests run on Mesa's lavapipe (mesa-vulkan-drivers, which
// scripts/install-deps.sh installs with the Vulkan build's tools): a
// conformant Vulkan driver on the CPU, so the real Vulkan code path runs
// here, slowly. A build with the Vulkan backend and no lavapipe fails them.

// lavapipe is the software Vulkan device ggml lists.
func lavapipe(t *testing.T) Device {
	t.Helper()
	for _, d := range Devices() {
		if d.Backend == "Vulkan" && strings.Contains(d.Description, "llvmpipe") {
			return d
		}
	}
	t.Fatalf("no lavapipe device in %+v: is mesa-vulkan-drivers installed (scripts/install-deps.sh)?", Devices())
	return Device{}
}

// TestVulkanDevices: lavapipe is listed as a software device; auto and gpu
// keep the CPU over it (gpu with a warning), gpu:N takes it, with a
// warning that it is slower than the CPU.
func TestVulkanDevices(t *testing.T) {
	lp := lavapipe(t)
	if lp.Kind != KindSoftware || !lp.GPU() || lp.MemoryTotal == 0 {
		t.Errorf("lavapipe = %+v: want a software GPU device with its memory", lp)
	}
	if d, err := SelectDevice("auto"); err != nil || d.Kind != KindCPU {
		t.Errorf("SelectDevice(auto) = %+v, %v: want the CPU, never the software device", d, err)
	}
	if d, _, warn, err := SelectDeviceFor("gpu", 0); err != nil || d.Kind != KindCPU || !strings.Contains(warn, "no hardware GPU found: decoding on the CPU") {
		t.Errorf("SelectDevice(gpu) = %+v, %q, %v: want the CPU, never the software device, and a warning", d, warn, err)
	}
	if d, _, warn, err := SelectDeviceFor("gpu:"+itoa(lp.Index), 0); err != nil || d.Name != lp.Name || !strings.Contains(warn, "slower than the CPU") {
		t.Errorf("SelectDevice(gpu:%d) = %+v, %q, %v: want %s and a warning that it is slower than the CPU", lp.Index, d, warn, err, lp.Name)
	}
	cpu := cpuDevice(Devices())
	if _, err := SelectDevice("gpu:" + itoa(cpu.Index)); !errors.Is(err, ErrNoDevice) {
		t.Errorf("SelectDevice(gpu:%d), the CPU, = %v: want ErrNoDevice", cpu.Index, err)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestVulkanDecode: both engines decode on the Vulkan device, the same
// audio twice giving the same segments, and the model says where it runs.
func TestVulkanDecode(t *testing.T) {
	lp := lavapipe(t)
	for _, tc := range []struct {
		name  string
		path  string
		audio []float32
	}{
		{"whisper", writeModel(t, testmodel.Mini), speechLike(6)},
		{"parakeet", parakeetFile(t, 0), speechLike(6)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := LoadOn(tc.path, lp, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if m.Device().Name != lp.Name {
				t.Errorf("Device() = %v, want %v", m.Device(), lp)
			}
			opt := Options{Threads: 2, NoSpeechThreshold: 1}
			first, err := m.Transcribe(context.Background(), tc.audio, opt)
			if err != nil {
				t.Fatal(err)
			}
			if len(first.Segments) == 0 || first.Text() == "" {
				t.Fatalf("no text on %s: the comparison proves nothing", lp.Name)
			}
			again, err := m.Transcribe(context.Background(), tc.audio, opt)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(first.Segments, again.Segments); diff != "" {
				t.Errorf("the same audio decoded twice on %s differs (-first +second):\n%s", lp.Name, diff)
			}
		})
	}
}

// TestVulkanAbortOnDevice: the abort flag is read inside graphs that run
// on the device (the eval hook of yaz.c), and once it is set no further
// graph begins: the decode stops within the graph it was in.
func TestVulkanAbortOnDevice(t *testing.T) {
	m, err := LoadOn(writeModel(t, testmodel.Mini), lavapipe(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	audio := speechLike(3)
	// The mini model's graphs are short: a check every 4 nodes on the
	// device (64 outside tests) makes several in each.
	opt := Options{Threads: 2, NoSpeechThreshold: 1, deviceNodes: 4}
	full, err := m.run(context.Background(), audio, opt, "en", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a whole decode: %d graphs, %d checks on the device", full.graphs, full.deviceChecks)
	if full.deviceChecks <= full.graphs {
		t.Fatalf("%d checks on the device for %d graphs: the flag is not read inside the device's graphs", full.deviceChecks, full.graphs)
	}
	opt.abortAfter = 3
	cut, err := m.run(context.Background(), audio, opt, "en", 0)
	if !errors.Is(err, errTestAbort) {
		t.Fatalf("run with the flag set at the 3rd device check = %v, want the abort", err)
	}
	t.Logf("aborted: %d graphs begun, %d when the flag was seen, %d checks on the device", cut.graphs, cut.graphsAtAbort, cut.deviceChecks)
	if cut.graphs != cut.graphsAtAbort || cut.graphs >= full.graphs {
		t.Errorf("after the abort %d graphs had begun, %d when it was seen, of %d in a whole decode: want none begun after it", cut.graphs, cut.graphsAtAbort, full.graphs)
	}
}

// TestVulkanCancel: a context cancelled during a decode on the device
// stops it (whisper: in the second 30 s window; Parakeet: in its second
// chunk), and the model then decodes the same audio as before.
func TestVulkanCancel(t *testing.T) {
	lp := lavapipe(t)
	for _, tc := range []struct {
		name  string
		path  string
		audio []float32
	}{
		{"whisper", writeModel(t, testmodel.Mini), speechLike(32)}, // a second window of 2 s
		{"parakeet", parakeetFile(t, 300), speechLike(9)},          // 3 s chunks
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := LoadOn(tc.path, lp, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			opt := Options{Threads: 2, NoSpeechThreshold: 1}
			want, err := m.Transcribe(context.Background(), tc.audio, opt)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(testwait.Context(t))
			defer cancel()
			calls := 0
			opt.Progress = func(p int) {
				// Progress comes at the start of every window (chunk): the
				// second is the cancel, with a window still to decode.
				if calls++; calls == 2 && p < 100 {
					cancel()
				}
			}
			if _, err := m.Transcribe(ctx, tc.audio, opt); !errors.Is(err, context.Canceled) {
				t.Fatalf("Transcribe cancelled at its second window = %v (%d progress calls), want context.Canceled", err, calls)
			}
			opt.Progress = nil
			again, err := m.Transcribe(context.Background(), tc.audio, opt)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.Segments, again.Segments); diff != "" {
				t.Errorf("after a cancelled call the same audio decodes differently (-before +after):\n%s", diff)
			}
		})
	}
}

// TestAutoWithoutGPUNode: on a machine with no GPU device node (no
// /dev/dri/renderD*, no /dev/nvidiactl: a server, most virtual machines,
// this CI), a decode under auto keeps Vulkan out of the process, since
// every Vulkan device there is a software one that auto would not take:
// lavapipe is never started nor mapped, and auto is the CPU. With a node
// (here a file the test names as one) auto looks, lists lavapipe, and
// still keeps the CPU. --list-devices, in a process of its own, still
// looks, and gpu still keeps the CPU (the last case).
func TestAutoWithoutGPUNode(t *testing.T) {
	node := t.TempDir() + "/renderD128"
	if err := os.WriteFile(node, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, nodes string
		vulkan      bool
	}{
		{"no node", t.TempDir() + "/renderD*", false},
		{"a render node", node, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := deviceChild(t, os.Args[0], "YAZ_ASR_AUTO_FIRST=1", "YAZ_ASR_GPU_NODES="+tc.nodes, "YAZ_CUDA_MODULE=none")
			listed := slices.ContainsFunc(got.Devices, func(n string) bool { return strings.HasPrefix(n, "Vulkan") })
			if got.Auto != "CPU" || listed != tc.vulkan || got.Lavapipe != tc.vulkan {
				t.Errorf("%+v: want auto on the CPU, Vulkan listed and lavapipe mapped: %v", got, tc.vulkan)
			}
		})
	}
	// Without the auto-first choice the list is whole: --list-devices.
	if got := deviceChild(t, os.Args[0], "YAZ_ASR_GPU_NODES="+t.TempDir()+"/none", "YAZ_CUDA_MODULE=none"); !got.Lavapipe || !got.GPUMissing {
		t.Errorf("listed first, with no node: %+v; want lavapipe listed, and gpu on the CPU", got)
	}
}

// TestVulkanNoDriver: with no Vulkan driver (VK_ICD_FILENAMES pointing
// nowhere), with no Vulkan loader at all, and after NoGPU, ggml lists the CPU alone,
// auto takes it and gpu falls back to it: the same binary runs on a machine
// without Vulkan. Each case is a fresh process (deviceChild).
func TestVulkanNoDriver(t *testing.T) {
	// YAZ_ASR_NOGPU: the child calls NoGPU first (--device cpu,
	// --vad-stream): lavapipe is there, and Vulkan stays out all the same.
	for _, env := range []string{"VK_ICD_FILENAMES=/nonexistent", "YAZ_VULKAN_LOADER=/nonexistent/libvulkan.so.1", "YAZ_ASR_NOGPU=1"} {
		t.Run(env, func(t *testing.T) {
			// No CUDA module either: the CPU must be alone.
			got := deviceChild(t, os.Args[0], env, "YAZ_CUDA_MODULE=none")
			if len(got.Devices) != 1 || got.Devices[0] != "CPU" || got.Auto != "CPU" || !got.GPUMissing {
				t.Errorf("with %s: %+v; want the CPU alone, auto on it, gpu on it too", env, got)
			}
		})
	}
}
