//go:build yaz_vulkan

package silero

import "github.com/yazses/yazses/internal/ggmlgpu"

// In a build with a GPU backend, whisper.cpp's backend registry (libggml)
// refers to it: package ggmlgpu links it (yaz-decode through package asr).
// Vulkan stays out of this process, as yaz-decode --vad-stream keeps it
// out: Silero runs on the CPU, and the whisper-cli these tests start must
// not inherit the device list (GGML_VK_VISIBLE_DEVICES) that would show it
// Mesa's lavapipe.
func init() { ggmlgpu.DisableVulkan() }
