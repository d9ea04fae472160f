package readme

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/internal/testvad"
	"github.com/yazses/yazses/internal/testwait"
)

// example is one shell command of a ```sh block of README.md (continuation
// lines joined).
type example struct {
	block int    // the block's number, from 1
	line  int    // the command's first line in README.md
	cmd   string // as written, run as written
	key   string // cmd without a trailing comment: what the tables below name
}

// withoutComment cuts a trailing shell comment (a # after a blank, outside
// quotes) from a command.
func withoutComment(cmd string) string {
	var quote rune
	prev := ' '
	for i, r := range cmd {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (prev == ' ' || prev == '\t'):
			return strings.TrimSpace(cmd[:i])
		}
		prev = r
	}
	return cmd
}

// readmeExamples extracts every command of the README's ```sh blocks.
func readmeExamples(t *testing.T) []example {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(world.root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []example
	block, inSh, other := 0, false, false
	var cur *example
	for i, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !inSh && !other && strings.HasPrefix(trimmed, "```"):
			if trimmed == "```sh" {
				inSh = true
				block++
			} else {
				other = true
			}
			continue
		case other:
			if trimmed == "```" {
				other = false
			}
			continue
		case !inSh:
			continue
		case trimmed == "```":
			inSh = false
			continue
		}
		if cur != nil {
			cur.cmd += " " + strings.TrimSuffix(trimmed, "\\")
		} else {
			if trimmed == "" || strings.HasPrefix(trimmed, "#") {
				continue
			}
			out = append(out, example{block: block, line: i + 1, cmd: strings.TrimSuffix(trimmed, "\\")})
			cur = &out[len(out)-1]
		}
		if strings.HasSuffix(trimmed, "\\") {
			continue
		}
		cur.cmd = strings.Join(strings.Fields(cur.cmd), " ")
		cur.key = withoutComment(cur.cmd)
		cur = nil
	}
	if inSh || other {
		t.Fatal("README.md: a code block is not closed")
	}
	return out
}

// notHere lists the README examples that cannot run on this machine, each
// with the reason. An entry matches the commands that start with its
// prefix; every entry must match a command, so the list cannot go stale,
// and any other example is run.
var notHere = []struct {
	prefix, reason string
	when           func() bool                // nil: always
	instead        func(*session, *testing.T) // what the test does in its place, if anything
}{
	{prefix: "make test", reason: "this test is part of make test"},
	{prefix: "yaz-decode --device gpu", reason: "needs a GPU: on a machine without one it decodes on the CPU with a warning (cmd/yaz-decode's TestGPUMeansHardware), which the examples on the CPU already show"},
	{prefix: "yaz-fetch-model base.en", reason: "a network download (tests never download; the offline failure and the checksum check are TestFetchModelOffline and TestFetchModelVerifies); a generated model is put in its place",
		instead: (*session).writeModel},
	{prefix: "yaz-fetch-model silero-v5.1.2", reason: "a network download (tests never download; the hub address, resume, size and checksum checks are TestFetchVADModel); the real Silero VAD model from the tests' model cache (internal/testvad) is put in its place",
		instead: (*session).copyVADModel},
	{prefix: "yaz-fetch-model parakeet-tdt-0.6b-v3-q8_0", reason: "a network download (TestFetchParakeet checks this entry against a local server); a generated Parakeet model is put in its place",
		instead: (*session).writeParakeetModel},
	{prefix: "ffmpeg ", reason: "ffmpeg is not installed here: make setup does not install it (54 Debian packages for one example); the same pipeline runs with sox above",
		when: func() bool { _, err := exec.LookPath("ffmpeg"); return err != nil }},
	{prefix: "bindsym ", reason: "a line of sway's configuration, not a shell command"},
	{prefix: "bind = ", reason: "a line of Hyprland's configuration, not a shell command"},
	{prefix: "bindr = ", reason: "a line of Hyprland's configuration, not a shell command"},
	{prefix: "gsettings set org.gnome.settings-daemon", reason: "needs a GNOME session (its settings schemas and D-Bus); the command it binds, yazsesd ctl hold toggle, is tested in test/e2e"},
	{prefix: "systemctl --user ", reason: "no systemd user manager runs here (a container); the unit is checked with systemd-analyze in cmd/yazsesd/internal/sdnotify's unit test"},
	{prefix: "journalctl --user ", reason: "no systemd journal here"},
	{prefix: "yaz-type ", reason: "types into the focused window, and the README's session has no display: cmd/yaz-type/internal/x11's TestPipelineTypesExactly and TestPipelineSaysWhatHappened run the program on Xvfb into an xterm, from an empty environment"},
	{prefix: "yaz-capture | yaz-decode | yaz-type", reason: "types into the focused window, and the README's session has no display; the pipeline's two ends are run above and in cmd/yaz-type's tests"},
	{prefix: "claude mcp add ", reason: "Claude Code is not installed here; test/e2e drives yaz-mcp with the MCP Go SDK and the MCP Inspector"},
}

