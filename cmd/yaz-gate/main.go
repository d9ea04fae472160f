package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kong"
	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/cmd/yaz-gate/internal/budget"
	"github.com/yazses/yazses/lib/cli"
)

const name = "yaz-gate"

// gateFD is the descriptor yazsesd passes: its socketpair end.
const gateFD = 3

// errNotChild is printed, alone on its line, when fd 3 is not a socketpair
// end; the exit status is 2.
const errNotChild = "yaz-gate: runs only as a child of yazsesd"

// CLI is yaz-gate's command line.
type CLI struct {
	PerHour int  `help:"Attempts to speak to the person per sliding hour (0 refuses all)." default:"0" env:"YAZ_GATE_PER_HOUR"`
	Spent   bool `help:"Start with the whole hour spent (yazsesd passes it when it restarts a crashed gate)."`

	cli.Logging
	Version kong.VersionFlag `help:"Print the version and exit."`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs yaz-gate and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c CLI
	_, code, done := cli.Parse(name, "Holds YazSes's interruption budget; runs only as a child of yazsesd.",
		&c, args, stdout, stderr, nil)
	if done {
		return code
	}
	if c.PerHour < 0 {
		return cli.Report(name, stderr, cli.Usagef("--per-hour must be 0 or more, not %d", c.PerHour))
	}
	if err := checkSocketpair(gateFD); err != nil {
		fmt.Fprintln(stderr, errNotChild)
		return cli.ExitUsage
	}
	log := c.Logger(stderr)
	return cli.Report(name, stderr, c.run(ctx, log))
}

func (c *CLI) run(ctx context.Context, log *slog.Logger) error {
	f := os.NewFile(gateFD, "gate")
	conn, err := net.FileConn(f) // a duplicate: fd 3 itself is closed next
	f.Close()
	if err != nil {
		return fmt.Errorf("open gate socket: %w", err)
	}
	defer conn.Close()

	var b *budget.Budget
	if c.Spent {
		b = budget.NewSpent(c.PerHour)
	} else {
		b = budget.New(c.PerHour)
	}
	log.Info("serving", "per_hour", c.PerHour, "spent", c.Spent)
	if err := cli.Ready(); err != nil {
		return err
	}
	s := &server{b: b, log: log}
	err = s.serve(ctx, conn)
	log.Info("stopped", "reserved", s.counts.reserved, "refused", s.counts.refused,
		"committed", s.counts.committed, "released", s.counts.released,
		"token_errors", s.counts.tokenErrors, "bad_requests", s.counts.badRequests)
	return err
}

// checkSocketpair reports whether fd is an AF_UNIX stream socket, as the
// end of a socketpair yazsesd passes is. A missing fd, a file, a pipe or a
// socket of another family or type is an error.
func checkSocketpair(fd int) error {
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		return fmt.Errorf("fd %d: %w", fd, err)
	}
	if typ != unix.SOCK_STREAM {
		return fmt.Errorf("fd %d: socket type %d, want a stream", fd, typ)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return fmt.Errorf("fd %d: %w", fd, err)
	}
	if _, ok := sa.(*unix.SockaddrUnix); !ok {
		return errors.New("fd 3: not an AF_UNIX socket")
	}
	return nil
}
