package readme

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testwait"
)

// checkoutVersion is the version the build must give every program: `git
// describe --tags --dirty` when a tag exists, else 0.0.0-dev+<short commit>
// (with -dirty for uncommitted changes to tracked files).
func checkoutVersion(ctx context.Context, dir string) string {
	if out, err := bounded(ctx, "git", "-C", dir, "describe", "--tags", "--dirty").Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	out, err := bounded(ctx, "git", "-C", dir, "describe", "--always", "--dirty").Output()
	if err != nil {
		return "0.0.0-dev"
	}
	return "0.0.0-dev+" + strings.TrimSpace(string(out))
}

var versionForm = regexp.MustCompile(`^(v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9]+-g[0-9a-f]+)?|0\.0\.0-dev\+[0-9a-f]{7,})(-dirty)?$`)

// TestVersions: every installed program, yaz-fetch-model included, prints
// "NAME VERSION" with the checkout's version, on stdout, and exits 0.
func TestVersions(t *testing.T) {
	inst := install(t)
	// The checkout's version when make install built the programs: the
	// checkout may have moved on since (a commit during a long run).
	want := inst.version
	if !versionForm.MatchString(want) {
		t.Fatalf("checkout version %q has neither form", want)
	}
	names := append(append([]string{}, inst.programs...), "yaz-fetch-model")
	if len(inst.programs) < 6 {
		t.Errorf("make install built %v, want every cmd/*", inst.programs)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			cmd := bounded(testwait.Context(t), filepath.Join(inst.bin, name), "--version")
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s --version: %v\n%s", name, err, stderr.String())
			}
			if got, want := string(out), name+" "+want+"\n"; got != want {
				t.Errorf("%s --version = %q, want %q", name, got, want)
			}
			if stderr.Len() > 0 {
				t.Errorf("%s --version wrote to stderr: %q", name, stderr.String())
			}
		})
	}
}

// TestVersionScript: scripts/version.sh, which the Makefile uses, in a
// checkout without a tag, with uncommitted changes, with a tag, and past it.
func TestVersionScript(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := bounded(testwait.Context(t), "git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.org"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	script, err := os.ReadFile(filepath.Join(world.root, "scripts", "version.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "version.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	version := func() string {
		t.Helper()
		out, err := bounded(testwait.Context(t), filepath.Join(dir, "scripts", "version.sh")).Output()
		if err != nil {
			t.Fatalf("version.sh: %v", err)
		}
		return strings.TrimSpace(string(out))
	}
	if got := version(); got != "0.0.0-dev" {
		t.Errorf("outside git: %q, want 0.0.0-dev", got)
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-qm", "one")
	short := git("rev-parse", "--short", "HEAD")
	if got, want := version(), "0.0.0-dev+"+short; got != want {
		t.Errorf("no tag: %q, want %q", got, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "version.sh"), append(script, '\n'), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := version(), "0.0.0-dev+"+short+"-dirty"; got != want {
		t.Errorf("no tag, dirty: %q, want %q", got, want)
	}
	git("commit", "-qam", "two")
	git("tag", "v1.2.0")
	if got, want := version(), "v1.2.0"; got != want {
		t.Errorf("at a tag: %q, want %q", got, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "x")
	git("commit", "-qm", "three")
	short = git("rev-parse", "--short", "HEAD")
	if got, want := version(), "v1.2.0-1-g"+short; got != want {
		t.Errorf("past a tag: %q, want %q", got, want)
	}
	for _, v := range []string{"0.0.0-dev+" + short, "v1.2.0", "v1.2.0-1-g" + short + "-dirty"} {
		if !versionForm.MatchString(v) {
			t.Errorf("versionForm does not match %q", v)
		}
	}
}
