package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/alecthomas/kong"

	"github.com/yazses/yazses/cmd/yaz-type/internal/inject"
	"github.com/yazses/yazses/cmd/yaz-type/internal/serve"
	"github.com/yazses/yazses/lib/cli"
	"github.com/yazses/yazses/lib/linebound"
	"github.com/yazses/yazses/lib/typewire"
)

const name = "yaz-type"

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Exit statuses other than 0 (typed), 1 (failed) and 2 (usage): see doc.go.
const (
	exitPasted   = 3
	exitNoTarget = 4
	exitPartial  = 5
	exitRefused  = 6
	exitNoRoute  = 7
	exitUnseen   = 8
)

// ConsentWait bounds the wait for the person's answer to the desktop's
// consent dialog (the portal route), before the first text.
const ConsentWait = 2 * time.Minute

// MaxLineBytes caps one line of stdin (a longer one is an error: nothing
// of it is typed).
const MaxLineBytes = 4 << 20

// CLI is yaz-type's command line.
type CLI struct {
	Text []string `arg:"" optional:"" help:"Text to type, joined with spaces; none: each line of stdin as it arrives, lines separated by a space."`

	Backend        string `short:"b" help:"Typing route: auto (chosen from the session, as yazsesd status explains it), ${routes}." default:"auto" enum:"auto,${routes}" env:"YAZ_TYPE_BACKEND"`
	PasteOverChars int    `help:"Paste a text longer than this many characters through the clipboard instead of typing it (0: paste only what no route can type)." default:"3000" env:"YAZ_PASTE_OVER_CHARS"`
	RequireFocus   bool   `help:"Type nothing where the focused window cannot be told (Wayland outside sway)."`
	Route          bool   `help:"Print the route auto (or --backend) takes here and why, and exit: 0, or 7 when nothing can type."`
	Serve          bool   `help:"Supervised mode for yazsesd: JSON requests on stdin, outcomes on stdout (lib/typewire)."`
	StateDir       string `help:"Where the portal route keeps the desktop's restore token; empty: $XDG_STATE_HOME/yazses." type:"path" env:"YAZ_STATE_DIR"`

	cli.Logging
	Version kong.VersionFlag `help:"Print the version and exit."`
}

// run is yaz-type: it returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var c CLI
	vars := kong.Vars{"routes": strings.Join(inject.Backends, ",")}
	_, code, done := cli.Parse(name, "Type text into the focused window.", &c, args, stdout, stderr, vars)
	if done {
		return code
	}
	log := c.Logger(stderr)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)

	if c.Serve || c.Route {
		if len(c.Text) > 0 {
			return cli.Report(name, stderr, cli.Usagef("--serve and --route take no text"))
		}
	} else if len(c.Text) == 0 && cli.IsTerminal(stdin) {
		return cli.Report(name, stderr, cli.Usagef("no text: give it as arguments, or pipe lines on stdin"))
	}
	if c.Serve {
		err := c.serve(ctx, log, stdin, stdout)
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			err = nil
		}
		return cli.Report(name, stderr, err)
	}
	t, err := c.open(log, nil)
	if err == nil {
		// The window reads the last keys after yaz-type has ended: the
		// X11 spare keycodes stay bound (the next text reuses them).
		defer t.CloseKeepingKeys()
	}
	if c.Route {
		return route(stdout, stderr, c.Backend, t, err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: no route can type here: %v\n", name, err)
		return exitNoRoute
	}
	// The portal's session starts with the desktop's consent dialog:
	// nothing types before the person answers it.
	sctx, cancel := context.WithTimeout(ctx, ConsentWait)
	t.Settle(sctx)
	cancel()
	if len(c.Text) > 0 {
		return typeOne(ctx, stderr, t, strings.Join(c.Text, " "), false)
	}
	return typeLines(ctx, stderr, t, stdin)
}

func (c *CLI) open(log *slog.Logger, notify func(string)) (*inject.Typer, error) {
	return inject.Open(c.Backend, inject.Options{
		Log:            log,
		PasteOverChars: c.PasteOverChars,
		RequireFocus:   c.RequireFocus,
		StateDir:       c.StateDir,
		Notify:         notify,
	})
}

// route prints the route and why (--route).
func route(stdout, stderr io.Writer, backend string, t *inject.Typer, err error) int {
	if err != nil {
		fmt.Fprintf(stderr, "%s: no route can type here: %v\n", name, err)
		return exitNoRoute
	}
	st := t.Status()
	fmt.Fprintf(stdout, "%s → %s\n%s: %s\n", backend, strings.Join(t.Backends(), ", "), st.Route, st.Why)
	return 0
}

