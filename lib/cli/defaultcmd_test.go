package cli

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// defaultGrammar has a default command that takes arguments (run, hidden:
// "prog FILE…") beside a command of its own flags (serve).
type defaultGrammar struct {
	Run   runCmd `cmd:"" default:"withargs" hidden:"" help:"Read files."`
	Serve struct {
		Port int `help:"Port to serve on."`
	} `cmd:"" help:"Serve frames."`
	Logging
}

func (*defaultGrammar) Help() string { return "Old spellings: --serve is serve." }

func (*defaultGrammar) OldFlags() []OldFlag { return []OldFlag{{"--serve", "prog serve"}} }

type runCmd struct {
	Files  []string `arg:"" optional:"" help:"Files to read."`
	Format string   `short:"f" help:"Output format." enum:"txt,json" default:"txt" env:"PROG_FORMAT"`
}

// Validate refuses several files as JSON (a check of the command's own).
func (r *runCmd) Validate() error {
	if len(r.Files) > 1 && r.Format == "json" {
		return Usagef("-f json takes one file")
	}
	return nil
}

// TestDefaultCommandErrors: an error of the default command's own check
// does not name the command, which nobody typed.
func TestDefaultCommandErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-f", "json", "a.wav", "b.wav"}, "prog: error: -f json takes one file\n"},
		{[]string{"-f", "json", "serve"}, "prog: error: --format is given before serve: a command's flags follow its name (prog serve --help lists them)\n"},
	} {
		_, errb, code := parseDefault(t, tc.args...)
		if code != ExitUsage || errb != tc.want {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, errb, tc.want)
		}
	}
}

func parseDefault(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	_, code, _ = Parse("prog", "A program.", &defaultGrammar{}, args, &out, &errb, nil)
	return out.String(), errb.String(), code
}

// TestDefaultCommandHelp: --help at the top shows the default command's
// arguments and flags as the program's, the other commands, and the
// grammar's Help; a command's --help shows its own flags only.
func TestDefaultCommandHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"a.wav", "--help"}, {"-f", "json", "--help"}} {
		out, errb, code := parseDefault(t, args...)
		if code != 0 {
			t.Fatalf("%q: exit %d, stderr %q", args, code, errb)
		}
		for _, want := range []string{"Usage: prog [<files> ...] [flags]", "prog <command> [flags]", "A program.", "Files to read.",
			"-f, --format=", "--log-level=", "Commands:", "serve", "Serve frames.", "Old spellings: --serve is serve.",
			"Deprecated flags (they still work, until the next release):\n  --serve  deprecated: use prog serve\n",
			`Run "prog <command> --help"`} {
			if !strings.Contains(out, want) {
				t.Errorf("%q: help has no %q:\n%s", args, want, out)
			}
		}
		if strings.Contains(out, "--port") || strings.Contains(out, "  run") {
			t.Errorf("%q: help shows serve's flag or the hidden command:\n%s", args, out)
		}
	}
	out, _, code := parseDefault(t, "serve", "--help")
	if code != 0 || !strings.Contains(out, "--port=") || strings.Contains(out, "--format") || !strings.Contains(out, "--log-level") || strings.Contains(out, "Deprecated") {
		t.Errorf("serve --help: exit %d, want serve's flags and the shared ones, not the default command's:\n%s", code, out)
	}
}

// TestDefaultCommandCompletion: the default command's flags complete
// before a command is named, and not after another one; the hidden
// default command's name is not offered.
func TestDefaultCommandCompletion(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"prog --fo", []string{"--format"}},
		{"prog -f ", []string{"json", "txt"}},
		{"prog --log-l", []string{"--log-level"}},
		{"prog s", []string{"serve"}},
		{"prog r", nil},
		{"prog serve --fo", nil},
		{"prog serve --p", []string{"--port"}},
		{"prog serve --log-l", []string{"--log-level"}},
	} {
		t.Setenv("COMP_LINE", tc.line)
		t.Setenv("COMP_POINT", strconv.Itoa(len(tc.line)))
		out, errb, code := parseDefault(t, "prog")
		got := strings.Fields(out)
		slices.Sort(got)
		if code != 0 || !slices.Equal(got, tc.want) {
			t.Errorf("COMP_LINE=%q: %q (exit %d, stderr %q), want %q", tc.line, got, code, errb, tc.want)
		}
	}
}

// TestDefaultCommandManPage: the default command's flags and arguments are
// the page's OPTIONS and ARGUMENTS, its variables in ENVIRONMENT; COMMANDS
// holds the others with their own flags.
func TestDefaultCommandManPage(t *testing.T) {
	page, errb, code := parseDefault(t, "--man")
	if code != 0 {
		t.Fatalf("--man: exit %d, stderr %q", code, errb)
	}
	opts, rest, _ := strings.Cut(page, ".SH OPTIONS\n")
	_ = opts
	options, rest, _ := strings.Cut(rest, ".SH ARGUMENTS\n")
	args, rest, _ := strings.Cut(rest, ".SH COMMANDS\n")
	cmds, rest, _ := strings.Cut(rest, ".SH DEPRECATED FLAGS\n")
	deprecated, env, _ := strings.Cut(rest, ".SH EXIT STATUS\n")
	for _, c := range []struct{ sec, name, want string }{
		{options, "OPTIONS", `\fB\-f\fR, \fB\-\-format\fR=`},
		{options, "OPTIONS", `\fB\-\-log\-level\fR=`},
		{args, "ARGUMENTS", "Files to read."},
		{cmds, "COMMANDS", `.SS "prog serve"`},
		{cmds, "COMMANDS", `\fB\-\-port\fR=`},
		{deprecated, "DEPRECATED FLAGS", ".TP\n\\fB\\-\\-serve\\fR\nDeprecated: use prog serve.\n"},
		{env, "ENVIRONMENT", `PROG_FORMAT\fR
sets \-\-format`},
	} {
		if !strings.Contains(c.sec, c.want) {
			t.Errorf("%s has no %q:\n%s", c.name, c.want, page)
		}
	}
	if strings.Contains(cmds, `"run`) || strings.Contains(options, "port") {
		t.Errorf("the default command is listed as a command, or serve's flag as the program's:\n%s", page)
	}
}

// explained is a command that explains its parse errors.
type explained struct{}

func (*explained) ExplainParseError(err error) error { return Usagef("explained: %v", err) }

// TestParseErrorExplainer: a command's parse error goes through its
// ExplainParseError, once, on the one error line (exit 2); another
// command's does not.
func TestParseErrorExplainer(t *testing.T) {
	var g struct {
		Frames explained `cmd:"" help:"Reads frames."`
		Files  struct {
			Paths []string `arg:"" optional:""`
		} `cmd:"" help:"Reads files."`
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frames", "a.wav"}, "prog: error: explained: unexpected argument a.wav\n"},
		{[]string{"frames", "--nope"}, "prog: error: explained: unknown flag --nope\n"},
		{[]string{"files", "--nope"}, "prog: error: unknown flag --nope\n"},
	} {
		var out, errb bytes.Buffer
		_, code, done := Parse("prog", "A program.", &g, tc.args, &out, &errb, nil)
		if !done || code != ExitUsage || errb.String() != tc.want {
			t.Errorf("%q: done %v, exit %d, stderr %q; want exit 2 and %q", tc.args, done, code, errb.String(), tc.want)
		}
	}
}
