package app

import (
	"bytes"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/yazses/yazses/lib/cli"
)

// TestFlagSpellings: status -f/--format json and the old --json; run
// -c/--config; ctl watch -f.
func TestFlagSpellings(t *testing.T) {
	vars := kong.Vars{"config_path": "/nonexistent/config.toml"}
	for _, tc := range []struct {
		args  []string
		check func(c *CLI) bool
	}{
		{[]string{"status", "-f", "json"}, func(c *CLI) bool { return c.Status.JSON }},
		{[]string{"status", "--format=json"}, func(c *CLI) bool { return c.Status.JSON }},
		{[]string{"status", "--json"}, func(c *CLI) bool { return c.Status.JSON }}, // old
		{[]string{"status"}, func(c *CLI) bool { return !c.Status.JSON }},
		{[]string{"run", "-c", "/x.toml"}, func(c *CLI) bool { return c.Run.Config == "/x.toml" }},
		{[]string{"ctl", "watch", "-f", "waybar"}, func(c *CLI) bool { return c.Ctl.Format == "waybar" }},
	} {
		var c CLI
		var out, errb bytes.Buffer
		if _, code, done := cli.Parse(name, "", &c, tc.args, &out, &errb, vars); done {
			t.Errorf("parse %q: exit %d: %s", tc.args, code, errb.String())
			continue
		}
		if !tc.check(&c) {
			t.Errorf("%q: parsed as %+v", tc.args, c)
		}
	}
}
