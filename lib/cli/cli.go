// Package cli holds what every YazSes command line shares: kong parsing with
// the Unix exit codes docs/design.md fixes (2 for usage errors, 1 for runtime
// failures), --version ("NAME VERSION" from lib/version), shell completion
// (kongplete, answering when the shell sets COMP_LINE), a man page made from
// the kong model (the hidden --man flag, which make install uses), the
// --log-level/--log-format flags and the slog logger they make, readiness
// signalling to a supervisor, and a terminal check.
package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"
	shellcomplete "github.com/posener/complete"
	"github.com/willabides/kongplete"
	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/lib/version"
)

// Exit codes shared by every binary.
const (
	ExitOK        = 0
	ExitFailure   = 1
	ExitUsage     = 2
	ExitNoRestart = 125 // "do not restart me", honoured by yazsesd
)

// Logging is embedded in every command's kong struct.
type Logging struct {
	LogLevel  string `help:"Log level: debug, info, warn or error." default:"info" enum:"debug,info,warn,error" env:"YAZ_LOG_LEVEL"`
	LogFormat string `help:"Log format on stderr: text or json." default:"text" enum:"text,json" env:"YAZ_LOG_FORMAT"`
}

// Logger makes the one slog.Logger of a run, writing to w (stderr).
func (l Logging) Logger(w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(l.LogLevel))
	opts := &slog.HandlerOptions{Level: lvl}
	if l.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// Debug reports whether the debug level is on.
func (l Logging) Debug() bool { return l.LogLevel == "debug" }

// errExit carries kong's exit request (after --help or --version).
type errExit struct{ code int }

func (e errExit) Error() string { return fmt.Sprintf("exit %d", e.code) }

// Parse parses args into grammar. It returns done=true with the exit code
// when the run is over already: --help or --version was printed (0), or the
// arguments were wrong (2, after one line "NAME: error: …" on stderr).
// opts are more kong options, after the shared ones.
//
// A grammar whose default command takes arguments (default:"withargs":
// "yaz-decode FILE…" beside "yaz-decode serve") reads as that command at
// the top: --help shows its arguments and flags, then the other commands;
// completion offers its flags before a command is named; the man page
// lists them under OPTIONS and ARGUMENTS (defaultcmd.go).
func Parse(name, description string, grammar any, args []string, stdout, stderr io.Writer, vars kong.Vars, opts ...kong.Option) (k *kong.Context, code int, done bool) {
	parser, err := kong.New(grammar, append([]kong.Option{
		kong.Name(name),
		kong.Description(description),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(errExit{code}) }),
		kong.UsageOnError(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		vars,
		// Every program prints "NAME VERSION" (lib/version, set by the build).
		kong.Vars{"version": version.String(name)},
		kong.Embed(&extraFlags{}),
		byteMappers,            // bytes.go: values byte for byte
		kong.Help(helpPrinter), // defaultcmd.go
	}, opts...)...)
	if err != nil {
		fmt.Fprintf(stderr, "%s: error: %v\n", name, err)
		return nil, ExitFailure, true
	}
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(errExit)
			if !ok {
				panic(r)
			}
			k, code, done = nil, e.code, true
		}
	}()
	// Shell completion: run by the shell with COMP_LINE set (bash's
	// "complete -C PROGRAM PROGRAM", which make install writes), it prints
	// the flags, commands and enum values that match and exits 0.
	switch answered, err := answerCompletion(parser, kongplete.WithPredictors(wordPredictors(parser.Model.Node))); {
	case err != nil:
		fmt.Fprintf(stderr, "%s: error: completion: %v\n", name, err)
		return nil, ExitFailure, true
	case answered:
		return nil, ExitOK, true
	}
	k, err = parser.Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "%s: error: %v\n", name, explain(err))
		return nil, ExitUsage, true
	}
	return k, ExitOK, false
}

// ParseErrorExplainer is a command (its kong struct) that says more about
// a parse error of its own than kong does: a mode that reads frames says
// it takes no files where kong says "unexpected argument a.wav".
type ParseErrorExplainer interface {
	ExplainParseError(err error) error
}

// flagBeforeCommand is kong's error for a flag given before a command
// that the default command took ("prog -m M serve"); it names the default
// command, which nobody typed.
var flagBeforeCommand = regexp.MustCompile(`^flag (--\S+) applies to the default command "[^"]*", not "([^"]*)"$`)

