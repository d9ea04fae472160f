package cli

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

type manGrammar struct {
	Model string   `help:"Model file." default:"${home}/.local/share/m.bin" env:"YAZ_MODEL"`
	Files []string `arg:"" optional:"" help:"Audio files (…)."`
	Logging
	Secret bool `hidden:"" help:"Not for the page."`
}

func renderedPage(t *testing.T) string {
	t.Helper()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory")
	}
	var out, errb bytes.Buffer
	_, code, done := Parse("prog", "Does things.", &manGrammar{}, []string{"--man"}, &out, &errb, map[string]string{"home": home})
	if !done || code != 0 {
		t.Fatalf("--man: done %v, code %d, stderr %q", done, code, errb.String())
	}
	return out.String()
}

func TestManPage(t *testing.T) {
	page := renderedPage(t)
	for _, want := range []string{
		`.TH PROG 1 `, `"YazSes manual"`, ".SH NAME", "prog - Does things",
		`\fB--model=`, `~/\&.local/share/m\&.bin`, `\fB--log-level=`,
		".SH ARGUMENTS", ".SH ENVIRONMENT", "YAZ_MODEL sets --model", "YAZ_LOG_LEVEL sets --log-level",
		".SH EXIT STATUS", ".SH VERSION", ".SH SEE ALSO", "yaz-decode(1)",
		`\[u2026]`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("man page lacks %q:\n%s", want, page)
		}
	}
	for _, bad := range []string{"--secret", "--man", "…"} {
		if strings.Contains(page, bad) {
			t.Errorf("man page contains %q", bad)
		}
	}
	if home, _ := os.UserHomeDir(); strings.Contains(page, roffEscape(home)+"/") {
		t.Errorf("man page names the builder's home %s", home)
	}
}

// TestManPageRenders: groff (groff-base, which make setup installs) reads
// the page without a warning.
func TestManPageRenders(t *testing.T) {
	if _, err := exec.LookPath("groff"); err != nil {
		t.Skip("groff is not installed (make setup installs groff-base)")
	}
	cmd := exec.Command("groff", "-man", "-Tutf8", "-ww", "-z")
	cmd.Stdin = strings.NewReader(renderedPage(t))
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("groff: %v\n%s", err, out)
	}
}

// TestManPageDate: SOURCE_DATE_EPOCH fixes the date, for reproducible builds.
func TestManPageDate(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	if page := renderedPage(t); !strings.HasPrefix(page, `.TH PROG 1 "2023-11-14" "prog `) {
		t.Errorf("title line %q, want the date of SOURCE_DATE_EPOCH", strings.SplitN(page, "\n", 2)[0])
	}
}
