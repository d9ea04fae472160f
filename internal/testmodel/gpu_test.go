//go:build yaz_vulkan

package testmodel_test

import "github.com/yazses/yazses/internal/ggmlgpu"

// In a build with a GPU backend, whisper.cpp's backend registry (libggml,
// which the Go bindings link) refers to it: package ggmlgpu links it.
// Vulkan stays out of this process: the bindings would take the first GPU
// ggml lists (Mesa's lavapipe here), and these tests of the file format
// run on the CPU, as whisper-cli does beside them (ggml-vulkan lists no
// software device to a program without yazses' device list). The device
// tests are package asr's.
func init() { ggmlgpu.DisableVulkan() }
