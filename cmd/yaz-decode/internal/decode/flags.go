package decode

import (
	"slices"

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
	if c.OldOutput != "" {
		if !slices.Contains(formats, c.OldOutput) {
			return cli.Usagef("--output must be one of txt, json, srt or vtt but got %q (--output is the old spelling of --format)", c.OldOutput)
		}
		c.Output = c.OldOutput
	}
	if c.JSON {
		c.Output = "json"
	}
	c.JSON = c.Output == "json"
	return nil
}
