package cli

import (
	"fmt"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/yazses/yazses/lib/version"
)

// programs are the YazSes programs, for the man pages' SEE ALSO.
var programs = []string{"yaz-capture", "yaz-decode", "yaz-speak", "yaz-type", "yazsesd", "yaz-mcp", "yaz-gate", "yaz-fetch-model"}

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

// manPage renders the man page (section 1, roff) of a kong application.
// The words come from the program's doc.go (SetDoc): what it says before
// its first heading is the DESCRIPTION, and each "# Heading" is a section
// of that name (Synopsis, Files, Examples, Exit status, …; "Flags" is left
// out, since OPTIONS is made from the kong model, complete and exact). The
// kong model gives NAME, OPTIONS, COMMANDS (each with its own flags),
// DEPRECATED FLAGS (the doc's section of that name, then the grammar's
// OldFlags, each in bold) and ENVIRONMENT; then VERSION and SEE ALSO.
func manPage(app *kong.Application) string {
	secs := docSections(manDoc)
	var b strings.Builder
	date := time.Now().UTC().Format(time.DateOnly)
	// Reproducible builds fix the date (reproducible-builds.org).
	if sec, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil {
		date = time.Unix(sec, 0).UTC().Format(time.DateOnly)
	}
	fmt.Fprintf(&b, ".TH %s 1 %q %q \"YazSes manual\"\n", strings.ToUpper(app.Name), date, version.String(app.Name))
	b.WriteString(".SH NAME\n")
	fmt.Fprintf(&b, "%s \\- %s\n", roffText(app.Name), roffText(strings.TrimSuffix(app.Help, ".")))
	b.WriteString(".SH SYNOPSIS\n")
	if body, ok := secs.take("synopsis"); ok {
		b.WriteString(body)
	} else {
		b.WriteString(synopsis(app.Node))
	}
	b.WriteString(".SH DESCRIPTION\n")
	desc, _ := secs.take("")
	more, _ := secs.take("description")
	if desc+more == "" {
		desc = ".PP\n" + roffText(app.Help) + "\n"
	}
	b.WriteString(desc + more)
	secs.take("flags")
	secs.take("options")
	deprecated, _ := secs.take("deprecated flags")
	if old := oldFlags(app); len(old) > 0 {
		for _, o := range old {
			deprecated += ".TP\n" + `\fB` + roffText(o.Flag) + `\fR` + "\n" + roffText("Deprecated: use "+o.Now+".") + "\n"
		}
	}
	files, _ := secs.take("files")
	examples, _ := secs.take("examples")
	exit, hasExit := secs.take("exit status")
	env, _ := secs.take("environment")
	seeAlso, _ := secs.take("see also")
	for _, s := range secs {
		fmt.Fprintf(&b, ".SH %s\n%s", roffText(strings.ToUpper(s.name)), s.body)
	}
	// A default command that takes arguments (default:"withargs") is the
	// program's own: its flags and arguments are the page's.
	top := app.Node
	flags := top.Flags
	if def := defaultCmd(top); def != nil {
		flags = append(append([]*kong.Flag{}, flags...), def.Flags...)
		top = def
	}
	b.WriteString(".SH OPTIONS\n")
	b.WriteString(flagList(flags))
	if args := positionals(top); args != "" {
		b.WriteString(".SH ARGUMENTS\n" + args)
	}
	if cmds := commands(app.Node); cmds != "" {
		b.WriteString(".SH COMMANDS\n" + cmds)
	}
	if deprecated != "" {
		b.WriteString(".SH DEPRECATED FLAGS\n" + deprecated)
	}
	if !hasExit {
		exit = ".PP\n" + roffText(fmt.Sprintf(
			"%d on success; %d on a runtime failure (one line on stderr: \"%s: error: …\"); "+
				"%d on a usage error; %d for a failure that a restart cannot fix (yazsesd does not restart the program).",
			ExitOK, ExitFailure, app.Name, ExitUsage, ExitNoRestart)) + "\n"
	}
	b.WriteString(".SH EXIT STATUS\n" + exit)
	if e := environment(app.Node); e != "" || env != "" {
		b.WriteString(".SH ENVIRONMENT\n" + env + e)
	}
	if files != "" {
		b.WriteString(".SH FILES\n" + files)
	}
	b.WriteString(".SH VERSION\n.PP\n" + roffText(version.String(app.Name)) + "\n")
	if examples != "" {
		b.WriteString(".SH EXAMPLES\n" + examples)
	}
	var see []string
	for _, p := range programs {
		if p != app.Name {
			see = append(see, `\fB`+roffText(p)+`\fR(1)`)
		}
	}
	b.WriteString(".SH SEE ALSO\n" + seeAlso + ".PP\n" + strings.Join(see, ", ") +
		", and README.md and docs/ in the source.\n")
	page := asciiRoff(b.String())
	// Defaults under the builder's home (the model path) read as ~ on
	// anybody's machine.
	if home, err := os.UserHomeDir(); err == nil && len(home) > 1 {
		page = strings.ReplaceAll(page, roffText(home)+"/", "~/")
	}
	return page
}

