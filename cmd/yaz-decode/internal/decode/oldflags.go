package decode

import (
	"slices"
	"strconv"
	"strings"

	"github.com/yazses/yazses/lib/cli"
)

// oldModes are the flags that chose a mode before the modes were commands,
// still accepted for one release: each stands for its command. They are
// in the order the old yaz-decode weighed them: --list-devices ran
// whatever else was given ("yazsesd config check" still appends it to
// children.decode, "yaz-decode --serve"), and --serve with --vad-stream
// was an error.
var oldModes = []struct{ flag, cmd string }{
	{"--list-devices", "devices"},
	{"--serve", "serve"},
	{"--vad-stream", "vad-stream"},
}

// commands are the names of the commands: a word that names one at the
// front of the arguments is that command, not a file.
var commands = []string{"transcribe", "serve", "vad-stream", "devices"}

// commandArgs rewrites the old spellings of the modes into the commands
// they stand for, before kong sees the arguments: "--serve -m M" is
// "serve -m M", "-f json --list-devices" is "devices -f json". The flag
// may stand anywhere before "--" (after it, it is a file's name), as
// --serve=true (--serve=false is no mode). Everything else is left for
// the parser, which knows each command's flags: "--serve a.wav" is "serve
// a.wav", refused there. --list-devices runs instead of whatever other
// mode was named, with the flags given, as before; --serve with
// --vad-stream is refused here, as before (exit 2).
func commandArgs(args []string) ([]string, error) {
	rest, found, err := takeOldModes(args)
	if err != nil || len(found) == 0 {
		return rest, err
	}
	cmd := found[0]
	switch {
	case slices.Contains(found, "devices"):
		cmd = "devices"
	case len(found) > 1:
		return nil, cli.Usagef("--vad-stream and --serve are two modes: pick one (yaz-decode vad-stream or yaz-decode serve)")
	}
	switch {
	case len(rest) > 0 && rest[0] == cmd:
		return rest, nil // "serve --serve"
	case len(rest) > 0 && cmd == "devices" && slices.Contains(commands, rest[0]):
		rest = rest[1:] // "serve --list-devices": the list, as "--serve --list-devices" was
	}
	return append([]string{cmd}, rest...), nil
}

// takeOldModes takes the old mode flags out of args, before "--": the
// arguments left, and the commands the flags stand for, once each, in
// the order given (--serve=false stands for none).
func takeOldModes(args []string) (rest, found []string, err error) {
	rest = make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(rest, args[i:]...), found, nil
		}
		name, val, hasVal := strings.Cut(a, "=")
		cmd := oldCommand(name)
		if cmd == "" {
			rest = append(rest, a)
			continue
		}
		on := true
		if hasVal {
			if on, err = strconv.ParseBool(val); err != nil {
				return nil, nil, cli.Usagef("%s takes no value but true or false, got %q", name, val)
			}
		}
		if on && !slices.Contains(found, cmd) {
			found = append(found, cmd)
		}
	}
	return rest, found, nil
}

// oldCommand is the command an old mode flag stands for, or "".
func oldCommand(flag string) string {
	for _, m := range oldModes {
		if m.flag == flag {
			return m.cmd
		}
	}
	return ""
}

// ExplainParseError says why serve and vad-stream take no arguments
// (lib/cli calls it for a parse error of the command).
func (*ServeCmd) ExplainParseError(err error) error { return explainFramed("serve", err) }

// ExplainParseError: see ServeCmd's.
func (*VADStreamCmd) ExplainParseError(err error) error { return explainFramed("vad-stream", err) }

// explainFramed explains kong's "unexpected argument X" for a mode that
// reads frames on stdin: X is a file it cannot take, or another command.
func explainFramed(cmd string, err error) error {
	arg, ok := strings.CutPrefix(err.Error(), "unexpected argument ")
	if !ok {
		return err
	}
	if slices.Contains(commands, arg) {
		return cli.Usagef("%s and %s are two commands: pick one", cmd, arg)
	}
	return cli.Usagef("%s reads frames on stdin and takes no files (unexpected argument %s)", cmd, arg)
}
