package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestFlagScheme: the flag scheme of docs/flags.md holds across the
// programs (each idea has the same long and short spelling wherever it
// appears in a --help), and every old spelling that scripts may use is
// still accepted (kong rejects an unknown flag before --help, with exit
// 2). yaz-decode -o was a format and yaz-speak --out a file; yaz-decode
// --json and -o json were two flags for one idea; yaz-decode's modes were
// flags (--serve) before they were commands (serve).
func TestFlagScheme(t *testing.T) {
	for _, tc := range []struct {
		prog []string // program and command
		want []string // spellings its --help shows
		old  [][]string
	}{
		{[]string{"yaz-capture"}, []string{"-f, --format=", "-d, --device=", "-s, --seconds="}, nil},
		{[]string{"yaz-speak"}, []string{"-f, --format=", "-o, --output=", "-d, --device="}, [][]string{{"--out", "x.wav"}, {"--out=-"}}},
		{[]string{"yaz-decode"}, []string{"-f, --format=", "-m, --model=", "-l, --language=", "-t, --threads="}, [][]string{{"-o", "srt"}, {"--output", "json"}, {"--output=vtt"}, {"--json"}}},
		{[]string{"yaz-decode", "serve"}, []string{"-m, --model=", "-l, --language=", "-t, --threads="}, [][]string{{"--serve"}}},
		{[]string{"yaz-decode", "vad-stream"}, []string{"--vad-model="}, [][]string{{"--vad-stream"}}},
		{[]string{"yaz-decode", "devices"}, []string{"-f, --format=", "-m, --model="}, [][]string{{"--list-devices"}, {"--json"}, {"-o", "json"}}},
		{[]string{"yaz-mcp"}, []string{"-c, --config=", "-m, --model="}, nil},
		{[]string{"yazsesd", "run"}, []string{"-c, --config="}, nil},
		{[]string{"yazsesd", "status"}, []string{"-f, --format="}, [][]string{{"--json"}}},
		{[]string{"yazsesd", "ctl", "watch"}, []string{"-f, --format="}, nil},
	} {
		name := strings.Join(tc.prog, " ")
		help, err := exec.Command(bin(tc.prog[0]), append(tc.prog[1:], "--help")...).Output()
		if err != nil {
			t.Errorf("%s --help: %v", name, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(string(help), w) {
				t.Errorf("%s --help has no %q:\n%s", name, w, help)
			}
		}
		// Every program: the same spelling for each idea, never another
		// short letter for it nor another idea on its letter.
		for _, pair := range []string{"-f, --format", "-o, --output", "-m, --model", "-l, --language", "-d, --device", "-c, --config", "-t, --threads"} {
			short, long, _ := strings.Cut(pair, ", ")
			for _, line := range strings.Split(string(help), "\n") {
				f := strings.Fields(line)
				if len(f) < 2 || !strings.HasPrefix(f[0], "-") || len(f[0]) != 3 {
					continue
				}
				got := strings.TrimSuffix(f[0], ",") + " " + strings.SplitN(f[1], "=", 2)[0]
				if (strings.HasPrefix(got, short+" ") || strings.HasSuffix(got, " "+long)) && got != short+" "+long {
					t.Errorf("%s: %q breaks the scheme (%s)", name, got, pair)
				}
			}
		}
		for _, old := range tc.old {
			args := append(append(append([]string{}, tc.prog[1:]...), old...), "--help")
			err := exec.Command(bin(tc.prog[0]), args...).Run()
			var exit *exec.ExitError
			if errors.As(err, &exit) || err != nil {
				t.Errorf("%s %s --help: %v, want the old spelling accepted", name, strings.Join(old, " "), err)
			}
		}
	}
}

// heading is a Markdown heading, or one of a doc comment ("// # Files").
var heading = regexp.MustCompile(`^(?://\s*)?#+\s+(.*)$`)

// TestDocsUseCurrentSpellings: what a user reads and copies (the README,
// docs/, the man pages' examples in each program's doc.go, make demo's
// script) shows the current spelling of each flag, and yaz-decode's modes
// as the commands they are (yaz-decode serve, not --serve). The old ones
// still work, and only docs/flags.md and a section about them (a heading
// that says "Deprecated" or "Old spellings") name them, as old. make demo
// once showed a new user yaz-decode --json, -o srt and yaz-speak --out.
func TestDocsUseCurrentSpellings(t *testing.T) {
	files := []string{"../../README.md", "../../scripts/demo.sh"}
	for _, glob := range []string{"../../docs/*.md", "../../cmd/*/doc.go"} {
		m, err := filepath.Glob(glob)
		if err != nil || len(m) == 0 {
			t.Fatalf("glob %s: %v, %d files", glob, err, len(m))
		}
		files = append(files, m...)
	}
	old := []struct {
		prog string
		re   *regexp.Regexp
	}{
		{"yaz-decode", regexp.MustCompile(`(^|\s)(-o|--output)[ =](txt|text|srt|vtt|json)\b`)},
		{"yaz-decode", regexp.MustCompile(`(^|\s)--json\b`)},
		{"yaz-speak", regexp.MustCompile(`(^|\s)--out([ =]|$)`)},
		{"yazsesd status", regexp.MustCompile(`(^|\s)--json\b`)},
		{"yaz-decode", regexp.MustCompile("(^|[\\s`])--(serve|vad-stream|list-devices)\\b")},
	}
	checked := 0
	for _, f := range files {
		if filepath.Base(f) == "flags.md" {
			continue // the one place the old spellings are listed, as old
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		oldSection := false
		for i, line := range strings.Split(string(b), "\n") {
			if h := heading.FindStringSubmatch(line); h != nil {
				oldSection = strings.Contains(h[1], "Deprecated") || strings.Contains(h[1], "Old spellings")
			}
			if oldSection {
				continue
			}
			for _, o := range old {
				if !strings.Contains(line, o.prog) {
					continue
				}
				checked++
				if o.re.MatchString(line) {
					t.Errorf("%s:%d shows an old spelling of a %s flag (docs/flags.md has the current one):\n%s", f, i+1, o.prog, line)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d lines that name a program were checked: the files moved?", checked)
	}
}
