package xdotool_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/inject"
	"github.com/yazses/yazses/internal/testx"
	"github.com/yazses/yazses/lib/untrusted"
)

// The tests here drive the xdotool backend through package inject, as
// the daemon does, on a private Xvfb into a recording xterm
// (internal/testx); these names keep them as they were written.
type Options = inject.Options

const Xdotool = inject.Xdotool

var (
	New  = inject.New
	Open = inject.Open
)

// The sentence the typing tests share, with a check mark outside every legacy
// keysym set and letters whose upper case xdotool alone gets wrong.
const unicodeText = "Grüße, Ünïcödé ✓"

// startX starts a private Xvfb and returns an environment that points at it.
// A missing Xvfb fails the test: CI installs it (scripts/install-deps.sh).
func startX(t testing.TB) []string {
	t.Helper()
	return testx.Start(t).Env
}

func startRecorder(t testing.TB, env []string) *testx.Recorder {
	t.Helper()
	return testx.StartRecorder(t, env)
}

var (
	withoutEnv = testx.WithoutEnv
	runTool    = testx.RunTool
)

func TestXdotoolTypesUnicodeIntact(t *testing.T) {
	env := startX(t)
	rec := startRecorder(t, env)
	rec.Focus(t)
	typer, err := Open(Xdotool, Options{Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(typer.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Line breaks and a tab become spaces; a BEL and an ESC vanish.
	in := unicodeText + "\r\nline two\ttab\a\x1b end"
	want := unicodeText + " line two tab end"
	used, err := typer.Type(ctx, in)
	if err != nil {
		t.Fatalf("Type: %v", err)
	}
	if used != Xdotool {
		t.Errorf("used = %q, want %q", used, Xdotool)
	}
	rec.WaitFor(t, want)
	// The spare keycodes are free again afterwards.
	pke := runTool(ctx, t, env, "xmodmap", "-pke")
	if strings.Contains(pke, "U2713") || strings.Contains(pke, "Udiaeresis") {
		t.Errorf("keycodes still bound after typing:\n%s", pke)
	}
}

func TestCancelKillsTool(t *testing.T) {
	env := startX(t)
	rec := startRecorder(t, env)
	rec.Focus(t)
	inj, err := New(Xdotool, Options{Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inj.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	// 2000 keys at 12 ms each take 24 s. (No ceiling on how long Type
	// took: a Type that waited for the tool would have typed it all.)
	err = inj.Type(ctx, untrusted.Typed(strings.Repeat("a", 2000)))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Type = %v, want deadline exceeded", err)
	}
	// No xdotool is left typing: none runs on this display once Type has
	// returned, and the window got part of the text only.
	display := "DISPLAY=" + backend.Getenv(env, "DISPLAY")
	if pids := toolsOn("xdotool", display); len(pids) > 0 {
		t.Fatalf("xdotool still runs on this display after the cancel: pids %v", pids)
	}
	if n := len(rec.Settled(t)); n >= 2000 {
		t.Fatalf("the window received %d bytes: the whole text, want a part", n)
	}
}

// toolsOn lists the processes named comm whose environment holds envVar.
func toolsOn(comm, envVar string) []string {
	var pids []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		c, err := os.ReadFile("/proc/" + d.Name() + "/comm")
		if err != nil || strings.TrimSpace(string(c)) != comm {
			continue
		}
		e, err := os.ReadFile("/proc/" + d.Name() + "/environ")
		if err == nil && slices.Contains(strings.Split(string(e), "\x00"), envVar) {
			pids = append(pids, d.Name())
		}
	}
	return pids
}

// withoutLocale is env with no locale at all (as a systemd user manager
// often has it) or with a locale that is not UTF-8.
func withoutLocale(env []string, extra ...string) []string {
	return append(withoutEnv(env, "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES"), extra...)
}

// The typing tools read the text in the locale's encoding: without a
// UTF-8 locale xdotool loses every character that is not ASCII and exits
// 0. It gets one whatever the daemon's own locale (wtype: see
// wayland's test of the same name).
func TestToolsTypeUTF8WithoutLocale(t *testing.T) {
	const text = "Grüße 日本語"
	for _, loc := range [][]string{nil, {"LC_ALL=C"}, {"LANG=C", "LC_CTYPE=POSIX"}} {
		t.Run("x11 "+strings.Join(loc, " "), func(t *testing.T) {
			env := startX(t)
			rec := startRecorder(t, env) // the terminal itself in UTF-8
			rec.Focus(t)
			inj, _ := New(Xdotool, Options{Environ: withoutLocale(env, loc...)})
			t.Cleanup(inj.Close)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := inj.Type(ctx, untrusted.Typed(text)); err != nil {
				t.Fatalf("Type: %v", err)
			}
			rec.WaitFor(t, text)
		})
	}
}
