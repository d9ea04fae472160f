package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
)

// TestSignalsEndCleanly: every binary, idle on an open stdin that never
// says anything, exits 0 within 5 s of SIGTERM and of SIGINT, leaving no
// child behind (TESTS.md 10).
func TestSignalsEndCleanly(t *testing.T) {
	// Each program's log line (at debug level) once it is past loading its
	// model and starting its device: the signal comes after it.
	cases := map[string]struct {
		argv  []string
		ready string
	}{
		"decode-stream": {[]string{"yaz-decode", "-m", world.mini, "-t", "2"}, "voice detector"},
		"decode-serve":  {[]string{"yaz-decode", "--serve", "-m", world.mini, "-t", "2"}, "msg=serving"},
		"speak-serve":   {[]string{"yaz-speak", "--serve", "--backend", "null"}, "msg=serving"},
		"capture":       {[]string{"yaz-capture", "--backend", "null"}, `msg="capture started"`},
	}
	for name, tc := range cases {
		argv := tc.argv
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			t.Run(name+"/"+sig.String(), func(t *testing.T) {
				t.Parallel()
				cmd := exec.Command(filepath.Join(world.bin, argv[0]), argv[1:]...)
				stdin, err := cmd.StdinPipe() // kept open: the program waits on it
				if err != nil {
					t.Fatal(err)
				}
				defer stdin.Close()
				var stderr syncBuffer
				cmd.Stderr = &stderr
				cmd.Env = append(os.Environ(), "YAZ_LOG_LEVEL=debug")
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if testwait.Until(ctx, func() bool { return strings.Contains(stderr.String(), tc.ready) }, &stderr) != nil {
					cmd.Process.Kill()
					t.Fatalf("%v never logged %q:\n%s", argv, tc.ready, stderr.String())
				}
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
