package main

import (
	"context"
	"os"

	"github.com/yazses/yazses/cmd/yazsesd/internal/app"
)

// version is set by the build (-ldflags "-X main.version=…").
var version = "dev"

func main() {
	os.Exit(app.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, version))
}
