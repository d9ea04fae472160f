package decode

import (
	"slices"

	"github.com/yazses/yazses/lib/cli"
)

// formats are the values of --format.
var formats = []string{"txt", "json", "srt", "vtt"}

// AfterApply makes the old spellings mean what the scheme's do (kong calls
// it after parsing): -o/--output FMT is -f/--format FMT, and --json is
// --format json, which in stream mode prints one JSON object per
// utterance.
func (c *CLI) AfterApply() error {
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
