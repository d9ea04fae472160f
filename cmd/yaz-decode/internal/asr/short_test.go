package asr

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/internal/testwait"
)

// guarded returns n samples that end exactly where a page the process may
// not read begins: a read past the last sample is a SIGSEGV, not a silent
// read of whatever follows.
func guarded(t *testing.T, n int) []float32 {
	t.Helper()
	page := unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	if err := unix.Mprotect(mem[page:], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	end := unsafe.Pointer(&mem[page-1])
	first := unsafe.Add(end, 1-4*n)
	s := unsafe.Slice((*float32)(first), n)
	for i := range s {
		s[i] = 0.1 * float32(i%7-3)
	}
	return s
}

// TestShortAudioChild decodes YAZ_ASR_SHORT samples that end at an
// unreadable page (run by TestShortAudioIsNotReadPastItsEnd only).
func TestShortAudioChild(t *testing.T) {
	var n int
	if _, err := fmt.Sscan(os.Getenv("YAZ_ASR_SHORT"), &n); err != nil {
		return
	}
	m := miniModel(t)
	if os.Getenv("YAZ_ASR_ENGINE") == "parakeet" {
		m = parakeetModel(t, 0)
	}
	if _, err := m.Transcribe(context.Background(), guarded(t, n), Options{Threads: 1}); err != nil {
		t.Fatalf("Transcribe(%d samples): %v", n, err)
	}
	fmt.Println("decoded")
}

// TestShortAudioIsNotReadPastItsEnd: audio shorter than whisper.cpp can
// take (a quick tap of the key: a few milliseconds) is never read past its
// end. whisper.cpp 1.9.1 reads up to 200 samples past a shorter input's
// end, and so might Parakeet's; each length and engine runs in a child process whose samples end at an
// unreadable page, so such a read kills it. Swept over lengths around the
// bound.
func TestShortAudioIsNotReadPastItsEnd(t *testing.T) {
	for _, engine := range []string{"whisper", "parakeet"} {
		for _, n := range []int{1, 2, 100, 199, 200, 201, 202, 319, 320, 321, 399, 400, 401, 1600} {
			t.Run(fmt.Sprintf("%s/%d", engine, n), func(t *testing.T) {
				cmd := exec.CommandContext(testwait.Context(t), os.Args[0], "-test.run=^TestShortAudioChild$", "-test.count=1")
				cmd.Env = append(os.Environ(), fmt.Sprintf("YAZ_ASR_SHORT=%d", n), "YAZ_ASR_ENGINE="+engine)
				out, err := cmd.CombinedOutput()
				if err != nil || !strings.Contains(string(out), "decoded") {
					t.Fatalf("decoding %d samples: %v\n%s", n, err, out)
				}
			})
		}
	}
}
