package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalsEndCleanly: every binary, idle on an open stdin that never
// says anything, exits 0 within 5 s of SIGTERM and of SIGINT, leaving no
// child behind (TESTS.md 10).
func TestSignalsEndCleanly(t *testing.T) {
	cases := map[string][]string{
		"decode-stream": {"yaz-decode", "-m", world.mini, "-t", "2"},
		"decode-serve":  {"yaz-decode", "--serve", "-m", world.mini, "-t", "2"},
		"speak-serve":   {"yaz-speak", "--serve", "--backend", "null"},
		"capture":       {"yaz-capture", "--backend", "null"},
	}
	for name, argv := range cases {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			t.Run(name+"/"+sig.String(), func(t *testing.T) {
				t.Parallel()
				cmd := exec.Command(filepath.Join(world.bin, argv[0]), argv[1:]...)
				stdin, err := cmd.StdinPipe() // kept open: the program waits on it
				if err != nil {
					t.Fatal(err)
				}
				defer stdin.Close()
				var stderr strings.Builder
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(1500 * time.Millisecond) // past model load and device start
				cmd.Process.Signal(sig)
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				select {
				case err := <-done:
					if err != nil {
						t.Errorf("%v after %v: %v\n%s", argv[0], sig, err, stderr.String())
					}
				case <-time.After(5 * time.Second):
					cmd.Process.Kill()
					t.Fatalf("%v still running 5 s after %v", argv, sig)
				}
				if strings.Contains(stderr.String(), "panic") {
					t.Errorf("stderr: %s", stderr.String())
				}
			})
		}
	}
}
