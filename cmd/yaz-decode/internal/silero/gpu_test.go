//go:build yaz_vulkan || yaz_cuda

package silero

// In a build with a GPU backend, whisper.cpp's backend registry (libggml)
// refers to that backend, which package asr links (for Vulkan with the
// glue that opens the Vulkan loader at run time). yaz-decode links both
// packages; this test binary, which has no other reason to import asr,
// does it here, or it does not link at all.
import _ "github.com/yazses/yazses/cmd/yaz-decode/internal/asr"
