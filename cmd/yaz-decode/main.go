package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/decode"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := decode.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
