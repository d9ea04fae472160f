// Package ggmlgpu links the GPU backends of the whisper.cpp build into
// every program and test binary that links whisper.cpp: ggml's backend
// registry (libggml) refers to each backend the build has, so a binary
// that links libggml without them does not link at all. The build tags
// say which the build has (the Makefile sets them from
// scripts/setup-whisper.sh --features): yaz_vulkan (vulkan.go,
// yaz_vulkan.c: ggml-vulkan linked in, the Vulkan loader opened at run
// time, so one binary runs with and without libvulkan.so.1) and yaz_cuda
// (cuda.go). Package asr, the one user in production, imports it; the
// test binaries of packages that link whisper.cpp without asr (silero,
// testmodel's through whisper.cpp's Go bindings) import it for its link
// flags alone.
package ggmlgpu