// manDoc is the program's doc.go, given by SetDoc.
var manDoc string

// SetDoc gives the man page its words: src is the program's doc.go (its
// package comment, in Go doc comment syntax), which package main embeds
// and hands over in an init function, before anything is parsed.
func SetDoc(src string) { manDoc = src }

// section is one "# Heading" of a doc comment, rendered as roff; the text
// before the first heading has the name "".
type section struct{ name, body string }

type sections []section

// take removes the section called name (any letter case) and returns its
// body.
func (ss *sections) take(name string) (string, bool) {
	for i, s := range *ss {
		if strings.EqualFold(s.name, name) {
			*ss = slices.Delete(*ss, i, i+1)
			return s.body, true
		}
	}
	return "", false
}

// docSections reads the package comment of a Go file and renders each of
// its sections as roff. A comment that does not parse gives none.
func docSections(src string) sections {
	if src == "" {
		return nil
	}
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", src, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil || f.Doc == nil {
		return nil
	}
	text := f.Doc.Text()
	// "Command yazsesd is …" is the Go convention; a man page says
	// "yazsesd is …".
	text = strings.TrimPrefix(text, "Command ")
	var p comment.Parser
	doc := p.Parse(text)
	ss := sections{{}}
	for _, blk := range doc.Content {
		if h, ok := blk.(*comment.Heading); ok {
			ss = append(ss, section{name: plain(h.Text)})
			continue
		}
		ss[len(ss)-1].body += roffBlock(blk)
	}
	return ss
}

// roffBlock renders one block of a doc comment.
func roffBlock(blk comment.Block) string {
	switch blk := blk.(type) {
	case *comment.Paragraph:
		return ".PP\n" + roffText(plain(blk.Text)) + "\n"
	case *comment.Code:
		var b strings.Builder
		b.WriteString(".PP\n.RS 4\n.nf\n")
		for _, line := range strings.Split(strings.TrimRight(blk.Text, "\n"), "\n") {
			b.WriteString(roffLine(line) + "\n")
		}
		b.WriteString(".fi\n.RE\n")
		return b.String()
	case *comment.List:
		var b strings.Builder
		for i, item := range blk.Items {
			mark := `\(bu`
			if item.Number != "" {
				mark = strconv.Itoa(i+1) + "."
			}
			b.WriteString(".IP " + mark + " 4\n")
			for j, c := range item.Content {
				if p, ok := c.(*comment.Paragraph); ok {
					if j > 0 {
						b.WriteString(".IP \"\" 4\n")
					}
					b.WriteString(roffText(plain(p.Text)) + "\n")
				}
			}
		}
		return b.String()
	}
	return ""
}

// plain is the text of inline doc comment content, links as their text.
func plain(ts []comment.Text) string {
	var b strings.Builder
	for _, t := range ts {
		switch t := t.(type) {
		case comment.Plain:
			b.WriteString(string(t))
		case comment.Italic:
			b.WriteString(string(t))
		case *comment.Link:
			b.WriteString(plain(t.Text))
		case *comment.DocLink:
			b.WriteString(plain(t.Text))
		}
	}
	return b.String()
}

// roffText escapes text for a filled roff line or lines: backslashes,
// hyphens as \- (so that flags copy as ASCII minus), a control character
// at the start of a line, and the newlines of a paragraph (joined).
func roffText(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return roffLine(s)
}

