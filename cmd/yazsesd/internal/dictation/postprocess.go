package dictation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// PostProcess is dictation.post_process: a command that a dictation's text
// goes through before it is typed.
type PostProcess struct {
	Argv    []string      // nil or empty: none
	Timeout time.Duration // dictation.post_process_timeout_ms
}

// MaxPostOutput is the most a post-process command may print; more is a
// failure (output_too_long) and the text is typed as it was.
const MaxPostOutput = 64 << 10

// postEnv are the variables a post-process command gets from the
// daemon's environment, where it has them: enough to find programs and
// files and to read UTF-8, never the session bus, the display or the
// runtime folder (the daemon's socket is there).
var postEnv = []string{"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR"}

// Why a post-process run's output was not used (the log's reason).
const (
	PostTimeout     = "timeout"
	PostExitStatus  = "exit_status"
	PostSignal      = "signal"
	PostStartFailed = "start_failed"
	PostEmpty       = "empty_output"
	PostTooLong     = "output_too_long"
	PostInvalidUTF8 = "invalid_utf8"
)

// Apply runs the command on text and returns what to type: its output
// under the transcript rule (Text without replacements), or text itself
// when there is no command or the run failed, timed out or printed
// nothing; the log says why, with the run's time and the size of its
// stderr, never the text nor the stderr (which could hold it).
func (p PostProcess) Apply(ctx context.Context, log *slog.Logger, text string) string {
	if len(p.Argv) == 0 || p.Argv[0] == "" || text == "" {
		return text
	}
	t0 := time.Now()
	out, stderr, reason, err := p.run(ctx, text)
	attrs := []any{"program", p.Argv[0], "ms", time.Since(t0).Milliseconds(), "stderr_bytes", stderr}
	if reason == "" {
		if res := Text(out, nil); res != "" {
			log.Debug("dictation.post_process ran", append(attrs, "chars_in", utf8.RuneCountInString(text), "chars_out", utf8.RuneCountInString(res))...)
			return res
		}
		reason = PostEmpty
	}
	attrs = append(attrs, "reason", reason)
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	log.Warn("dictation.post_process gave no text to type: the text is typed as it was", attrs...)
	return text
}

// run runs the command once: its output, the size of its stderr, and why
// the output is not to be used ("" when it is), with the error that says
// more (an exit status, never the output).
func (p PostProcess) run(ctx context.Context, text string) (out string, stderrBytes int64, reason string, err error) {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Argv[0], p.Argv[1:]...)
	cmd.Env = minimalEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The whole group: a shell script's own children (a sleep, a model
	// runner) die with it, and hold no pipe open past the bound.
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	// A descendant that left the group and kept a pipe open does not
	// hold the dictation either.
	cmd.WaitDelay = 100 * time.Millisecond
	cmd.Stdin = strings.NewReader(text + "\n")
	var stdout capped
	var stderr counter
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return "", 0, PostStartFailed, fmt.Errorf("post-process: %w", err)
	}
	err = cmd.Wait()
	// Whatever the command did, its group is ended: nothing it started
	// outlives the dictation.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "", stderr.n, PostTimeout, fmt.Errorf("post-process: no end within %v", timeout)
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "", stderr.n, PostSignal, fmt.Errorf("post-process: %w", err)
		}
		return "", stderr.n, PostExitStatus, fmt.Errorf("post-process: %w", err)
	case err != nil && !errors.Is(err, exec.ErrWaitDelay):
		return "", stderr.n, PostStartFailed, fmt.Errorf("post-process: %w", err)
	case stdout.over:
		return "", stderr.n, PostTooLong, fmt.Errorf("post-process: more than %d bytes of output", MaxPostOutput)
	case !utf8.Valid(stdout.b.Bytes()):
		return "", stderr.n, PostInvalidUTF8, errors.New("post-process: output is not UTF-8")
	}
	return stdout.b.String(), stderr.n, "", nil
}

// minimalEnv is postEnv's variables as the daemon has them.
func minimalEnv() []string {
	env := []string{}
	for _, k := range postEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// capped keeps up to MaxPostOutput bytes and notes more.
type capped struct {
	b    bytes.Buffer
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := MaxPostOutput - c.b.Len(); len(p) > room {
		c.over = true
		c.b.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return c.b.Write(p)
}

// counter counts bytes and keeps none.
type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}
