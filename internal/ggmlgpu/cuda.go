//go:build yaz_cuda

package ggmlgpu

// The build has ggml's CUDA backend (build tag yaz_cuda: the Makefile sets
// it for YAZ_GPU=cuda or cuda,vulkan). Untested: no machine with nvcc and
// Go has built it yet. Unlike Vulkan's loader, the CUDA libraries are
// linked as they are: a binary built with this tag needs libcudart,
// libcublas and the driver's libcuda.so.1 to start.

/*
#cgo LDFLAGS: -lggml-cuda -lggml-base -L/usr/local/cuda/lib64 -L/usr/local/cuda/lib64/stubs -lcudart -lcublas -lcublasLt -lcuda -lstdc++
*/
import "C"
