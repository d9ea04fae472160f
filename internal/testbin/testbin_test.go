package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Two builds of the same sources share one folder, which holds every
// program.
func TestBuildOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every program")
	}
	a, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(a, "yazsesd"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("second build in %s, first in %s", b, a)
	}
	again, err := os.Stat(filepath.Join(b, "yazsesd"))
	if err != nil || !again.ModTime().Equal(info.ModTime()) {
		t.Fatalf("yazsesd rebuilt: %v then %v (%v)", info.ModTime(), again.ModTime(), err)
	}
	for _, p := range []string{"fakedecode", "yaz-decode", "yaz-mcp", "yaz-speak", "yaz-capture", "yaz-gate"} {
		if _, err := os.Stat(filepath.Join(a, p)); err != nil {
			t.Errorf("%s not built: %v", p, err)
		}
	}
}

// TestNoUserRunDir: a program built by Build, started without
// XDG_RUNTIME_DIR (as an MCP host starts yaz-mcp), looks for the daemon in
// UserRunRoot(dir)/$UID, never in the user's /run/user/$UID, where the
// user's own yazsesd may run.
func TestNoUserRunDir(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every program")
	}
	dir, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(UserRunRoot(dir), strconv.Itoa(os.Geteuid()))
	cmd := exec.Command(filepath.Join(dir, "yazsesd"), "status")
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("yazsesd status found a daemon with no XDG_RUNTIME_DIR and no %s:\n%s", want, out)
	}
	if !strings.Contains(string(out), want) || strings.Contains(string(out), "/run/user/") {
		t.Errorf("yazsesd status without XDG_RUNTIME_DIR:\n%s\nwant it to look in %s, not in /run/user", out, want)
	}
}
