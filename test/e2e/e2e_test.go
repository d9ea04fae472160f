package e2e

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/yazses/yazses/internal/testbin"
	"github.com/yazses/yazses/internal/testmodel"
)

// world is what every test shares: the binaries and the models.
var world struct {
	root       string // repository root
	bin        string // built binaries (testbin.Build: shared by the test packages)
	models     string
	mini       string // path of the mini model
	tinyEn     string // path of the tiny.en-sized model
	jfk        string // samples/jfk.wav from the whisper.cpp Go bindings
	whisperCLI string
}

func TestMain(m *testing.M) {
	if path := os.Getenv(rawDialEnv); path != "" {
		os.Exit(rawDial(path)) // the test binary as a plain socket client
	}
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

// minParallel is how many parallel tests run at once unless -parallel says
// otherwise (its default is GOMAXPROCS: 2 on the CI machine). Most of this
// suite's time is real time, not CPU: speech played into a sink, a
// question's timeout, an answer window; four at a time keep two cores
// busy. A CPU-bound test here (a decode) measures against a baseline taken
// in the same test, never against an absolute time.
const minParallel = 4

// defaultParallel raises -parallel to minParallel when it was not given.
func defaultParallel() {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); f != nil && !given && runtime.GOMAXPROCS(0) < minParallel {
		f.Value.Set(strconv.Itoa(minParallel))
	}
}

func setup(m *testing.M) (int, error) {
	defaultParallel()
	tmp, err := os.MkdirTemp("", "yazses-e2e-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	world.root = testbin.Root()
	world.models = filepath.Join(tmp, "models")
	if err := os.MkdirAll(world.models, 0o755); err != nil {
		return 0, err
	}
	start := time.Now()
	if world.bin, err = testbin.Build(); err != nil {
		return 0, err
	}
	world.mini = filepath.Join(world.models, "ggml-mini.bin")
	world.tinyEn = filepath.Join(world.models, "ggml-tiny.en.bin")
	for path, size := range map[string]testmodel.Size{world.mini: testmodel.Mini, world.tinyEn: testmodel.TinyEn} {
		if err := testmodel.WriteFile(path, size, 1); err != nil {
			return 0, err
		}
	}
	if world.jfk, err = testbin.JFK(); err != nil {
		return 0, err
	}
	world.whisperCLI = os.Getenv("YAZ_WHISPER_CLI")
	if world.whisperCLI == "" {
		return 0, fmt.Errorf("YAZ_WHISPER_CLI is not set: run the tests through make test, or . scripts/env.sh")
	}
	pulseDir := filepath.Join(tmp, "pulse")
	stopPulse, err := startPulse(pulseDir)
	if err != nil {
		return 0, err
	}
	defer stopPulse()
	fmt.Fprintf(os.Stderr, "e2e: binaries, models and PulseAudio ready in %s\n", time.Since(start).Round(time.Millisecond))
	code := m.Run()
	if code != 0 {
		// The sound server's own account helps with audio failures.
		if b, err := os.ReadFile(filepath.Join(pulseDir, "pulse.log")); err == nil {
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			fmt.Fprintf(os.Stderr, "e2e: last lines of the PulseAudio log:\n%s\n", strings.Join(lines[max(0, len(lines)-15):], "\n"))
		}
		if err := exec.Command("sh", filepath.Join(world.root, "scripts", "pulse-test-server.sh"), "env", pulseDir).Run(); err == nil {
			out, _ := exec.Command("pactl", "info").CombinedOutput()
			fmt.Fprintf(os.Stderr, "e2e: pactl info at the end:\n%s\n", out)
		}
	}
	return code, nil
}

// TestScripts runs the testscript files in testdata/script: the binaries
// chained as a person would in a shell.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			e.Setenv("PATH", world.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			e.Setenv("MODEL", world.mini)
			e.Setenv("TINYEN", world.tinyEn)
			e.Setenv("JFK", world.jfk)
			e.Setenv("ROOT", world.root)
			e.Setenv("HOME", e.WorkDir)
			e.Setenv("XDG_DATA_HOME", filepath.Join(e.WorkDir, "data"))
			for _, k := range []string{"XDG_RUNTIME_DIR", "PULSE_SERVER", "PULSE_COOKIE"} {
				e.Setenv(k, os.Getenv(k))
			}
			return nil
		},
		Cmds: scriptCmds,
	})
}

// startPulse starts the private PulseAudio server of the suite (a null sink
// "yaz" whose monitor is the default source) and exports its environment to
// every child.
func startPulse(dir string) (stop func(), err error) {
	script := filepath.Join(world.root, "scripts", "pulse-test-server.sh")
	out, err := exec.Command("sh", script, "start", dir).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("start PulseAudio: %w", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("start PulseAudio: unexpected output %q", line)
		}
		os.Setenv(k, v)
	}
	return func() { exec.Command("sh", script, "stop", dir).Run() }, nil
}

// command runs a built binary and returns stdout, stderr and the exit code.
func command(t *testing.T, ctx context.Context, stdin []byte, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, filepath.Join(world.bin, name), args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return o.String(), e.String(), code
}
