// Package version is the one version of every YazSes program.
//
// The build sets Version for every binary at once (the Makefile passes
// -ldflags "-X github.com/yazses/yazses/lib/version.Version=…" with the output
// of scripts/version.sh): `git describe --tags --dirty` when the history has a
// tag, else 0.0.0-dev+<short commit>, with -dirty when tracked files differ
// from the commit. A plain `go build` or `go run` leaves Version empty; Get
// then builds the same form from what the Go toolchain recorded about the
// checkout, or says 0.0.0-dev when it recorded nothing.
package version

import (
	"runtime/debug"
	"sync"
)

// Version is set by the build; empty means "not set".
var Version string

// Unknown is the version of a build that knows nothing about its source.
const Unknown = "0.0.0-dev"

var fallback = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Unknown
	}
	return fromBuildInfo(bi)
})

// fromBuildInfo makes 0.0.0-dev+<commit>[-dirty] from the VCS stamp of a
// build, the same form scripts/version.sh prints for an untagged checkout.
func fromBuildInfo(bi *debug.BuildInfo) string {
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return Unknown
	}
	v := Unknown + "+" + rev[:min(len(rev), 7)]
	if dirty {
		v += "-dirty"
	}
	return v
}

// Get returns the version of this binary.
func Get() string {
	if Version != "" {
		return Version
	}
	return fallback()
}

// String is what every program's --version prints: "NAME VERSION".
func String(name string) string { return name + " " + Get() }
