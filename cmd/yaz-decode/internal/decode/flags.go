package decode

import (
	"slices"
	"strings"

	"github.com/yazses/yazses/lib/cli"
)

// formats are the values of --format.
var formats = []string{"txt", "json", "srt", "vtt"}

// FormatFlags say what is written: files and streams, and the device
// list (txt or json there).
type FormatFlags struct {
	Output    string `name:"format" short:"f" help:"Output format: txt, json, srt or vtt (files); txt or json, one object per utterance (stream mode). -o/--output and --json, the old spellings, still work." default:"txt" enum:"txt,json,srt,vtt"`
	OldOutput string `name:"output" short:"o" hidden:"" help:"The old spelling of --format."`
	JSON      bool   `hidden:"" help:"Stream mode: print one JSON object per utterance (the old spelling of --format json)."`
}

// AfterApply makes the old spellings mean what the scheme's do (kong calls
// it after parsing): -o/--output FMT is -f/--format FMT, and --json is
// --format json, which in stream mode prints one JSON object per
// utterance.
func (c *FormatFlags) AfterApply() error {
	f, err := oldFormat(c.Output, c.OldOutput, c.JSON, formats...)
	c.Output, c.JSON = f, f == "json"
	return err
}

// oldFormat is the format the flags mean: -o/--output (old) over
// -f/--format, --json (old) over both; an old -o outside allowed is a
// usage error.
func oldFormat(format, old string, asJSON bool, allowed ...string) (string, error) {
	if old != "" {
		if !slices.Contains(allowed, old) {
			return format, cli.Usagef("--output must be one of %s but got %q (--output is the old spelling of --format)", strings.Join(allowed, ", "), old)
		}
		format = old
	}
	if asJSON {
		format = "json"
	}
	return format, nil
}
