package asr

import "github.com/yazses/yazses/internal/ggmlgpu"

// The GPU backends of the build, which package ggmlgpu links in.

// vulkanBuilt reports whether ggml's Vulkan backend is linked in.
const vulkanBuilt = ggmlgpu.Vulkan

// vulkanType is the Vulkan physical device type of ggml's Vulkan device k
// (VkPhysicalDeviceType); -1: unknown.
func vulkanType(k int) int { return ggmlgpu.VulkanType(k) }

// disableVulkan keeps Vulkan out of the process if ggml has not listed
// its devices yet.
func disableVulkan() { ggmlgpu.DisableVulkan() }

// loadCUDA opens the CUDA module (ggmlgpu.LoadCUDA) and says why CUDA is
// not there ("" when it is, or when no module is installed).
func loadCUDA() string { return ggmlgpu.LoadCUDA() }

// disableCUDA keeps the CUDA module out of the process if it is not open
// yet.
func disableCUDA() { ggmlgpu.DisableCUDA() }
