package daemon

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

// versions are the children's program versions for status: each program
// is asked `--version` once, when the daemon starts. A program that prints
// nothing (or fails) has the version "".
type versions struct {
	progs map[string]string // child name → program path

	mu sync.Mutex
	v  map[string]string
}

func newVersions(progs map[string]string) *versions {
	return &versions{progs: progs, v: map[string]string{}}
}

// query asks every program at once and returns when all have answered or
// ctx ended.
func (vs *versions) query(ctx context.Context) {
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

func (vs *versions) get(name string) string {
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
