package readme

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// world is what the tests share; each part is made on first use.
var world struct {
	root string // the repository
	tmp  string // removed after the run
}

func TestMain(m *testing.M) {
	_, file, _, _ := runtime.Caller(0)
	world.root = filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	tmp, err := os.MkdirTemp("", "yazses-readme-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	world.tmp = tmp
	code := m.Run()
	for _, stop := range cleanups {
		stop()
	}
	os.RemoveAll(tmp)
	os.Exit(code)
}

// cleanups run after every test, in order (servers started on first use).
var cleanups []func()

// makeEnv is the environment for a make run inside this test: the caller's,
// without the variables through which an outer make (make test) would pass
// its flags and job server down.
func makeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// bounded is exec.CommandContext for a command that may start children
// (make, the scripts, the installed programs): when ctx ends, the
// command's whole process group is killed, and Wait returns soon after
// even if something still holds its output open.
func bounded(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// buildHang bounds a make run. It is a guard against one that never ends,
// not a speed requirement: make install may build whisper.cpp first, which
// took 7 min 51 s on an idle 2-core machine, and several times
// that on a loaded one.
const buildHang = 30 * time.Minute

// buildContext is a context for a make run: it ends after buildHang or
// with the test.
func buildContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), buildHang)
	t.Cleanup(cancel)
	return ctx
}

// run runs a command until it ends or ctx does and returns its output, or
// an error with its stderr.
func run(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	cmd := bounded(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (killed: it did not end within its bound)", err)
		}
		return stdout.String(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// installation is `make install` into a temporary prefix, as the README
// says, with the binaries built the way the Makefile builds them.
var installation = sync.OnceValues(func() (inst installed, err error) {
	inst.prefix = filepath.Join(world.tmp, "prefix")
	inst.build = filepath.Join(world.tmp, "build")
	ctx, cancel := context.WithTimeout(context.Background(), buildHang)
	defer cancel()
	inst.version = checkoutVersion(ctx, world.root)
	_, err = run(ctx, world.root, makeEnv(), "make", "-s", "install",
		"PREFIX="+inst.prefix, "BIN="+inst.build,
		"UNITDIR="+filepath.Join(inst.prefix, "systemd-user"),
		"CONFDIR="+filepath.Join(inst.prefix, "config"))
	if err != nil {
		return inst, err
	}
	inst.bin = filepath.Join(inst.prefix, "bin")
	entries, err := os.ReadDir(inst.build)
	if err != nil {
		return inst, err
	}
	for _, e := range entries {
		if e.Name() == "yaz-ggml-cuda.so" { // the CUDA module, where the configuration builds one
			inst.module = true
			continue
		}
		inst.programs = append(inst.programs, e.Name())
	}
	if len(inst.programs) == 0 {
		return inst, errors.New("make install built no program")
	}
	return inst, nil
})

type installed struct {
	prefix   string
	bin      string   // prefix/bin
	build    string   // where make built the binaries (BIN)
	programs []string // the Go programs (every cmd/*)
	module   bool     // make build put the CUDA module beside them
	version  string   // the checkout's version when they were built
}

func install(t *testing.T) installed {
	t.Helper()
	inst, err := installation()
	if err != nil {
		t.Fatalf("make install: %v", err)
	}
	return inst
}
