package budget

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestOnlyGateImports enforces invariant 2 of DESIGN.md: one budget, in the
// one yaz-gate. No package of the module but cmd/yaz-gate (and this
// package's own tests) may import lib/budget, not even from its tests.
func TestOnlyGateImports(t *testing.T) {
	const (
		self    = "github.com/yazses/yazses/lib/budget"
		allowed = "github.com/yazses/yazses/cmd/yaz-gate"
	)
	cmd := exec.Command("go", "list", "-e", "-f",
		`{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`,
		"github.com/yazses/yazses/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	found := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		pkg := fields[0]
		if pkg == self {
			found = true
			continue
		}
		for _, imp := range fields[1:] {
			if imp == self && pkg != allowed {
				t.Errorf("%s imports %s; only %s may", pkg, self, allowed)
			}
		}
	}
	if !found {
		t.Fatalf("go list did not list %s:\n%s", self, out)
	}
}