// serve is --serve: the readiness line says the route, then requests
// until EOF or a signal.
func (c *CLI) serve(ctx context.Context, log *slog.Logger, stdin io.Reader, stdout io.Writer) error {
	// The notifications a route asks for (the portal's, before its
	// consent dialog) go out on stdout with the answers, through srv,
	// which exists before any route is opened.
	srv := serve.New(nil, nil, stdout, log)
	// The daemon's child: what the Typer holds is put back when it ends
	// (the X11 spare keycodes, the Wayland virtual keyboard, the portal's
	// session). Opened by the route's owner (the serving goroutine), read
	// here once Serve has returned.
	var opened *inject.Typer
	defer func() { opened.Close() }()
	route := serve.NewRoute(func() (serve.Typer, func() typewire.Status, error) {
		t, err := c.open(log, srv.Notify)
		if err != nil {
			log.Warn("no route can type here yet: each text tries again", "err", err)
			return nil, nil, err
		}
		opened = t
		return t, func() typewire.Status {
			st := t.Status()
			return typewire.Status{Route: st.Route, Why: st.Why, Backends: t.Backends(),
				Session: st.Session, Consent: st.Consent, Cause: st.Cause, Preedit: t.Preedits()}
		}, nil
	})
	srv.Typer, srv.Status = route, route.Status
	if err := cli.ReadyWith(route.Ready()); err != nil {
		return err
	}
	return srv.Serve(ctx, stdin)
}

// typeOne types one text and reports what it came to: the exit status,
// and on stderr one line for anything but typed. lead puts a space before
// the text (a line after the first).
func typeOne(ctx context.Context, stderr io.Writer, t *inject.Typer, text string, lead bool) int {
	if blank(text) {
		return 0
	}
	if lead {
		text = " " + text
	}
	// The text is cleaned where it enters typing (inject.Typer.Type), and
	// only there; this count is the raw text's, for the messages.
	chars := utf8.RuneCountInString(text)
	// A display server that stops answering must not hang the pipeline:
	// past the bound the text is given up and yaz-type exits (the
	// process's end closes its connections).
	bound := typewire.Bound(chars)
	type result struct {
		used string
		err  error
	}
	done := make(chan result, 1)
	tctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	go func() {
		used, err := t.Type(tctx, text)
		done <- result{used, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(bound + 2*time.Second):
		fmt.Fprintf(stderr, "%s: typing did not finish within %s: the display server does not answer\n", name, bound.Round(time.Second))
		return 1
	}
	ev := inject.Outcome(r.used, r.err, chars)
	return report(stderr, ev, r.err)
}

// blank reports whether text types nothing: white space and control
// characters only.
func blank(text string) bool {
	return !strings.ContainsFunc(text, func(r rune) bool { return !unicode.IsSpace(r) && !unicode.IsControl(r) })
}

// report writes the line and returns the exit status for an outcome.
func report(stderr io.Writer, ev typewire.Event, err error) int {
	switch ev.Outcome {
	case typewire.OutcomeTyped:
		return 0
	case typewire.OutcomePasted:
		fmt.Fprintf(stderr, "%s: pasted through the clipboard (%s): whether the window took it cannot be seen\n", name, ev.Backend)
		return exitPasted
	case typewire.OutcomeNoTarget:
		fmt.Fprintf(stderr, "%s: no window has the keyboard focus: nothing was typed\n", name)
		return exitNoTarget
	case typewire.OutcomePartial:
		fmt.Fprintf(stderr, "%s: typing stopped part-way (%s): %d of %d characters arrived, nothing went elsewhere\n", name, ev.Cause, ev.Arrived, ev.Chars)
		return exitPartial
	case typewire.OutcomeCommitted:
		fmt.Fprintf(stderr, "%s: committed through the input method (%s): whether a field took it cannot be seen\n", name, ev.Backend)
		return exitUnseen
	case typewire.OutcomeRefused:
		fmt.Fprintf(stderr, "%s: the focused field refused the text (a password field): nothing was typed\n", name)
		return exitRefused
	}
	if ev.Cause == typewire.CauseUnavailable || ev.Cause == typewire.CauseNoRoute {
		fmt.Fprintf(stderr, "%s: no route can type here (%s): %v\n", name, ev.Cause, err)
		return exitNoRoute
	}
	fmt.Fprintf(stderr, "%s: typing failed (%s, %s): %v\n", name, ev.Cause, ev.Backend, err)
	return 1
}

// typeLines types each line of stdin as it arrives, a space between
// lines, and stops at the first one that is not typed.
func typeLines(ctx context.Context, stderr io.Writer, t *inject.Typer, stdin io.Reader) int {
	r := linebound.NewReader(stdin, linebound.Options{Max: MaxLineBytes, Long: linebound.Fail, Last: linebound.KeepLast, CRLF: true})
	lead := false
	for {
		line, err := r.ReadLine()
		switch {
		case errors.Is(err, io.EOF):
			return 0
		case errors.Is(err, linebound.ErrTooLong):
			fmt.Fprintf(stderr, "%s: a line of stdin is longer than %d bytes: nothing of it was typed\n", name, MaxLineBytes)
			return 1
		case err != nil:
			fmt.Fprintf(stderr, "%s: read stdin: %v\n", name, err)
			return 1
		}
		if code := typeOne(ctx, stderr, t, string(line), lead); code != 0 {
			return code
		}
		if !blank(string(line)) {
			lead = true
		}
		if ctx.Err() != nil {
			return 1
		}
	}
}
