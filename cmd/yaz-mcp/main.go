package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/yazses/yazses/cmd/yaz-mcp/internal/mcpserve"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := mcpserve.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
