package deps

import (
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/yazses/yazses/"

// cgoAllowed are the only packages of ours with cgo files: whisper.cpp's
// recognizer and voice detector, the link of whisper.cpp's GPU backends
// (internal/ggmlgpu: in internal/ rather than yaz-decode's because the
// test binaries of testmodel link whisper.cpp too; TestSpeechEngineOnlyInDecode
// keeps it out of every other program), and miniaudio.
var cgoAllowed = map[string]bool{
	module + "cmd/yaz-decode/internal/asr":    true,
	module + "cmd/yaz-decode/internal/silero": true,
	module + "internal/ggmlgpu":               true,
	module + "lib/audio":                      true,
}

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
			t.Errorf("%s has cgo files; only yaz-decode's asr and silero, internal/ggmlgpu and lib/audio may", pkg)
		}
	}
}

// TestSpeechEngineOnlyInDecode: cmd/yaz-decode/internal/asr, the one package that links
// whisper.cpp (both engines, Whisper and Parakeet TDT, with their cgo), and
// internal/ggmlgpu, which links whisper.cpp's GPU backends, are linked by
// yaz-decode alone among the binaries; everything else runs
// yaz-decode as a child, and reads model files through the pure-Go
// lib/modelfile.
func TestSpeechEngineOnlyInDecode(t *testing.T) {
	for _, engine := range []string{"cmd/yaz-decode/internal/asr", "internal/ggmlgpu"} {
		linked := 0
		for _, line := range strings.Split(strings.TrimSpace(goList(t, nil, "-f", "{{.ImportPath}} {{join .Deps \",\"}}", "./cmd/...")), "\n") {
			pkg, deps, _ := strings.Cut(line, " ")
			if !strings.Contains(","+deps+",", ","+module+engine+",") {
				continue
			}
			if !strings.HasPrefix(pkg, module+"cmd/yaz-decode") {
				t.Errorf("%s links %s (whisper.cpp); only yaz-decode may", pkg, engine)
			}
			linked++
		}
		if linked == 0 {
			t.Errorf("nothing links %s: the check above proves nothing", engine)
		}
	}
	if n := strings.TrimSpace(goList(t, nil, "-f", "{{len .CgoFiles}}", "./lib/modelfile")); n != "0" {
		t.Errorf("lib/modelfile has %s cgo files; it must stay pure Go for yazsesd config check", n)
	}
}

// TestPureGoBuild: the pure-Go packages the daemon side uses build with
// CGO_ENABLED=0.
func TestPureGoBuild(t *testing.T) {
	pkgs := []string{"./lib/tts", "./lib/gate", "./lib/jsonrpc", "./lib/safesocket", "./lib/config",
		"./lib/frame", "./lib/vad", "./lib/wav", "./lib/pcm", "./cmd/yaz-decode/internal/transcript", "./lib/cli",
		"./lib/daemonapi", "./lib/vadspan", "./lib/modelfile", "./cmd/yaz-type/internal/inject", "./lib/untrusted",
		"./lib/vadwire", "./cmd/yazsesd/internal/vadlink", "./lib/keyname"}
	cmd := exec.Command("go", append([]string{"build", "-o", os.DevNull}, pkgs...)...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
}

// TestDaemonSideNeverLinksC: yazsesd, yaz-gate and yaz-mcp build with
// CGO_ENABLED=0, and in the ordinary build (cgo on) none of the packages
// they link, ours or a module's, has a cgo file: a package with cgo and a
// pure-Go fallback would pass the first check and still link C in the
// second. Only the standard library's net and os/user may use libc when
// cgo is on (its resolver and user lookup; the daemon side opens no
// network socket).
func TestDaemonSideNeverLinksC(t *testing.T) {
	for _, bin := range []string{"./cmd/yazsesd", "./cmd/yaz-gate", "./cmd/yaz-mcp"} {
		t.Run(bin, func(t *testing.T) {
			cmd := exec.Command("go", "build", "-o", os.DevNull, bin)
			cmd.Dir = "../.."
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("CGO_ENABLED=0 go build %s: %v\n%s", bin, err, out)
			}
			lines := strings.Split(strings.TrimSpace(goList(t, []string{"CGO_ENABLED=1"}, "-deps", "-f",
				"{{.ImportPath}} {{.Standard}} {{len .CgoFiles}}", bin)), "\n")
			ours := 0
			for _, line := range lines {
				f := strings.Fields(line)
				if len(f) != 3 {
					t.Fatalf("go list -deps %s: line %q", bin, line)
				}
				if strings.HasPrefix(f[0], module) {
					ours++
				}
				if f[1] == "false" && f[2] != "0" {
					t.Errorf("%s links %s, which has %s cgo files", bin, f[0], f[2])
				}
			}
			if ours < 3 {
				t.Errorf("go list -deps %s lists %d packages of this module: the check above proves nothing", bin, ours)
			}
		})
	}
}