// untilOutput are examples that run until interrupted, as a person at the
// microphone would: the test plays jfk.wav into the sound server (the
// microphone hears the speaker), waits for their first line, then presses
// Ctrl-C (SIGINT to the process group) and wants a clean exit.
var untilOutput = map[string]bool{
	"yaz-capture | yaz-decode":         true,
	"yaz-capture | yaz-decode -f json": true,
}

// daemons start in the background, ready when they say READY=1 on
// NOTIFY_SOCKET, and stop (SIGTERM, exit 0 wanted) at the end of their block.
var daemons = map[string]bool{"yazsesd run": true}

// speakBefore are the examples before which a person speaks (the README's
// "... speak ..."): jfk.wav is played into the sound server first.
var speakBefore = map[string]bool{"yazsesd ctl hold stop": true}

// checks are what some examples must print beyond a clean exit.
var checks = map[string]func(stdout, stderr string) error{
	// Before the README's model step: offline, the generated model.
	"make demo": func(out, errs string) error {
		if !strings.Contains(errs, "No real model found: using a generated random-weight model") || !strings.Contains(out, "00:00:00,000 --> ") {
			return fmt.Errorf("want the offline fallback and jfk.wav's subtitles; stdout:\n%s\nstderr:\n%s", tail(out), tail(errs))
		}
		return nil
	},
	`yaz-decode -f json talk.wav | jq -r '.segments[] | "\(.start_ms)\t\(.text)"'`: func(out, _ string) error {
		if !regexp.MustCompile(`(?m)\A([0-9]+\t\S.*\n)+\z`).MatchString(out) {
			return fmt.Errorf("want lines of start_ms TAB text, got %q", out)
		}
		return nil
	},
	"yazsesd ctl last": func(out, _ string) error {
		if !regexp.MustCompile(`"text": "\S`).MatchString(out) {
			return fmt.Errorf("no transcript after the hold: %q", out)
		}
		return nil
	},
	"yaz-fetch-model --list": func(out, _ string) error {
		if !regexp.MustCompile(`(?m)^base\.en .* installed$`).MatchString(out) {
			return fmt.Errorf("base.en (in the models folder) is not marked installed:\n%s", out)
		}
		return nil
	},
}

