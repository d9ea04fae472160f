package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/alecthomas/kong"
	shellcomplete "github.com/posener/complete"
	"github.com/willabides/kongplete"
)

// defaultCmd is the command of n that runs when none is named and that
// takes arguments and flags without its name (default:"withargs"), or nil.
func defaultCmd(n *kong.Node) *kong.Node {
	if d := n.DefaultCmd; d != nil && d.Tag != nil && d.Tag.Default == "withargs" {
		return d
	}
	return nil
}

// OldFlag is a flag a program took before and takes still, for a while,
// as another spelling of what replaced it (Now: "yaz-decode serve").
type OldFlag struct{ Flag, Now string }

// OldFlagger is a grammar with old flags, which the program rewrites
// before parsing (they are not in the kong model): --help lists them at
// its end, and the man page under DEPRECATED FLAGS.
type OldFlagger interface{ OldFlags() []OldFlag }

// oldFlags are the old flags of app's grammar, if it has any.
func oldFlags(app *kong.Application) []OldFlag {
	if app.Target.IsValid() && app.Target.CanAddr() {
		if o, ok := app.Target.Addr().Interface().(OldFlagger); ok {
			return o.OldFlags()
		}
	}
	return nil
}

// helpPrinter is kong's help, except for a program whose default command
// takes arguments: at the top (no command named, or the default one) it
// shows that command's arguments and flags as the program's, then the
// other commands, then what the grammar says in its Help method
// (kong.HelpProvider). At the top, the old flags (OldFlagger) come last.
func helpPrinter(options kong.HelpOptions, ctx *kong.Context) error {
	app := ctx.Model
	def := defaultCmd(app.Node)
	sel := ctx.Selected()
	top := sel == nil || sel == def
	switch {
	case def != nil && top:
		return defaultHelp(options, ctx, def)
	case top:
		if err := kong.DefaultHelpPrinter(options, ctx); err != nil {
			return err
		}
		return printOldFlags(ctx.Stdout, app)
	}
	return kong.DefaultHelpPrinter(options, ctx)
}

// defaultHelp is the help at the top of a program whose default command
// def takes arguments.
func defaultHelp(options kong.HelpOptions, ctx *kong.Context, def *kong.Node) error {
	app := ctx.Model
	dctx, err := kong.Trace(ctx.Kong, []string{def.Name})
	if err != nil {
		return err
	}
	w := ctx.Stdout
	cmds := others(app.Node, def)
	fmt.Fprintf(w, "Usage: %s %s\n", app.Name, strings.TrimSpace(strings.TrimPrefix(def.Summary(), def.Name)))
	if len(cmds) > 0 {
		fmt.Fprintf(w, "       %s <command> [flags]\n", app.Name)
	}
	if app.Help != "" {
		fmt.Fprintf(w, "\n%s\n", app.Help)
	}
	options.NoAppSummary = true
	if err := kong.DefaultHelpPrinter(options, dctx); err != nil {
		return err
	}
	if len(cmds) > 0 {
		fmt.Fprint(w, "\nCommands:\n")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, c := range cmds {
			fmt.Fprintf(tw, "  %s\t%s\n", c.Name, c.Help)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if app.Detail != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(app.Detail, "\n"))
	}
	if err := printOldFlags(w, app); err != nil {
		return err
	}
	if len(cmds) > 0 {
		fmt.Fprintf(w, "\nRun \"%s <command> --help\" for more information on a command.\n", app.Name)
	}
	return nil
}

// printOldFlags lists the old flags of app, if any, with what replaced
// each.
func printOldFlags(w io.Writer, app *kong.Application) error {
	old := oldFlags(app)
	if len(old) == 0 {
		return nil
	}
	fmt.Fprint(w, "\nDeprecated flags (they still work, until the next release):\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, o := range old {
		fmt.Fprintf(tw, "  %s\tdeprecated: use %s\n", o.Flag, o.Now)
	}
	return tw.Flush()
}

// others are the visible commands of n but def.
func others(n, def *kong.Node) []*kong.Node {
	var out []*kong.Node
	for _, c := range n.Children {
		if c != def && !c.Hidden && c.Type == kong.CommandNode {
			out = append(out, c)
		}
	}
	return out
}

// answerCompletion answers a shell's completion request (COMP_LINE set), as
// kongplete.Complete does, and reports whether it did. A default command
// that takes arguments lends its flags and arguments to the top, where
// they are given without its name.
func answerCompletion(parser *kong.Kong, opts ...kongplete.Option) (answered bool, err error) {
	cmd, err := kongplete.Command(parser, opts...)
	if err != nil {
		return false, err
	}
	if def := defaultCmd(parser.Model.Node); def != nil {
		dc, err := kongplete.Command(&kong.Kong{Model: &kong.Application{Node: def}}, opts...)
		if err != nil {
			return false, err
		}
		if cmd.Flags == nil {
			cmd.Flags = shellcomplete.Flags{}
		}
		for f, p := range dc.GlobalFlags {
			if _, ok := cmd.GlobalFlags[f]; !ok {
				cmd.Flags[f] = p
			}
		}
		cmd.Args = dc.Args
		delete(cmd.Sub, def.Name)
	}
	c := shellcomplete.New(parser.Model.Name, cmd)
	c.Out = parser.Stdout
	return c.Complete(), nil
}
