package asr

import (
	"os"
	"testing"
)

// TestVulkanBuilt: a make test whose configuration asks for the Vulkan
// backend (YAZ_GPU=auto, the default, or vulkan: the Makefile sets
// YAZ_TEST_VULKAN=1) runs the lavapipe tests (vulkan_test.go and the
// other yaz_vulkan files), and a build without the backend fails here,
// in one line, instead of leaving them out unseen. YAZ_GPU=none (or
// plain go test) tests the CPU build alone.
func TestVulkanBuilt(t *testing.T) {
	want := os.Getenv("YAZ_TEST_VULKAN") == "1"
	switch {
	case want && !vulkanBuilt:
		t.Fatal("make test expects the Vulkan backend (YAZ_GPU=" + os.Getenv("YAZ_GPU") + ") but this build has none, so the lavapipe tests cannot run: " +
			"install glslc, libvulkan-dev, spirv-headers and mesa-vulkan-drivers (scripts/install-deps.sh) and make setup again, or make test YAZ_GPU=none for the CPU alone")
	case vulkanBuilt:
		t.Log("the Vulkan backend is built: the lavapipe tests run")
	default:
		t.Log("a CPU build (YAZ_TEST_VULKAN is not 1): no lavapipe tests")
	}
}
