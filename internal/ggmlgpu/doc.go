// Package ggmlgpu brings the GPU backends of the whisper.cpp build into
// the programs and test binaries that link whisper.cpp.
//
// Vulkan is linked in: ggml's backend registry (libggml) refers to each
// backend the build has, so a binary that links libggml without it does
// not link at all. The build tag yaz_vulkan says the build has it (the
// Makefile sets it from scripts/setup-whisper.sh --features): vulkan.go,
// yaz_vulkan.c, with the Vulkan loader opened at run time, so one binary
// runs with and without libvulkan.so.1.
//
// CUDA is a module opened at run time, in every build (cuda.go,
// yaz_cuda.c): yaz-ggml-cuda.so, which setup-whisper.sh builds where nvcc
// is found, so one binary runs with and without the CUDA libraries and the
// NVIDIA driver.
//
// Package asr, the one user in production, imports it; the test binaries
// of packages that link whisper.cpp without asr (silero, testmodel's
// through whisper.cpp's Go bindings) import it for Vulkan's link flags.
package ggmlgpu
