package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/yazses/yazses/cmd/yaz-capture/internal/capcmd"
)

func main() {
	// A reader that goes away (yaz-capture | head -c 100) is a clean end:
	// get EPIPE from write instead of dying of SIGPIPE.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return capcmd.Main(ctx, args, stdin, stdout, stderr)
}
