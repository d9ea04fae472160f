package cli

import (
	"fmt"
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

// helpPrinter is kong's help, except for a program whose default command
// takes arguments: at the top (no command named, or the default one) it
// shows that command's arguments and flags as the program's, then the
// other commands, then what the program's grammar says in its Help method
// (kong.HelpProvider: old spellings, say).
func helpPrinter(options kong.HelpOptions, ctx *kong.Context) error {
	app := ctx.Model
	def := defaultCmd(app.Node)
	if sel := ctx.Selected(); def == nil || (sel != nil && sel != def) {
		return kong.DefaultHelpPrinter(options, ctx)
	}
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
	if len(cmds) > 0 {
		fmt.Fprintf(w, "\nRun \"%s <command> --help\" for more information on a command.\n", app.Name)
	}
	return nil
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
