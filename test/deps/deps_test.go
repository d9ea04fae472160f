package deps

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/yazses/yazses/"

// cgoAllowed are the only packages of ours with cgo files: whisper.cpp's
// recognizer and voice detector, and miniaudio.
var cgoAllowed = map[string]bool{module + "lib/asr": true, module + "lib/silero": true, module + "lib/audio": true}

func goList(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func TestCgoOnlyWhereNeeded(t *testing.T) {
	for _, line := range strings.Split(strings.TrimSpace(goList(t, nil, "-f", "{{.ImportPath}} {{len .CgoFiles}}", "./...")), "\n") {
		pkg, n, _ := strings.Cut(line, " ")
		if n != "0" && !cgoAllowed[pkg] {
			t.Errorf("%s has cgo files; only lib/asr, lib/silero and lib/audio may", pkg)
		}
	}
}

// TestSpeechEngineOnlyInDecode: lib/asr, the one package that links
// whisper.cpp (both engines, Whisper and Parakeet TDT, with their cgo), is
// linked by yaz-decode alone among the binaries; everything else runs
// yaz-decode as a child, and reads model files through the pure-Go
// lib/modelfile.
func TestSpeechEngineOnlyInDecode(t *testing.T) {
	linked := 0
	for _, line := range strings.Split(strings.TrimSpace(goList(t, nil, "-f", "{{.ImportPath}} {{join .Deps \",\"}}", "./cmd/...")), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		if !strings.Contains(","+deps+",", ","+module+"lib/asr,") {
			continue
		}
		if !strings.HasPrefix(pkg, module+"cmd/yaz-decode") {
			t.Errorf("%s links lib/asr (whisper.cpp); only yaz-decode may", pkg)
		}
		linked++
	}
	if linked == 0 {
		t.Error("nothing links lib/asr: the check above proves nothing")
	}
	if n := strings.TrimSpace(goList(t, nil, "-f", "{{len .CgoFiles}}", "./lib/modelfile")); n != "0" {
		t.Errorf("lib/modelfile has %s cgo files; it must stay pure Go for yazsesd config check", n)
	}
}

// TestPureGoBuild: everything the daemon side will use builds with
// CGO_ENABLED=0, so yazsesd, yaz-gate and yaz-mcp never link C.
func TestPureGoBuild(t *testing.T) {
	pkgs := []string{"./cmd/yazsesd", "./cmd/yaz-gate", "./lib/tts", "./lib/gate", "./lib/jsonrpc", "./lib/safesocket", "./lib/config",
		"./lib/frame", "./lib/vad", "./lib/wav", "./lib/pcm", "./lib/transcript", "./lib/cli", "./lib/models",
		"./cmd/yaz-mcp", "./lib/daemonapi", "./lib/vadspan", "./lib/modelfile", "./lib/inject",
		"./lib/vadwire", "./cmd/yazsesd/internal/vadlink"}
	cmd := exec.Command("go", append([]string{"build", "-o", os.DevNull}, pkgs...)...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
}

// TestBudgetOnlyInGate: the interruption budget lives in yaz-gate alone; no
// other binary can hold a budget of its own.
func TestBudgetOnlyInGate(t *testing.T) {
	for _, line := range strings.Split(strings.TrimSpace(goList(t, nil, "-f", "{{.ImportPath}} {{join .Deps \",\"}}", "./cmd/...")), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		if strings.Contains(","+deps+",", ","+module+"lib/budget,") && !strings.HasPrefix(pkg, module+"cmd/yaz-gate") {
			t.Errorf("%s imports lib/budget; only yaz-gate may", pkg)
		}
	}
}

// TestSileroOnlyInDecode: the Silero voice detector (cgo, whisper.cpp)
// is linked by yaz-decode alone; the daemon, the gate and the MCP server
// get its results from a yaz-decode child (lib/vadspan, pure Go, turns
// probabilities into spans anywhere).
func TestSileroOnlyInDecode(t *testing.T) {
	for _, line := range strings.Split(strings.TrimSpace(goList(t, nil, "-f", "{{.ImportPath}} {{join .Deps \",\"}}", "./cmd/...")), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		if strings.Contains(","+deps+",", ","+module+"lib/silero,") && !strings.HasPrefix(pkg, module+"cmd/yaz-decode") {
			t.Errorf("%s imports lib/silero; only yaz-decode may", pkg)
		}
	}
}

// TestPackageDocs: every package says what it is for.
func TestPackageDocs(t *testing.T) {
	for _, line := range strings.Split(strings.TrimSpace(goList(t, nil, "-f", "{{.ImportPath}}\t{{.Doc}}", "./...")), "\n") {
		pkg, doc, _ := strings.Cut(line, "\t")
		if strings.TrimSpace(doc) == "" {
			t.Errorf("%s has no package doc comment", pkg)
		}
	}
}

// TestMCPServerDeps: yaz-mcp builds with CGO_ENABLED=0 and links neither
// the budget (it reaches the one gate only through the daemon) nor the
// whisper or audio packages (it runs yaz-decode as a child).
func TestMCPServerDeps(t *testing.T) {
	cmd := exec.Command("go", "build", "-o", os.DevNull, "./cmd/yaz-mcp")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build ./cmd/yaz-mcp: %v\n%s", err, out)
	}
	deps := strings.Fields(goList(t, []string{"CGO_ENABLED=0"}, "-deps", "./cmd/yaz-mcp"))
	if len(deps) < 10 {
		t.Fatalf("go list -deps ./cmd/yaz-mcp gave %d packages: %v", len(deps), deps)
	}
	for _, banned := range []string{"lib/budget", "lib/gate", "lib/asr", "lib/audio"} {
		for _, d := range deps {
			if d == module+banned {
				t.Errorf("yaz-mcp imports %s", d)
			}
		}
	}
	if !slices.Contains(deps, module+"lib/daemonapi") {
		t.Errorf("yaz-mcp does not import lib/daemonapi: the check above proves nothing")
	}
}
