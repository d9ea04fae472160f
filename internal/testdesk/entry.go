package testdesk

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// AppID is YazSes's application id (lib/xdp.AppID; written out here so
// that the desk's helpers import nothing of the product).
const AppID = "io.github.yazses.YazSes"

// InstallEntry installs YazSes's desktop entry in the desk as make install
// installs it (packaging/desktop, its Exec the installed yazsesd, here a
// stand-in in /usr/local/bin): the portal takes YazSes's application id
// from a program that registers it (Registry.Register) only where the
// entry is installed.
func (d *Desk) InstallEntry(t testing.TB) {
	t.Helper()
	repo, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(repo, "packaging", "desktop", AppID+".desktop"))
	if err != nil {
		t.Fatal(err)
	}
	d.WriteFile(t, "/usr/local/bin/yazsesd", []byte("#!/bin/sh\n"), 0o755)
	d.WriteFile(t, "/usr/share/applications/"+AppID+".desktop", []byte(strings.ReplaceAll(string(b), "@BINDIR@", "/usr/local/bin")), 0o644)
}
