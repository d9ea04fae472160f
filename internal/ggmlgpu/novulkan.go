//go:build !yaz_vulkan

package ggmlgpu

// Vulkan reports whether ggml's Vulkan backend is linked in: not in this
// build (see vulkan.go).
const Vulkan = false

// VulkanType is -1 (unknown) in a build without Vulkan.
func VulkanType(int) int { return -1 }

// DisableVulkan does nothing in a build without Vulkan.
func DisableVulkan() {}
