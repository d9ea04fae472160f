package cli

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

type grammar struct {
	Backend string `help:"Backend." enum:"auto,alsa,null" default:"auto"`
	Out     string `help:"Output file."`
	Logging
	Version kong.VersionFlag `help:"Print the version and exit."`
	Sub     struct {
		Deep bool `help:"Deep."`
	} `cmd:"" help:"A subcommand."`
	Other struct{} `cmd:"" help:"Another."`
	Ctl   struct {
		Method []string `arg:"" help:"Method." predictor:"words:status,hold start,hold stop,hold toggle"`
		Format string   `help:"With watch." predictor:"words:json,waybar,polybar"`
	} `cmd:"" help:"Call a method."`
}

// complete runs Parse as bash runs a program for completion: COMP_LINE and
// COMP_POINT set, the arguments being what bash passes (ignored by kongplete).
func complete(t *testing.T, line string) (lines []string, code int, stderr string) {
	t.Helper()
	t.Setenv("COMP_LINE", line)
	t.Setenv("COMP_POINT", strconv.Itoa(len(line)))
	var out, errb bytes.Buffer
	_, code, done := Parse("prog", "A program.", &grammar{}, []string{"prog"}, &out, &errb, nil)
	if !done {
		t.Fatalf("COMP_LINE=%q: Parse went on to run the program", line)
	}
	return strings.Fields(out.String()), code, errb.String()
}

func TestCompletion(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"prog --log-l", []string{"--log-level"}},
		{"prog --backend ", []string{"alsa", "auto", "null"}},
		{"prog --log-format j", []string{"json"}},
		{"prog s", []string{"sub"}},
		{"prog sub --d", []string{"--deep"}},
		{"prog --ma", nil}, // the hidden --man is not offered
		// Words given in a predictor:"words:…" tag; a word of two
		// ("hold start") completes its second after its first.
		{"prog ctl ", []string{"hold", "status"}},
		{"prog ctl h", []string{"hold"}},
		{"prog ctl hold ", []string{"start", "stop", "toggle"}},
		{"prog ctl hold st", []string{"start", "stop"}},
		{"prog ctl status ", nil},
		{"prog ctl --format ", []string{"json", "polybar", "waybar"}},
		{"prog ctl --format w", []string{"waybar"}},
		{"prog ctl --format json ", []string{"hold", "status"}},
	} {
		t.Run(tc.line, func(t *testing.T) {
			got, code, stderr := complete(t, tc.line)
			slices.Sort(got)
			if code != 0 || stderr != "" {
				t.Errorf("exit %d, stderr %q; want 0 and nothing", code, stderr)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("completions of %q = %q, want %q", tc.line, got, tc.want)
			}
		})
	}
}

// TestNoCompletionWithoutCOMPLINE: a normal run parses as before.
func TestNoCompletionWithoutCOMPLINE(t *testing.T) {
	t.Setenv("COMP_LINE", "")
	var g grammar
	var out, errb bytes.Buffer
	k, code, done := Parse("prog", "A program.", &g, []string{"--backend", "alsa", "other"}, &out, &errb, nil)
	if done || code != 0 || k == nil {
		t.Fatalf("Parse = done %v, code %d; stderr %q", done, code, errb.String())
	}
	if g.Backend != "alsa" || out.Len() != 0 {
		t.Errorf("Backend %q, stdout %q", g.Backend, out.String())
	}
}

func TestVersionFlag(t *testing.T) {
	var out, errb bytes.Buffer
	_, code, done := Parse("prog", "A program.", &grammar{}, []string{"--version"}, &out, &errb, nil)
	if !done || code != 0 {
		t.Fatalf("--version: done %v, code %d", done, code)
	}
	if got := out.String(); !strings.HasPrefix(got, "prog ") || strings.Count(got, "\n") != 1 {
		t.Errorf("--version printed %q, want one line \"prog VERSION\"", got)
	}
}