// explain is err as the selected command explains it, if it does. The
// default command's own checks do not name it: nobody typed its name.
func explain(err error) error {
	var pe *kong.ParseError
	if !errors.As(err, &pe) || pe.Context == nil {
		return err
	}
	if m := flagBeforeCommand.FindStringSubmatch(err.Error()); m != nil {
		return &UsageError{Msg: fmt.Sprintf("%s is given before %s: a command's flags follow its name (%s %s --help lists them)",
			m[1], m[2], pe.Context.Model.Name, m[2])}
	}
	sel := pe.Context.Selected()
	if sel == nil || !sel.Target.IsValid() || !sel.Target.CanAddr() {
		return err
	}
	if sel == defaultCmd(pe.Context.Model.Node) {
		if msg, ok := strings.CutPrefix(err.Error(), sel.Name+": "); ok {
			err = &UsageError{Msg: msg}
		}
	}
	if e, ok := sel.Target.Addr().Interface().(ParseErrorExplainer); ok {
		return e.ExplainParseError(err)
	}
	return err
}

// UsageError is a runtime check of the arguments that failed: exit 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef makes a UsageError.
func Usagef(format string, a ...any) error { return &UsageError{Msg: fmt.Sprintf(format, a...)} }

// Report prints err once as "NAME: error: …" and returns the exit code: 0
// for nil, 2 for a UsageError, 1 otherwise.
func Report(name string, stderr io.Writer, err error) int {
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(stderr, "%s: error: %s\n", name, strings.TrimSpace(err.Error()))
	var u *UsageError
	if errors.As(err, &u) {
		return ExitUsage
	}
	return ExitFailure
}

// ReadyEnv names the variable through which a supervisor passes the number of
// the file descriptor on which a child says it is ready.
const ReadyEnv = "YAZ_READY_FD"

// Ready writes a newline to the readiness descriptor named by YAZ_READY_FD,
// if any, and closes it (the s6 convention). It is safe to call when no
// supervisor asked for it.
func Ready() error { return ReadyWith(nil) }

// ReadyWith is Ready with a line that says what the program is ready
// with: v as one JSON object before the newline (nil: a bare newline).
// The supervisor keeps the line (supervise.Status.Ready); yaz-decode
// --serve names its device there (package devices).
func ReadyWith(v any) error {
	v0 := os.Getenv(ReadyEnv)
	if v0 == "" {
		return nil
	}
	fd, err := strconv.Atoi(v0)
	if err != nil || fd < 3 {
		return fmt.Errorf("readiness: bad %s=%q", ReadyEnv, v0)
	}
	line := []byte("\n")
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("readiness: %w", err)
		}
		line = append(b, '\n')
	}
	os.Unsetenv(ReadyEnv)
	f := os.NewFile(uintptr(fd), "ready")
	if f == nil {
		return fmt.Errorf("readiness: fd %d is not open", fd)
	}
	defer f.Close()
	if _, err := f.Write(line); err != nil {
		return fmt.Errorf("readiness: %w", err)
	}
	return nil
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f any) bool {
	fd, ok := f.(interface{ Fd() uintptr })
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(fd.Fd()), unix.TCGETS)
	return err == nil
}

// wordsTag begins a predictor tag that lists the words to complete:
// predictor:"words:status,hold start,hold stop". A word of two ("hold
// start") completes its first word, then, after it, its second: for a
// command line like "yazsesd ctl hold start".
const wordsTag = "words:"

// wordPredictors makes the completion of every flag and argument under n
// whose predictor tag lists its words.
func wordPredictors(n *kong.Node) map[string]shellcomplete.Predictor {
	ps := map[string]shellcomplete.Predictor{}
	add := func(v *kong.Value, n *kong.Node) {
		name := v.Tag.Get("predictor")
		if !strings.HasPrefix(name, wordsTag) {
			return
		}
		valued := map[string]bool{}
		for _, group := range n.AllFlags(false) {
			for _, f := range group {
				if !f.IsBool() {
					valued["--"+f.Name] = true
					if f.Short != 0 {
						valued["-"+string(f.Short)] = true
					}
				}
			}
		}
		ps[name] = words{list: strings.Split(strings.TrimPrefix(name, wordsTag), ","), valued: valued, flag: v.Flag != nil}
	}
	var walk func(*kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			add(f.Value, n)
		}
		for _, p := range n.Positional {
			add(p, n)
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(n)
	return ps
}

// words completes from a list of words, one or two to an entry.
type words struct {
	list   []string
	valued map[string]bool // the flags that take a value, whose value is skipped
	flag   bool            // the value of a flag: first words only
}

func (w words) Predict(a shellcomplete.Args) []string {
	var said []string
	if !w.flag {
		for i := 0; i < len(a.Completed); i++ {
			word := a.Completed[i]
			switch {
			case strings.HasPrefix(word, "-"):
				if w.valued[word] {
					i++ // its value
				}
			default:
				said = append(said, word)
			}
		}
	}
	var out []string
	for _, entry := range w.list {
		fields := strings.Fields(entry)
		if len(said) < len(fields) && slices.Equal(fields[:len(said)], said) {
			if next := fields[len(said)]; !slices.Contains(out, next) {
				out = append(out, next)
			}
		}
	}
	return out
}
