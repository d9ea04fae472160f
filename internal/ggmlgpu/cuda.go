package ggmlgpu

/*
#cgo LDFLAGS: -Wl,--export-dynamic -ldl -lpthread
#include <stdlib.h>
#include "yaz_cuda.h"
*/
import "C"

// ggml's CUDA backend is a module loaded at run time (yaz_cuda.c), in every
// build: scripts/setup-whisper.sh builds yaz-ggml-cuda.so where nvcc is
// found, make build puts it next to the binaries and make install in
// lib/yazses. A program without it, or on a machine without the CUDA
// libraries or the NVIDIA driver, runs on its other devices.
//
// The module's references to ggml resolve against the program:
// -Wl,--export-dynamic puts the program's symbols in its dynamic symbol
// table. The module is opened with RTLD_NOW, so a ggml symbol the program
// lacks fails the open, with its name (asr's TestCUDAModule opens the real
// module that way).

// LoadCUDA opens the CUDA module and adds its backend to ggml's devices,
// once per process, before ggml lists them (package asr calls it first). It
// returns why CUDA is not there: "" when it is, or when no module is
// installed; otherwise one line for --list-devices and --device gpu's
// error (the module cannot open libcuda.so.1, was built from another ggml,
// finds no device).
func LoadCUDA() string { return C.GoString(C.yaz_cuda_load()) }

// DisableCUDA keeps the CUDA module out of the process if LoadCUDA has not
// run yet (--device cpu).
func DisableCUDA() { C.yaz_cuda_disable() }
