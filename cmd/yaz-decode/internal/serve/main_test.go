package serve

import (
	"os"
	"testing"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/asr"
)

// TestMain lists ggml's devices before any test runs, as package decode's
// does: the tests share this process, and ggml lists its devices once per
// process, so listed now they are all there for the Vulkan test
// (TestServeAbandonOnVulkan) whatever loaded a model before it.
func TestMain(m *testing.M) {
	asr.Devices()
	os.Exit(m.Run())
}
