package cli

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testwait"
)

// testDoc stands for a program's doc.go.
const testDoc = `// Command prog does things: it reads files and writes text,
// 100% offline (a %d in the text is text).
//
// A second paragraph, with a list:
//   - one thing;
//   - another thing.
//
// # Synopsis
//
//	prog [flags] FILE...
//	prog --serve
//
// # Flags
//
//	--model FILE  left out: OPTIONS comes from the kong model
//
// # Files
//
// ~/.config/prog.toml holds its settings.
//
// # Examples
//
// Transcribe a file:
//
//	prog --model m.bin a.wav
//	.starts with a dot
//
// # Exit status
//
// 0 on success.
package main
`

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
	SetDoc(testDoc)
	t.Cleanup(func() { SetDoc("") })
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
		`.TH PROG 1 `, `"YazSes manual"`, ".SH NAME", `prog \- Does things`,
		`\fB\-\-model\fR=`, `~/.local/share/m.bin`, `\fB\-\-log\-level\fR=`,
		".SH ARGUMENTS", ".SH ENVIRONMENT", `YAZ_MODEL\fR
sets \-\-model`, `YAZ_LOG_LEVEL\fR
sets \-\-log\-level`,
		".SH EXIT STATUS", ".SH VERSION", ".SH SEE ALSO", `yaz\-decode\fR(1)`, `yaz\-fetch\-model\fR(1)`,
		`\[u2026]`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("man page lacks %q:\n%s", want, page)
		}
	}
	for _, bad := range []string{"secret", `\-\-man`, "…"} {
		if strings.Contains(page, bad) {
			t.Errorf("man page contains %q", bad)
		}
	}
	if home, _ := os.UserHomeDir(); strings.Contains(page, roffText(home)+"/") {
		t.Errorf("man page names the builder's home %s", home)
	}
}

// TestManPageRenders: groff (groff-base, which make setup installs) reads
// the page without a warning.
func TestManPageRenders(t *testing.T) {
	if _, err := exec.LookPath("groff"); err != nil {
		t.Skip("groff is not installed (make setup installs groff-base)")
	}
	cmd := exec.CommandContext(testwait.Context(t), "groff", "-man", "-Tutf8", "-ww", "-z")
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

// requiredSections are the sections every page has.
var requiredSections = []string{"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "FILES", "EXAMPLES", "SEE ALSO"}

var (
	manHeading = regexp.MustCompile(`^[A-Z][A-Z ]+$`)
	roffLeft   = regexp.MustCompile(`^\s*['.](SH|SS|PP|TP|IP|RS|RE|nf|fi|br|TH|B|I|BR|EX|EE)\b`)
)

// manProblems renders a page with man -l, as a user reads it, and names
// what is wrong with it: format debris (%!, (MISSING), a backslash, a roff
// request left as text), a required section missing, a section with no
// body.
func manProblems(t *testing.T, page string) []string {
	t.Helper()
	if _, err := exec.LookPath("man"); err != nil {
		t.Fatalf("man is not installed (make setup installs man-db and groff-base): %v", err)
	}
	cmd := exec.CommandContext(testwait.Context(t), "man", "-P", "cat", "-l", "-")
	cmd.Env = append(os.Environ(), "MANWIDTH=80", "LANG=C.UTF-8", "MAN_KEEP_FORMATTING=")
	cmd.Stdin = strings.NewReader(page)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		return []string{"man -l: " + strings.TrimSpace(stderr.String()) + " " + errString(err)}
	}
	var problems []string
	lines := strings.Split(string(out), "\n")
	body := map[string]int{}
	current := ""
	for _, line := range lines {
		switch {
		case strings.Contains(line, "%!") || strings.Contains(line, "(MISSING)"):
			problems = append(problems, "format debris: "+line)
		case strings.Contains(line, `\`):
			problems = append(problems, "stray backslash: "+line)
		case roffLeft.MatchString(line):
			problems = append(problems, "roff left as text: "+line)
		}
		if manHeading.MatchString(line) {
			current = line
			if _, dup := body[current]; dup {
				problems = append(problems, "section twice: "+current)
			}
			body[current] = 0
			continue
		}
		if current != "" && strings.TrimSpace(line) != "" {
			body[current]++
		}
	}
	for name, n := range body {
		if n == 0 {
			problems = append(problems, "empty section "+name)
		}
	}
	for _, name := range requiredSections {
		if _, ok := body[name]; !ok {
			problems = append(problems, "no section "+name)
		}
	}
	if len(problems) > 0 {
		problems = append(problems, "the page as man shows it:\n"+string(out))
	}
	return problems
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestManPageAsRead: the page as man shows it has every section, each with
// a body, the doc's words and the model's options, and no debris; what
// the doc says under "Flags" is not repeated.
func TestManPageAsRead(t *testing.T) {
	page := renderedPage(t)
	for _, p := range manProblems(t, page) {
		t.Error(p)
	}
	for _, want := range []string{"prog does things", "100% offline (a %d in the text", "prog --model m.bin a.wav", ".starts with a dot", "0 on success."} {
		if !strings.Contains(page, roffLine(want)) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "left out") {
		t.Error("page repeats the doc's Flags section")
	}
}
