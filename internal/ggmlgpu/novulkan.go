//go:build !yaz_vulkan

package asr

// This build has no Vulkan backend (see vulkan.go).
const vulkanBuilt = false

func vulkanType(int) int { return -1 }

func disableVulkan() {}
