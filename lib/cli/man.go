package cli

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"
	mangokong "github.com/alecthomas/mango-kong"
	"github.com/muesli/mango"
	"github.com/muesli/roff"

	"github.com/yazses/yazses/lib/version"
)

// programs are the YazSes programs with a kong command line, for the man
// pages' SEE ALSO.
var programs = []string{"yaz-capture", "yaz-decode", "yaz-speak", "yazsesd", "yaz-mcp", "yaz-gate"}

// extraFlags are embedded into every command line by Parse.
type extraFlags struct {
	Man manFlag `hidden:"" help:"Print the man page (roff) and exit; make install writes it to share/man/man1."`
}

// manFlag prints the man page made from the kong model, like
// mangokong.ManFlag, with the sections every YazSes program shares.
type manFlag bool

// BeforeReset runs before any validation, so "yazsesd --man" needs no
// subcommand (as --version).
func (manFlag) BeforeReset(app *kong.Kong) error {
	fmt.Fprint(app.Stdout, manPage(app.Model))
	app.Exit(0)
	return nil
}

// manPage renders the man page (section 1, roff) of a kong application:
// name, description, options and commands from the model (mango-kong), then
// the arguments, the environment variables the flags read, the exit status,
// the version and the other programs.
func manPage(app *kong.Application) string {
	man := mangokong.NewManPage(1, app)
	dropHidden(&man.Root, app.Node)
	if args := positionals(app.Node); args != "" {
		man = man.WithSection("Arguments", args)
	}
	if env := environment(app.Node); env != "" {
		man = man.WithSection("Environment", env)
	}
	man = man.WithSection("Exit status", fmt.Sprintf(
		"%d on success; %d on a runtime failure (one line on stderr: \"%s: error: …\"); "+
			"%d on a usage error; %d for a failure that a restart cannot fix (yazsesd does not restart the program).",
		ExitOK, ExitFailure, app.Name, ExitUsage, ExitNoRestart))
	man = man.WithSection("Version", version.String(app.Name))
	var see []string
	for _, p := range programs {
		if p != app.Name {
			see = append(see, p+"(1)")
		}
	}
	man = man.WithSection("See also", strings.Join(see, ", ")+", yaz-fetch-model --help, and README.md and docs/ in the source.")
	page := man.Build(roff.NewDocument())
	// The title line: mango puts the description where man(7) puts the
	// manual's name; the footer says which program and version.
	if _, rest, ok := strings.Cut(page, "\n"); ok && strings.HasPrefix(page, ".TH ") {
		date := strings.Fields(page)[3]
		// Reproducible builds fix the date (reproducible-builds.org).
		if sec, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil {
			date = strconv.Quote(time.Unix(sec, 0).UTC().Format(time.DateOnly))
		}
		page = fmt.Sprintf(".TH %s 1 %s %q \"YazSes manual\"\n", strings.ToUpper(app.Name), date, version.String(app.Name)) + rest
	}
	page = asciiRoff(page)
	// Defaults under the builder's home (the model path) read as ~ on
	// anybody's machine.
	if home, err := os.UserHomeDir(); err == nil && len(home) > 1 {
		page = strings.ReplaceAll(page, roffEscape(home)+"/", "~/")
	}
	return page
}

// asciiRoff writes every character outside ASCII as a roff escape (\[u2026]
// for …), so the page renders the same with or without preconv.
func asciiRoff(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 {
			b.WriteRune(r)
			continue
		}
		fmt.Fprintf(&b, "\\[u%04X]", r)
	}
	return b.String()
}

// roffEscape escapes s as roff.Document.Text does.
func roffEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\e`), ".", `\&.`)
}

// dropHidden removes the hidden flags and commands that mango-kong lists.
func dropHidden(c *mango.Command, n *kong.Node) {
	for _, f := range n.Flags {
		if f.Hidden {
			delete(c.Flags, strings.TrimPrefix(f.Summary(), "--"))
		}
	}
	for _, child := range n.Children {
		if sub, ok := c.Commands[child.Summary()]; ok {
			dropHidden(sub, child)
		}
	}
}

func positionals(n *kong.Node) string {
	var b strings.Builder
	for _, p := range n.Positional {
		fmt.Fprintf(&b, "%s: %s\n", p.Summary(), p.Help)
	}
	return strings.TrimSpace(b.String())
}

// environment lists the variables that set flags, over every command.
func environment(n *kong.Node) string {
	seen := map[string]string{}
	var walk func(*kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			for _, e := range f.Envs {
				if _, ok := seen[e]; !ok {
					seen[e] = "--" + f.Name
				}
			}
		}
		for _, c := range n.Children {
			if !c.Hidden {
				walk(c)
			}
		}
	}
	walk(n)
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s sets %s.\n", k, seen[k])
	}
	return strings.TrimSpace(b.String())
}
