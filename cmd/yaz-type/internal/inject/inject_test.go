package inject

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/yazses/yazses/lib/untrusted"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The sentence the typing tests share, with a check mark outside every legacy
// keysym set and letters whose upper case xdotool alone gets wrong.
const unicodeText = "Grüße, Ünïcödé ✓"

// A tool that fails and prints the text it was given never puts the text
// into the error.
func TestToolErrorsDoNotShowText(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"wtype: cannot type: $(cat)\" >&2\nexit 3\n"
	if err := os.WriteFile(filepath.Join(dir, "wtype"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + dir + ":/usr/bin:/bin", "WAYLAND_DISPLAY=wayland-test"}
	inj, err := New(Wtype, Options{Environ: env, WtypeDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	err = inj.Type(context.Background(), untrusted.Typed("confidential medical notes"))
	if err == nil {
		t.Fatal("Type succeeded with a failing tool")
	}
	if s := err.Error(); strings.Contains(s, "confidential") || strings.Contains(s, "medical") || !strings.Contains(s, "exit status 3") {
		t.Errorf("error = %q: want the exit status and no text", s)
	}
}

// wtype and ydotool get the text on stdin and fixed arguments: a fake tool
// records both.
func TestArgvAndStdin(t *testing.T) {
	tests := []struct {
		name     string
		env      []string
		opts     Options
		wantArgv string
	}{
		{Wtype, []string{"WAYLAND_DISPLAY=wayland-test"}, Options{}, "-s 200 -"},
		{Wtype, []string{"WAYLAND_DISPLAY=wayland-test"}, Options{WtypeDelay: -1}, "-"},
		{Ydotool, nil, Options{}, "type --file /dev/stdin"},
	}
	for _, tt := range tests {
		t.Run(tt.name+tt.wantArgv, func(t *testing.T) {
			dir := t.TempDir()
			script := "#!/bin/sh\necho \"$@\" > \"$0.argv\"\ncat > \"$0.stdin\"\n"
			tool := filepath.Join(dir, tt.name)
			if err := os.WriteFile(tool, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			tt.opts.Environ = append([]string{"PATH=" + dir + ":/usr/bin:/bin"}, tt.env...)
			inj, err := New(tt.name, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			f, err := inj.Focus(context.Background())
			if err != nil || f != FocusUnknown {
				t.Errorf("Focus = %v, %v; want unknown", f, err)
			}
			if err := inj.Type(context.Background(), untrusted.Typed("-- --help\n"+unicodeText)); err != nil {
				t.Fatalf("Type: %v", err)
			}
			argv, _ := os.ReadFile(tool + ".argv")
			stdin, _ := os.ReadFile(tool + ".stdin")
			if got := strings.TrimSpace(string(argv)); got != tt.wantArgv {
				t.Errorf("argv = %q, want %q", got, tt.wantArgv)
			}
			if got, want := string(stdin), "-- --help "+unicodeText; got != want {
				t.Errorf("stdin = %q, want %q", got, want)
			}
			// RequireFocus: unknown is no target, and the tool never runs.
			os.Remove(tool + ".argv")
			tt.opts.RequireFocus = true
			strict, _ := New(tt.name, tt.opts)
			if err := strict.Type(context.Background(), untrusted.Typed("x")); !errors.Is(err, ErrNoTarget) {
				t.Errorf("RequireFocus: Type = %v, want ErrNoTarget", err)
			}
			if _, err := os.Stat(tool + ".argv"); err == nil {
				t.Error("RequireFocus: the tool ran")
			}
		})
	}
}

func TestStdout(t *testing.T) {
	var buf bytes.Buffer
	typer, err := Open(Stdout, Options{Stdout: &buf})
	if err != nil {
		t.Fatal(err)
	}
	used, err := typer.Type(context.Background(), "one\ntwo")
	if err != nil || used != Stdout {
		t.Fatalf("Type = %q, %v", used, err)
	}
	if _, err := typer.Type(context.Background(), "\r\n"); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != "one two\n" {
		t.Errorf("stdout got %q", got)
	}
}

func TestOpen(t *testing.T) {
	if _, err := Open(Auto, Options{Environ: []string{"PATH=/bin"}}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Open(auto) without a display = %v, want ErrUnavailable", err)
	}
	if _, err := Open("xdotool --delay 0", Options{}); !errors.Is(err, ErrUnknownBackend) {
		t.Errorf("Open(bad) = %v, want ErrUnknownBackend", err)
	}
	for _, name := range Backends {
		if _, err := New(name, Options{}); err != nil {
			t.Errorf("New(%q): %v", name, err)
		}
	}
	// No display at all: the X11 and Wayland backends are unavailable.
	for _, name := range []string{X11, Xdotool, Wtype, Clipboard} {
		inj, _ := New(name, Options{Environ: []string{"PATH=/usr/bin:/bin"}})
		if err := inj.Type(context.Background(), untrusted.Typed("x")); !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s without a display: %v, want ErrUnavailable", name, err)
		}
	}
}
