package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testwait"
)

// TestLoadScript: scripts/load.sh runs its command LOAD_RUNS times while
// LOAD_PROCS busy processes run (alive while the command runs, gone when
// the script ends), and stops at the first failed run with exit 1.
func TestLoadScript(t *testing.T) {
	load := filepath.Join(filepath.Dir(script()), "load.sh")
	for _, tc := range []struct {
		name    string
		command string
		runs    int // how many runs the command sees
		fail    bool
	}{
		{"passes", `for p in $LOAD_PIDS; do kill -0 "$p" || exit 9; done; echo "$LOAD_PIDS" >> "$OUT"`, 3, false},
		{"stops at a failure", `echo "$LOAD_PIDS" >> "$OUT"; exit 1`, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "pids")
			cmd := exec.Command(load, "sh", "-c", tc.command)
			cmd.Env = []string{"PATH=/usr/bin:/bin", "LOAD_PROCS=2", "LOAD_RUNS=3", "OUT=" + out}
			stderr, err := cmd.CombinedOutput()
			if tc.fail != (err != nil) {
				t.Fatalf("load.sh: %v, want failure %v\n%s", err, tc.fail, stderr)
			}
			b, rerr := os.ReadFile(out)
			if rerr != nil {
				t.Fatalf("the command never ran: %v\n%s", rerr, stderr)
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if len(lines) != tc.runs {
				t.Errorf("the command ran %d times, want %d\n%s", len(lines), tc.runs, stderr)
			}
			pids := strings.Fields(lines[0])
			if len(pids) != 2 {
				t.Fatalf("LOAD_PIDS = %q, want 2 busy processes", lines[0])
			}
			for _, p := range pids {
				pid, err := strconv.Atoi(p)
				if err != nil {
					t.Fatal(err)
				}
				ended, err := testwait.Exited(pid)
				if err != nil {
					t.Fatal(err)
				}
				testwait.Closed(t, ended, "busy process "+p+"'s end after load.sh")
			}
			if tc.fail && !strings.Contains(string(stderr), "load: run 1 of 3 FAILED") {
				t.Errorf("output lacks the failed run:\n%s", stderr)
			}
		})
	}
}
