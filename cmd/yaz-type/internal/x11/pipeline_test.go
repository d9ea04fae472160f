package x11_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testbin"
	"github.com/yazses/yazses/internal/testx"
)

// yazType runs the yaz-type program as a pipeline's caller or a service
// manager would: an empty environment but for PATH, HOME and the given
// variables, no LANG (the C locale). It returns the exit status and
// stderr.
func yazType(t *testing.T, prog string, env []string, stdin string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + t.TempDir()}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stderr.String()
	}
	t.Fatalf("run yaz-type: %v", err)
	return -1, ""
}

// TestPipelineTypesExactly: yaz-type started with an empty environment
// (DISPLAY alone, no LANG) types its arguments, or each line of stdin with
// a space between lines, into a stock xterm exactly: no Enter, no other
// control character; exit 0 only then.
func TestPipelineTypesExactly(t *testing.T) {
	prog := testbin.Program(t, "yaz-type")
	for _, c := range []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"args", []string{"Grüße aus Köln —", "ψυχή, 日本語 ✓"}, "", "Grüße aus Köln — ψυχή, 日本語 ✓"},
		{"lines", nil, "first line\nsecond\tpart\r\n\nthird\x07 end", "first line second part third end"},
		{"one", []string{"x"}, "", "x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := testx.Start(t)
			rec := startRecorder(t, x.Env)
			rec.Focus(t)
			code, stderr := yazType(t, prog, []string{"DISPLAY=" + x.Display}, c.stdin, c.args...)
			if code != 0 {
				t.Fatalf("yaz-type exit %d, want 0: %s", code, stderr)
			}
			if got := rec.Settled(t); got != c.want {
				t.Errorf("window received %q, want %q", got, c.want)
			}
		})
	}
}

// TestPipelineSaysWhatHappened: no focused window is exit 4 and nothing
// arrives anywhere; no display is exit 7 and says what is missing; a
// terminal with no text is a usage error.
func TestPipelineSaysWhatHappened(t *testing.T) {
	prog := testbin.Program(t, "yaz-type")
	x := testx.Start(t)
	rec := startRecorder(t, x.Env) // not focused: the focus is PointerRoot
	code, stderr := yazType(t, prog, []string{"DISPLAY=" + x.Display}, "", "nobody has the focus")
	if code != 4 || !strings.Contains(stderr, "no window has the keyboard focus") {
		t.Errorf("no focus: exit %d, %q; want 4 and why", code, stderr)
	}
	if got := rec.Settled(t); got != "" {
		t.Errorf("the unfocused window received %q", got)
	}
	code, stderr = yazType(t, prog, nil, "", "no display")
	if code != 7 || !strings.Contains(stderr, "no WAYLAND_DISPLAY or DISPLAY") {
		t.Errorf("no display: exit %d, %q; want 7 and what is missing", code, stderr)
	}
	if _, err := os.Stat("/dev/null"); err == nil {
		code, stderr = yazType(t, prog, []string{"DISPLAY=" + x.Display}, "", "--route")
		if code != 0 || stderr != "" {
			t.Errorf("--route: exit %d, %q", code, stderr)
		}
	}
}