// TestBudgetOnlyInGate: the interruption budget lives in yaz-gate alone
// (cmd/yaz-gate/internal/budget: the compiler refuses any other importer),
// and no budget package exists anywhere else; no other binary can hold a
// budget of its own.
func TestBudgetOnlyInGate(t *testing.T) {
	const home = module + "cmd/yaz-gate/internal/budget"
	for _, pkg := range strings.Fields(goList(t, nil, "./...")) {
		if path.Base(pkg) == "budget" && pkg != home {
			t.Errorf("%s: the budget lives in %s only", pkg, home)
		}
	}
	linked := false
	for _, line := range strings.Split(strings.TrimSpace(goList(t, nil, "-f", "{{.ImportPath}} {{join .Deps \",\"}}", "./cmd/...")), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		if strings.Contains(","+deps+",", ","+home+",") {
			if !strings.HasPrefix(pkg, module+"cmd/yaz-gate") {
				t.Errorf("%s links %s; only yaz-gate may", pkg, home)
			}
			linked = linked || pkg == module+"cmd/yaz-gate"
		}
	}
	if !linked {
		t.Errorf("yaz-gate does not link %s: the check above proves nothing", home)
	}
}

// TestSileroOnlyInDecode: the Silero voice detector (cgo, whisper.cpp)
// is linked by yaz-decode alone; the daemon, the gate and the MCP server
// get its results from a yaz-decode child (lib/vadspan, pure Go, turns
// probabilities into spans anywhere).
func TestSileroOnlyInDecode(t *testing.T) {
	for _, line := range strings.Split(strings.TrimSpace(goList(t, nil, "-f", "{{.ImportPath}} {{join .Deps \",\"}}", "./cmd/...")), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		if strings.Contains(","+deps+",", ","+module+"cmd/yaz-decode/internal/silero,") && !strings.HasPrefix(pkg, module+"cmd/yaz-decode") {
			t.Errorf("%s imports yaz-decode's silero; only yaz-decode may", pkg)
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
	for _, banned := range []string{"cmd/yaz-gate/internal/budget", "lib/gate", "cmd/yaz-decode/internal/asr", "lib/audio"} {
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

// TestConfigWithoutListener: the configuration checks key names with
// lib/keyname alone, so lib/config does not import the evdev listener
// (package hotkey, wherever it lives) and yaz-mcp, which loads the
// configuration, does not link it; yazsesd does.
func TestConfigWithoutListener(t *testing.T) {
	isListener := func(pkg string) bool { return strings.HasPrefix(pkg, module) && path.Base(pkg) == "hotkey" }
	imports := strings.Fields(goList(t, nil, "-f", "{{join .Imports \" \"}}", "./lib/config"))
	if !slices.Contains(imports, module+"lib/keyname") {
		t.Errorf("lib/config does not import lib/keyname (imports %v): the check below proves nothing", imports)
	}
	for _, pkg := range imports {
		if isListener(pkg) {
			t.Errorf("lib/config imports %s; it checks key names with lib/keyname", pkg)
		}
	}
	mcp := strings.Fields(goList(t, nil, "-deps", "./cmd/yaz-mcp"))
	if !slices.Contains(mcp, module+"lib/config") {
		t.Errorf("yaz-mcp does not link lib/config: the check below proves nothing")
	}
	for _, pkg := range mcp {
		if isListener(pkg) {
			t.Errorf("yaz-mcp links the evdev listener %s", pkg)
		}
	}
	if !slices.ContainsFunc(strings.Fields(goList(t, nil, "-deps", "./cmd/yazsesd")), isListener) {
		t.Errorf("yazsesd does not link a package hotkey: the checks above look for the wrong name")
	}
}

// TestLibSharedOnly: every lib package is linked, directly or through
// other packages, by two programs or more (go list's dependencies of each
// cmd/<program>, not what a comment says). Code for one program belongs
// in cmd/<program>/internal, where the compiler keeps it there.
func TestLibSharedOnly(t *testing.T) {
	users := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(goList(t, nil, "-f", "{{.ImportPath}} {{join .Deps \" \"}}", "./cmd/...")), "\n") {
		f := strings.Fields(line)
		bin, _, _ := strings.Cut(strings.TrimPrefix(f[0], module+"cmd/"), "/")
		for _, dep := range f[1:] {
			if rest, ok := strings.CutPrefix(dep, module); ok && strings.HasPrefix(rest, "lib/") && !slices.Contains(users[rest], bin) {
				users[rest] = append(users[rest], bin)
			}
		}
	}
	libs := strings.Fields(goList(t, nil, "-f", "{{.ImportPath}}", "./lib/..."))
	if len(libs) < 10 {
		t.Fatalf("go list ./lib/... gave %d packages: %v", len(libs), libs)
	}
	for _, pkg := range libs {
		pkg = strings.TrimPrefix(pkg, module)
		if bins := users[pkg]; len(bins) < 2 {
			t.Errorf("%s is linked by %v alone: move it to cmd/<program>/internal", pkg, bins)
		}
	}
}

// TestTypingOnlyInYazType: typing is yaz-type's (the daemon's child): no
// other program links an X11 client, the Wayland or portal typing code
// or the Wayland wire format (internal/wlwire, which the compiler would
// let any program import), and yaz-type does (so the check proves
// something).
func TestTypingOnlyInYazType(t *testing.T) {
	typing := []string{"github.com/jezek/xgb", module + "cmd/yaz-type/internal/x11",
		module + "cmd/yaz-type/internal/wayland", module + "cmd/yaz-type/internal/portal", module + "internal/wlwire"}
	for _, line := range strings.Split(strings.TrimSpace(goList(t, nil, "-f", "{{.ImportPath}} {{join .Deps \",\"}}", "./cmd/...")), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		if !strings.HasPrefix(pkg, module+"cmd/") || strings.Count(strings.TrimPrefix(pkg, module+"cmd/"), "/") > 0 {
			continue // the programs only
		}
		for _, p := range typing {
			linked := strings.Contains(","+deps+",", ","+p+",")
			if yazType := pkg == module+"cmd/yaz-type"; linked != yazType {
				t.Errorf("%s links %s: %v; only yaz-type may, and it must", pkg, p, linked)
			}
		}
	}
}

// TestTiersCoverAll: every package is in exactly one test tier
// (scripts/test-tier.sh), so make test runs each once, and no tier is
// empty.
func TestTiersCoverAll(t *testing.T) {
	all := strings.Fields(goList(t, nil, "./..."))
	seen := map[string]string{}
	for _, tier := range []string{"short", "programs", "desktop"} {
		cmd := exec.Command("scripts/test-tier.sh", tier)
		cmd.Dir = "../.."
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("test-tier.sh %s: %v", tier, err)
		}
		pkgs := strings.Fields(string(out))
		if len(pkgs) == 0 {
			t.Errorf("tier %s is empty", tier)
		}
		for _, p := range pkgs {
			if other, ok := seen[p]; ok {
				t.Errorf("%s is in the tiers %s and %s", p, other, tier)
			}
			seen[p] = tier
		}
	}
	for _, p := range all {
		if seen[p] == "" {
			t.Errorf("%s is in no test tier", p)
		}
	}
}
