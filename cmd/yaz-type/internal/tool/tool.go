// Package tool runs the programs the typing backends use (xdotool,
// xmodmap, xprop, wtype, ydotool, swaymsg, xclip, xsel, wl-copy,
// wl-paste) without a shell, each in its own process group, with a UTF-8
// character type, and with the text kept out of every error; and sets a
// clipboard through them ([Put]).
package tool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
)

// waitDelay bounds the wait for a tool's output pipes after it exits or is
// killed (a forked helper can hold them).
const waitDelay = 2 * time.Second

// Call is one run of a tool.
type Call struct {
	Env    []string
	Stdin  []byte // nil: /dev/null
	Secret string // text that must not appear in an error
	// Detach: the tool forks a helper that keeps running (xclip, wl-copy);
	// its stdout and stderr go to /dev/null so that nothing waits for it.
	Detach bool
}

// LookPath finds a tool in the PATH of env.
func LookPath(env []string, name string) (string, error) {
	path := backend.Getenv(env, "PATH")
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + name
		if _, err := exec.LookPath(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH: %w", name, backend.ErrUnavailable)
}

// Run runs name with args in its own process group (killed when ctx ends)
// and returns its stdout. Errors never contain c.Secret.
func (c Call) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	prog, err := LookPath(c.Env, name)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = utf8Locale(c.Env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = waitDelay
	if c.Stdin != nil {
		cmd.Stdin = bytes.NewReader(c.Stdin)
	}
	var stdout, stderr bytes.Buffer
	if !c.Detach {
		cmd.Stdout = &stdout
		cmd.Stderr = &stderr
	}
	err = cmd.Run()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", name, ctx.Err())
		}
		if msg := Redact(stderr.String(), c.Secret); msg != "" {
			return nil, fmt.Errorf("%s: %w: %s", name, scrubErr(err, c.Secret), msg)
		}
		return nil, fmt.Errorf("%s: %w", name, scrubErr(err, c.Secret))
	}
	return stdout.Bytes(), nil
}

// scrubErr keeps exec's error unless its text would show the secret (it
// never does: exit statuses and signals only; this is a guard).
func scrubErr(err error, secret string) error {
	if Redact(err.Error(), secret) == "" {
		return errors.New("failed")
	}
	return err
}

// Redact returns the first line of a tool's message, cut to 200 bytes, or
// "" when it contains the secret or any word of it of three or more
// characters.
func Redact(msg, secret string) string {
	msg, _, _ = strings.Cut(strings.TrimSpace(msg), "\n")
	msg = strings.TrimSpace(msg)
	if len(msg) > 200 {
		cut := 200
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut]
	}
	if msg == "" || secret == "" {
		return msg
	}
	low := strings.ToLower(msg)
	if strings.Contains(low, strings.ToLower(strings.TrimSpace(secret))) {
		return ""
	}
	words := strings.FieldsFunc(strings.ToLower(secret), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for _, w := range words {
		if utf8.RuneCountInString(w) >= 3 && strings.Contains(low, w) {
			return ""
		}
	}
	return msg
}

// Sleep waits d or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// utf8Locale returns env with a UTF-8 character type: xdotool, wtype and
// ydotool read the text in the encoding of LC_CTYPE and, in the C locale
// (a systemd user manager often sets no LANG), drop every character that
// is not ASCII, exiting 0 ("Grüße" arrives as "Gr"). An environment whose
// character type is UTF-8 already is returned as it is; otherwise LC_ALL
// (which would win) goes and LC_CTYPE is C.UTF-8, which glibc always has.
func utf8Locale(env []string) []string {
	ctype := backend.Getenv(env, "LC_ALL")
	if ctype == "" {
		ctype = backend.Getenv(env, "LC_CTYPE")
	}
	if ctype == "" {
		ctype = backend.Getenv(env, "LANG")
	}
	if c := strings.ToLower(ctype); strings.Contains(c, "utf-8") || strings.Contains(c, "utf8") {
		return env
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "LC_ALL=") && !strings.HasPrefix(kv, "LC_CTYPE=") {
			out = append(out, kv)
		}
	}
	return append(out, "LC_CTYPE=C.UTF-8")
}
