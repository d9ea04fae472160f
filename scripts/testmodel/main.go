// Command testmodel writes a whisper.cpp model file with random weights for
// tests (see internal/testmodel): a whisper model, or a Parakeet TDT model
// for the parakeet-* sizes.
//
//	go run ./scripts/testmodel -size mini|tiny|tiny.en|base.en|small.en|large-v3-turbo|parakeet-mini|parakeet-tdt-0.6b -seed N -o FILE
//
// Missing parent folders of FILE are created. It writes nothing to stdout. Exit status: 0 on success, 1 when the file
// cannot be written, 2 on a usage error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/yazses/yazses/internal/testmodel"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("testmodel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizeName := fs.String("size", "mini", "model dimensions: whisper mini, tiny, tiny.en, base.en, small.en or large-v3-turbo (1.6 GB); Parakeet TDT parakeet-mini or parakeet-tdt-0.6b (1.26 GB)")
	seed := fs.Int64("seed", 1, "random seed; the same seed writes the same bytes")
	out := fs.String("o", "", "output `file` (required)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: testmodel [-size S] [-seed N] -o FILE\n\n"+
			"Writes a whisper.cpp model (whisper or Parakeet TDT) with random weights for tests.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	size, err := testmodel.ParseSize(*sizeName)
	if err != nil || *out == "" || fs.NArg() != 0 {
		if err == nil {
			err = errors.New("-o FILE is required and no arguments are taken")
		}
		fmt.Fprintf(stderr, "testmodel: error: %v\n", err)
		fs.Usage()
		return 2
	}
	// Like any tool that writes a file a person names, create the folders
	// on the way: -o models/x.bin on a fresh checkout just works.
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		fmt.Fprintf(stderr, "testmodel: error: %v\n", err)
		return 1
	}
	if err := testmodel.WriteFile(*out, size, *seed); err != nil {
		fmt.Fprintf(stderr, "testmodel: error: %v\n", err)
		return 1
	}
	return 0
}
