package main

import (
	"bytes"
	"testing"

	"github.com/yazses/yazses/lib/cli"
)

// TestFlagSpellings: -o/--output (the scheme's file flag), -f/--format and
// -d/--device, and the old --out, set the same fields.
func TestFlagSpellings(t *testing.T) {
	for _, args := range [][]string{
		{"-o", "x.wav", "-f", "wav", "-d", "usb", "hi"},
		{"--output", "x.wav", "--format", "wav", "--device", "usb", "hi"},
		{"--out", "x.wav", "--format=wav", "--device=usb", "hi"}, // old
		{"--out=x.wav", "-fwav", "-dusb", "hi"},                  // old
	} {
		var c CLI
		var out, errb bytes.Buffer
		if _, code, done := cli.Parse(name, "", &c, args, &out, &errb, nil); done {
			t.Errorf("parse %q: exit %d: %s", args, code, errb.String())
			continue
		}
		if c.Out != "x.wav" || c.Format != "wav" || c.Device != "usb" {
			t.Errorf("%q: out %q, format %q, device %q", args, c.Out, c.Format, c.Device)
		}
	}
}
