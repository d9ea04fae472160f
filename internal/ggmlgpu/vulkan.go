//go:build yaz_vulkan

package ggmlgpu

/*
#cgo LDFLAGS: -Wl,--wrap=ggml_backend_vk_reg -lggml-vulkan -lggml-base -ldl -lpthread
#include "yaz_vulkan.h"
*/
import "C"

// The build has ggml's Vulkan backend (build tag yaz_vulkan: the Makefile
// sets it when scripts/setup-whisper.sh built that backend, and points
// LIBRARY_PATH at that build). The backend is linked in, the Vulkan loader
// is opened at run time (yaz_vulkan.c): one binary runs with and without
// libvulkan.so.1.

// Vulkan reports whether ggml's Vulkan backend is linked in.
const Vulkan = true

// VulkanType is the Vulkan physical device type of ggml's Vulkan device k
// (VkPhysicalDeviceType); -1: unknown.
func VulkanType(k int) int { return int(C.yaz_vk_device_type(C.int(k))) }

// DisableVulkan keeps Vulkan out of the process (no loader, driver or
// instance) if ggml has not listed its devices yet.
func DisableVulkan() { C.yaz_vk_disable() }
