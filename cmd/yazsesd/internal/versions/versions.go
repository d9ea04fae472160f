// Package versions asks the daemon's child programs their versions, for
// status: each program is asked `PROGRAM --version` once, when the daemon
// starts. A program that prints nothing (or fails) has the version "".
package versions

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// versionTimeout bounds one `PROGRAM --version`.
const versionTimeout = 5 * time.Second

// Set is the versions of the children's programs.
type Set struct {
	progs map[string]string // child name → program path

	mu sync.Mutex
	v  map[string]string
}

// New returns the Set of progs (child name → program path); Query asks
// them.
func New(progs map[string]string) *Set {
	return &Set{progs: progs, v: map[string]string{}}
}

// Query asks every program at once and returns when all have answered or
// ctx ended.
func (vs *Set) Query(ctx context.Context) {
	var wg sync.WaitGroup
	for name, prog := range vs.progs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := programVersion(ctx, prog)
			vs.mu.Lock()
			vs.v[name] = v
			vs.mu.Unlock()
		}()
	}
	wg.Wait()
}

// Get is the version of the child name's program: "" until it answered,
// or when it said none.
func (vs *Set) Get(name string) string {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return vs.v[name]
}

// programVersion runs `prog --version` and returns its version: the first
// line of what it prints, without the program's own name in front
// ("yaz-decode 0.3.0" is "0.3.0").
func programVersion(ctx context.Context, prog string) string {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, "--version")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	fields := strings.Fields(line)
	if len(fields) > 1 && fields[0] == filepath.Base(prog) {
		fields = fields[1:]
	}
	v := strings.Join(fields, " ")
	if len(v) > 100 {
		v = v[:100]
	}
	return v
}