// roffLine escapes one line of text for roff, keeping its spaces.
func roffLine(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// synopsis is a SYNOPSIS made from the model, for a program whose doc.go
// has none.
func synopsis(n *kong.Node) string {
	var b strings.Builder
	line := func(n *kong.Node) {
		fmt.Fprintf(&b, ".br\n\\fB%s\\fR [\\fIoptions\\fR]", roffText(n.FullPath()))
		for _, p := range n.Positional {
			fmt.Fprintf(&b, " %s", roffText(p.Summary()))
		}
		b.WriteString("\n")
	}
	var walk func(*kong.Node)
	walk = func(n *kong.Node) {
		if len(n.Children) == 0 {
			line(n)
		}
		for _, c := range n.Children {
			if !c.Hidden {
				walk(c)
			}
		}
	}
	walk(n)
	return strings.TrimPrefix(b.String(), ".br\n")
}

// flagList renders the visible flags as a tagged list: the spellings, the
// help, the default, the variable that sets it, the old names kept.
func flagList(flags []*kong.Flag) string {
	var b strings.Builder
	for _, f := range flags {
		if f.Hidden {
			continue
		}
		b.WriteString(".TP\n" + flagSpelling(f) + "\n")
		help := strings.TrimSpace(f.Help)
		if help != "" && !strings.HasSuffix(help, ".") && !strings.HasSuffix(help, ")") {
			help += "."
		}
		if f.HasDefault && f.Default != "" && !f.IsBool() {
			help += " Default: " + f.Default + "."
		}
		if len(f.Envs) > 0 {
			help += " Environment: " + strings.Join(f.Envs, ", ") + "."
		}
		if len(f.Aliases) > 0 {
			help += " Also spelt --" + strings.Join(f.Aliases, ", --") + " (the old name, still accepted)."
		}
		b.WriteString(roffText(help) + "\n")
	}
	return b.String()
}

// flagSpelling is "-f, --format=FMT" in roff.
func flagSpelling(f *kong.Flag) string {
	var s string
	if f.Short != 0 {
		s = `\fB` + roffText("-"+string(f.Short)) + `\fR, `
	}
	name := "--" + f.Name
	if f.Tag != nil && f.Tag.Negatable != "" {
		name = "--[no-]" + f.Name
	}
	s += `\fB` + roffText(name) + `\fR`
	if !f.IsBool() && !f.IsCounter() {
		ph := f.PlaceHolder
		switch {
		case ph != "":
		case f.Enum != "":
			ph = strings.Join(strings.FieldsFunc(f.Enum, func(r rune) bool { return r == ',' || r == ' ' }), "|")
		default:
			ph = strings.ToUpper(f.Name)
		}
		s += "=" + `\fI` + roffText(ph) + `\fR`
	}
	return s
}

// commands renders every visible command under n: its spelling, its help
// and details, its arguments and its own flags.
func commands(n *kong.Node) string {
	var b strings.Builder
	var walk func(*kong.Node)
	walk = func(n *kong.Node) {
		for _, c := range n.Children {
			if c.Hidden || c == defaultCmd(n) { // the default's flags are OPTIONS
				continue
			}
			b.WriteString(".SS \"" + roffText(c.FullPath()))
			for _, p := range c.Positional {
				b.WriteString(" " + roffText(p.Summary()))
			}
			b.WriteString("\"\n")
			if c.Help != "" {
				b.WriteString(".PP\n" + roffText(c.Help) + "\n")
			}
			for _, para := range strings.Split(c.Detail, "\n\n") {
				if strings.TrimSpace(para) != "" {
					b.WriteString(".PP\n" + roffText(para) + "\n")
				}
			}
			if args := positionals(c); args != "" {
				b.WriteString(args)
			}
			if fl := flagList(c.Flags); fl != "" {
				b.WriteString(".PP\nOptions:\n.RS 4\n" + fl + ".RE\n")
			}
			walk(c)
		}
	}
	walk(n)
	return b.String()
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

// positionals renders the arguments of n as a tagged list.
func positionals(n *kong.Node) string {
	var b strings.Builder
	for _, p := range n.Positional {
		fmt.Fprintf(&b, ".TP\n\\fI%s\\fR\n%s\n", roffText(p.Summary()), roffText(p.Help))
	}
	return b.String()
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
			if !c.Hidden || c == defaultCmd(n) {
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
		fmt.Fprintf(&b, ".TP\n\\fB%s\\fR\nsets %s.\n", roffText(k), roffText(seen[k]))
	}
	return b.String()
}
