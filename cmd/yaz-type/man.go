package main

import (
	_ "embed"

	"github.com/yazses/yazses/lib/cli"
)

// doc is this program's package comment: the words of its man page
// (--man, which make install writes to share/man/man1).
//
//go:embed doc.go
var doc string

func init() { cli.SetDoc(doc) }