// TestREADMEExamples runs every shell example of README.md as written, in
// order, in one session: a copy of the source tree as the working folder
// (with meeting.wav, talk.wav, question.wav, a.wav, b.wav and in.mp3 made from jfk.wav), a
// fresh HOME whose models folder holds a generated model under the default
// name, the installed programs first on PATH, no display, and a private
// PulseAudio server with a null sink as microphone and speaker.
func TestREADMEExamples(t *testing.T) {
	inst := install(t)
	examples := readmeExamples(t)
	if len(examples) < 20 {
		t.Fatalf("found only %d examples in README.md", len(examples))
	}
	s := newSession(t, inst)

	used := make([]bool, len(notHere))
	var bg *daemon
	stopDaemon := func() {
		if bg != nil {
			bg.stop(t)
			bg = nil
		}
	}
	defer stopDaemon()
	block := 0
	for _, ex := range examples {
		if ex.block != block {
			stopDaemon()
			block = ex.block
		}
		reason := ""
		var instead func(*session, *testing.T)
		for i, n := range notHere {
			if strings.HasPrefix(ex.key, n.prefix) && (n.when == nil || n.when()) {
				used[i] = true
				reason, instead = n.reason, n.instead
				break
			}
		}
		t.Run(fmt.Sprintf("L%d %s", ex.line, ex.key), func(t *testing.T) {
			if instead != nil {
				instead(s, t)
			}
			if reason != "" {
				t.Skipf("not run here: %s", reason)
			}
			if speakBefore[ex.key] {
				s.play(t)
			}
			switch {
			case daemons[ex.key]:
				bg = s.startDaemon(t, ex.cmd)
			case untilOutput[ex.key]:
				s.runUntilOutput(t, ex.cmd, strings.HasSuffix(ex.key, "--json"))
			default:
				stdout, stderr := s.run(t, ex.cmd)
				t.Logf("stdout:\n%s", tail(stdout))
				if check := checks[ex.key]; check != nil {
					if err := check(stdout, stderr); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	for i, n := range notHere {
		if !used[i] && (n.when == nil || n.when()) {
			t.Errorf("notHere entry %q matches no README example: remove it", n.prefix)
		}
	}
	for _, m := range []map[string]bool{untilOutput, daemons, speakBefore} {
		for cmd := range m {
			if !hasExample(examples, cmd) {
				t.Errorf("special handling for %q, which is not a README example", cmd)
			}
		}
	}
	for cmd := range checks {
		if !hasExample(examples, cmd) {
			t.Errorf("a check for %q, which is not a README example", cmd)
		}
	}
}

func hasExample(examples []example, key string) bool {
	for _, ex := range examples {
		if ex.key == key {
			return true
		}
	}
	return false
}

// TestREADMEExtraction: the parser joins continuation lines, skips comments
// and other languages' blocks.
func TestREADMEExtraction(t *testing.T) {
	examples := readmeExamples(t)
	for _, want := range []string{
		"yaz-capture | yaz-decode",
		"yazsesd run",
		`gsettings set org.gnome.settings-daemon.plugins.media-keys custom-keybindings "['/org/gnome/settings-daemon/plugins/media-keys/custom-keybindings/yazses/']"`,
	} {
		if !hasExample(examples, want) {
			t.Errorf("README examples lack %q", want)
		}
	}
	for _, ex := range examples {
		if strings.HasPrefix(ex.cmd, "#") || strings.HasPrefix(ex.cmd, "[") || strings.HasSuffix(ex.cmd, "\\") || strings.Contains(ex.key, " #") {
			t.Errorf("L%d: %q is not a command", ex.line, ex.cmd)
		}
	}
	for cmd, want := range map[string]string{
		`yazsesd run   # in a terminal`:      "yazsesd run",
		`a '#b' "#c" d#e # f`:                `a '#b' "#c" d#e`,
		`git log -1 --format=%s | yaz-speak`: `git log -1 --format=%s | yaz-speak`,
		"x\t# tab":                           "x",
	} {
		if got := withoutComment(cmd); got != want {
			t.Errorf("withoutComment(%q) = %q, want %q", cmd, got, want)
		}
	}
}

// session is the shell a new user has: its environment and working folder.
type session struct {
	home string
	dir  string   // the working folder: a copy of the source tree
	env  []string // the environment of every example
	jfk  string
}

func newSession(t *testing.T, inst installed) *session {
	t.Helper()
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	src := filepath.Join(tmp, "yazses")
	for _, d := range []string{home, src} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copySource(t, src)

	goEnv := func(k string) string {
		out, err := bounded(testwait.Context(t), "go", "env", k).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", k, err)
		}
		return strings.TrimSpace(string(out))
	}
	whisperCache := os.Getenv("WHISPER_CACHE")
	if whisperCache == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		whisperCache = filepath.Join(cache, "yazses", "whisper.cpp-1.9.1")
	}
	pulse := startPulse(t)
	env := []string{
		"HOME=" + home,
		"PATH=" + inst.bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"LANG=C.UTF-8", "USER=" + os.Getenv("USER"), "LOGNAME=" + os.Getenv("LOGNAME"), "SHELL=/bin/bash", "TERM=dumb",
		// What the user's own machine keeps in HOME: the Go caches and the
		// whisper.cpp build (make demo must not rebuild them).
		"GOCACHE=" + goEnv("GOCACHE"), "GOMODCACHE=" + goEnv("GOMODCACHE"), "GOPATH=" + goEnv("GOPATH"),
		"GOFLAGS=" + os.Getenv("GOFLAGS"), "GOTOOLCHAIN=local", "GOPROXY=" + goEnv("GOPROXY"),
		"WHISPER_CACHE=" + whisperCache,
		// The tests' Silero VAD model, which make setup would otherwise
		// look for beside this copy and then on the (closed) hub.
		"YAZ_TEST_MODELS=" + testvad.Dir(),
		// Tests never download: a fetch fails at once, as offline.
		"YAZ_MODEL_BASE_URL=" + closedURL(t),
	}
	env = append(env, pulse...)
	s := &session{dir: src, env: env}

	// The example files.
	modcache := goEnv("GOMODCACHE")
	s.jfk = filepath.Join(modcache, "github.com/ggerganov/whisper.cpp/bindings/go@v0.0.0-20260227185758-9453b4b9be9b/samples/jfk.wav")
	jfk, err := os.ReadFile(s.jfk)
	if err != nil {
		t.Fatalf("jfk.wav: %v (go mod download)", err)
	}
	for _, f := range []string{"meeting.wav", "talk.wav", "question.wav", "a.wav", "b.wav"} {
		if err := os.WriteFile(filepath.Join(src, f), jfk, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := bounded(testwait.Context(t), "sox", s.jfk, filepath.Join(src, "in.mp3")).CombinedOutput(); err != nil {
		t.Fatalf("sox jfk.wav in.mp3 (libsox-fmt-mp3): %v\n%s", err, out)
	}
	if _, err := exec.LookPath("ffmpeg"); err == nil {
		if out, err := bounded(testwait.Context(t), "ffmpeg", "-loglevel", "error", "-i", s.jfk, filepath.Join(src, "in.m4a")).CombinedOutput(); err != nil {
			t.Fatalf("ffmpeg jfk.wav in.m4a: %v\n%s", err, out)
		}
	}
	s.home = home
	return s
}

// writeModel stands in for yaz-fetch-model base.en: a generated model
// (tiny.en's dimensions) under the default name in the models folder.
func (s *session) writeModel(t *testing.T) {
	model := filepath.Join(s.home, ".local", "share", "yazses", "models", "ggml-base.en.bin")
	if err := os.MkdirAll(filepath.Dir(model), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := testmodel.WriteFile(model, testmodel.TinyEn, 1); err != nil {
		t.Fatal(err)
	}
}

// copyVADModel stands in for yaz-fetch-model silero-v5.1.2: the real
// Silero VAD model the tests use (internal/testvad's cache) under the name
// the fetch gives it.
func (s *session) copyVADModel(t *testing.T) {
	b := testvad.Bytes(t)
	model := filepath.Join(s.home, ".local", "share", "yazses", "models", "ggml-silero-v5.1.2.bin")
	if err := os.MkdirAll(filepath.Dir(model), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(model, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// copySource copies the checkout's files (tracked, and new ones not
// ignored) to dst and commits them in a fresh repository there, as a clone.
func copySource(t *testing.T, dst string) {
	t.Helper()
	out, err := bounded(testwait.Context(t), "git", "-C", world.root, "ls-files", "-z", "-co", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		from := filepath.Join(world.root, f)
		fi, err := os.Lstat(from)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dst, f)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "Build the voice layer"}} {
		cmd := bounded(testwait.Context(t), "git", append([]string{"-C", dst, "-c", "user.name=Dev", "-c", "user.email=dev@example.org"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

var pulseOnce = sync.OnceValues(func() ([]string, error) {
	dir := filepath.Join(world.tmp, "pulse")
	script := filepath.Join(world.root, "scripts", "pulse-test-server.sh")
	// Not bounded(): the server it starts must outlive it. The script
	// gives up by itself after 10 s without an answer; the bound is a
	// guard beyond that.
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Hang)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sh", script, "start", dir).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("start PulseAudio: %w", err)
	}
	cleanups = append(cleanups, func() {
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Hang)
		defer cancel()
		exec.CommandContext(ctx, "sh", script, "stop", dir).Run()
	})
	return strings.Fields(string(out)), nil
})

// startPulse starts the private PulseAudio server (once) and returns the
// variables that point clients at it.
func startPulse(t *testing.T) []string {
	t.Helper()
	env, err := pulseOnce()
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func (s *session) command(ctx context.Context, cmdline string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "bash", "--norc", "--noprofile", "-o", "pipefail", "-c", cmdline)
	cmd.Dir = s.dir
	cmd.Env = s.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// hang is how long an example may run before it counts as hung; it is a
// guard against a test that never ends, not a speed requirement.
const hang = 3 * time.Minute

// run runs one example to its end and wants exit status 0.
func (s *session) run(t *testing.T, cmdline string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	cmd := s.command(ctx, cmdline)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", cmdline, err, tail(o.String()), tail(e.String()))
	}
	return o.String(), e.String()
}

func tail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}

// play plays jfk.wav into the sound server's default sink, to its end.
func (s *session) play(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	cmd := exec.CommandContext(ctx, "paplay", s.jfk)
	cmd.Env = s.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("paplay jfk.wav: %v\n%s", err, out)
	}
}

// runUntilOutput runs an example that records until interrupted: jfk.wav
// is played into the sink until the example prints a line, then the
// process group gets SIGINT, as from Ctrl-C, and must exit 0.
func (s *session) runUntilOutput(t *testing.T, cmdline string, jsonLines bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	cmd := s.command(ctx, cmdline)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	firstLine := make(chan string, 1)
	var rest bytes.Buffer
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		r := bufio.NewReader(stdout)
		line, err := r.ReadString('\n')
		if err == nil {
			firstLine <- line
		}
		io.Copy(&rest, r)
	}()
	var line string
	// The idle null sink may deliver the first capture callback a second or
	// two late; what is played before is not heard, so play until heard.
	for i := 0; line == "" && i < 5; i++ {
		played := make(chan error, 1)
		playCtx, stopPlaying := context.WithCancel(ctx)
		go func() {
			p := exec.CommandContext(playCtx, "paplay", s.jfk)
			p.Env = s.env
			played <- p.Run()
		}()
		select {
		case line = <-firstLine:
			stopPlaying()
			testwait.Recv(t, played, "paplay to end once stopped")
		case err := <-played:
			stopPlaying()
			if err != nil {
				t.Fatalf("paplay: %v", err)
			}
		case <-readDone:
			stopPlaying()
			testwait.Recv(t, played, "paplay to end once stopped")
			cmd.Wait() // it has ended: its output is closed
			t.Fatalf("%s ended before it printed anything: %v\n%s", cmdline, cmd.ProcessState, tail(stderr.String()))
		case <-ctx.Done():
			stopPlaying()
			t.Fatalf("waiting for %s to print a line while jfk.wav plays: nothing within %v\n%s", cmdline, hang, tail(stderr.String()))
		}
	}
	if line == "" {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		cmd.Wait() // bounded by ctx: its process group is killed at hang
		t.Fatalf("%s printed nothing while jfk.wav played five times\n%s", cmdline, tail(stderr.String()))
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-readDone:
	case <-ctx.Done():
		t.Fatalf("waiting for %s to end its output after Ctrl-C: not within %v\n%s", cmdline, hang, tail(stderr.String()))
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("%s after Ctrl-C: %v, want exit 0\n%s", cmdline, err, tail(stderr.String()))
	}
	if jsonLines && !strings.HasPrefix(line, `{"start_ms":`) {
		t.Errorf("%s printed %q, want a JSON object per utterance", cmdline, line)
	}
}

// daemon is an example running in the background.
type daemon struct {
	cmd    *exec.Cmd
	cmdStr string
	stderr *bytes.Buffer
	done   chan struct{}
	cancel context.CancelFunc
}

// startDaemon starts cmdline in the background and waits until it says
// READY=1 on NOTIFY_SOCKET (sd_notify, as under systemd), or fails if it
// exits first.
func (s *session) startDaemon(t *testing.T, cmdline string) *daemon {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := s.command(ctx, cmdline)
	cmd.Env = append(append([]string{}, s.env...), "NOTIFY_SOCKET="+sock)
	d := &daemon{cmd: cmd, cmdStr: cmdline, stderr: new(bytes.Buffer), done: make(chan struct{}), cancel: cancel}
	cmd.Stdout, cmd.Stderr = io.Discard, d.stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		defer close(d.done)
		cmd.Wait()
	}()
	ready := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				ready <- err
				return
			}
			for _, l := range strings.Split(string(buf[:n]), "\n") {
				if l == "READY=1" {
					ready <- nil
					return
				}
			}
		}
	}()
	select {
	case err := <-ready:
		if err != nil {
			d.stop(t)
			t.Fatalf("%s: notify socket: %v", cmdline, err)
		}
	case <-d.done:
		cancel()
		t.Fatalf("%s exited before it was ready: %v\n%s", cmdline, cmd.ProcessState, tail(d.stderr.String()))
	case <-time.After(hang):
		d.stop(t)
		t.Fatalf("%s: not ready after %s\n%s", cmdline, hang, tail(d.stderr.String()))
	}
	return d
}

// stop sends SIGTERM, as systemctl stop does, and wants exit status 0.
func (d *daemon) stop(t *testing.T) {
	defer d.cancel()
	select {
	case <-d.done:
		t.Errorf("%s had exited by itself: %v\n%s", d.cmdStr, d.cmd.ProcessState, tail(d.stderr.String()))
		return
	default:
	}
	syscall.Kill(d.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(hang):
		t.Errorf("%s: still running %s after SIGTERM", d.cmdStr, hang)
		return
	}
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("%s: exit %d after SIGTERM, want 0\n%s", d.cmdStr, code, tail(d.stderr.String()))
	}
}
