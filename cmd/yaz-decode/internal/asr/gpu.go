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
