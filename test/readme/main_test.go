package readme

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
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

// run runs a command and returns its output, or an error with its stderr.
func run(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// installation is `make install` into a temporary prefix, as the README
// says, with the binaries built the way the Makefile builds them.
var installation = sync.OnceValues(func() (inst installed, err error) {
	inst.prefix = filepath.Join(world.tmp, "prefix")
	inst.build = filepath.Join(world.tmp, "build")
	_, err = run(world.root, makeEnv(), "make", "-s", "install",
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
}

func install(t *testing.T) installed {
	t.Helper()
	inst, err := installation()
	if err != nil {
		t.Fatalf("make install: %v", err)
	}
	return inst
}
