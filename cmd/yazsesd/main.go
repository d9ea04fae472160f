package main

import (
	"context"
	"os"

	"github.com/yazses/yazses/cmd/yazsesd/internal/app"
	"github.com/yazses/yazses/lib/version"
)

func main() {
	os.Exit(app.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, version.Get()))
}
