package testbin

import (
	"os"
	"path/filepath"
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
