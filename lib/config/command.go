package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// ResolveCommand finds the program of a children command. A program given
// as a path (it contains a slash) is used as it is, and must be an
// executable file. A bare name is looked up first in selfDir, the folder of
// the daemon's own executable (so an installed or freshly built set of
// binaries uses its own siblings), then in PATH. The result is argv with
// its program replaced by the path found; argv itself is not changed.
// selfDir may be empty to search PATH only.
func ResolveCommand(argv []string, selfDir string) ([]string, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("resolve command: empty command")
	}
	name := argv[0]
	out := slices.Clone(argv)
	if strings.Contains(name, "/") {
		if err := executable(name); err != nil {
			return nil, fmt.Errorf("resolve command %s: %w", name, err)
		}
		return out, nil
	}
	if selfDir != "" {
		p := filepath.Join(selfDir, name)
		if executable(p) == nil {
			out[0] = p
			return out, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		where := "in PATH"
		if selfDir != "" {
			where = "in " + selfDir + " or in PATH"
		}
		return nil, fmt.Errorf("resolve command %s: not found %s: %w", name, where, exec.ErrNotFound)
	}
	out[0] = p
	return out, nil
}

// executable checks that p is a regular file with an execute bit set.
func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file: %w", fs.ErrInvalid)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("not executable: %w", fs.ErrPermission)
	}
	return nil
}

// SelfDir is the folder of the running executable, symbolic links
// resolved: the selfDir for ResolveCommand. It is "" if it cannot be found.
func SelfDir() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return filepath.Dir(exe)
}
