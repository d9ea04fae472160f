package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// manSections are the sections every page has (README: a man page for each
// program).
var manSections = []string{"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "FILES", "EXAMPLES", "SEE ALSO"}

var (
	manHeading = regexp.MustCompile(`^[A-Z][A-Z ]+$`)
	roffLeft   = regexp.MustCompile(`^\s*['.](SH|SS|PP|TP|IP|RS|RE|nf|fi|br|TH|B|I|BR|EX|EE)\b`)
)

// TestManPages: the page of every program, as make install writes it
// (PROGRAM --man; scripts/fetch-model.sh --man for yaz-fetch-model), reads
// under man -l with every section, each with a body, and no debris: no
// "%!", "(MISSING)", backslash or roff request left in the text, and groff
// has no warning. (yazsesd's page had "%!d(MISSING)oubled", every
// DESCRIPTION was empty, and yaz-fetch-model had none.)
func TestManPages(t *testing.T) {
	for _, name := range []string{"yaz-capture", "yaz-decode", "yaz-speak", "yaz-type", "yazsesd", "yaz-mcp", "yaz-gate", "yaz-fetch-model"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			prog := bin(name)
			if name == "yaz-fetch-model" {
				prog = filepath.Join(world.root, "scripts", "fetch-model.sh")
			}
			page, err := exec.Command(prog, "--man").Output()
			if err != nil {
				t.Fatalf("%s --man: %v", name, err)
			}
			warn := exec.Command("groff", "-man", "-Tutf8", "-ww", "-z")
			warn.Stdin = bytes.NewReader(page)
			if out, err := warn.CombinedOutput(); err != nil || len(out) > 0 {
				t.Errorf("groff warns: %v\n%s", err, out)
			}
			read := exec.Command("man", "-P", "cat", "-l", "-")
			read.Env = append(os.Environ(), "MANWIDTH=80", "LANG=C.UTF-8", "MAN_KEEP_FORMATTING=")
			read.Stdin = bytes.NewReader(page)
			var stderr bytes.Buffer
			read.Stderr = &stderr
			out, err := read.Output()
			if err != nil || stderr.Len() > 0 {
				t.Fatalf("man -l: %v\n%s", err, stderr.String())
			}
			body := map[string]int{}
			current := ""
			for _, line := range strings.Split(string(out), "\n") {
				switch {
				case strings.Contains(line, "%!") || strings.Contains(line, "(MISSING)"):
					t.Errorf("format debris: %q", line)
				case strings.Contains(line, `\`):
					t.Errorf("stray backslash: %q", line)
				case roffLeft.MatchString(line):
					t.Errorf("roff left as text: %q", line)
				}
				if manHeading.MatchString(line) {
					current = line
					if _, dup := body[current]; dup {
						t.Errorf("section %s twice", current)
					}
					body[current] = 0
				} else if current != "" && strings.TrimSpace(line) != "" {
					body[current]++
				}
			}
			for sec, n := range body {
				if n == 0 {
					t.Errorf("section %s is empty", sec)
				}
			}
			for _, sec := range manSections {
				if _, ok := body[sec]; !ok {
					t.Errorf("no section %s", sec)
				}
			}
			if t.Failed() {
				t.Logf("the page as man shows it:\n%s", out)
			}
		})
	}
}
