package wayland_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/wayland"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/untrusted"
)

// cLocale is env in the C locale (no LANG, no LC_*) with a PATH that has
// no tools at all: the in-process backend spawns nothing, and no wtype
// could run.
func cLocale(t testing.TB, env []string) []string {
	t.Helper()
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, "LANG=") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANGUAGE=")
	})
	return append(withoutEnv(env, "PATH"), "PATH="+t.TempDir())
}

// The in-process backend types mixed scripts exactly into a real terminal
// under sway, in the C locale, with no wtype in reach, for short and long
// texts; "auto" picks it.
func TestWaylandInProcessTypesMixedScripts(t *testing.T) {
	env := startSway(t)
	rec := startFoot(t, env)
	t.Cleanup(wayland.Settle)
	env = cLocale(t, env)
	typer, err := Open(Auto, Options{Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	if got := typer.Backends(); len(got) == 0 || got[0] != Wayland {
		t.Fatalf("auto tries %v, want wayland first", got)
	}
	want := ""
	for _, n := range []int{1, 58, 500, 2000} {
		text := wayland.MixedOf(n)
		if n == 1 {
			text = "é"
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		used, err := typer.Type(ctx, text)
		cancel()
		if err != nil {
			t.Fatalf("%d chars: Type: %v", n, err)
		}
		if used != Wayland {
			t.Errorf("%d chars: used %q, want wayland", n, used)
		}
		want += text
		rec.WaitFor(t, want)
	}
}

// The compositor going away part-way through a text ends the call with an
// error (not typed, and not typed again by another backend), in bounded
// time; the next text finds no compositor and says so.
func TestWaylandCompositorGoneMidText(t *testing.T) {
	env, kill := startSwayKill(t)
	rec := startFoot(t, env)
	t.Cleanup(wayland.Settle)
	env = cLocale(t, env)
	typer, err := Open(Auto, Options{Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	wayland.SetAfterBatch(t, func(sent int) {
		if sent >= wayland.Batch {
			kill()
		}
	})
	text := strings.Repeat("abc ", 200)
	done := make(chan error, 1)
	go func() {
		_, err := typer.Type(context.Background(), text)
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(2 * wayland.IOTimeout):
		t.Fatalf("Type still running %v after sway was killed", 2*wayland.IOTimeout)
	}
	if !errors.Is(err, ErrInterrupted) {
		t.Errorf("Type = %v, want ErrInterrupted", err)
	}
	if got := rec.Contents(t); len(got) >= len(text) {
		t.Errorf("the window received all %d bytes", len(got))
	}
	inj, _ := New(Wayland, Options{Environ: env})
	if err := inj.Type(context.Background(), untrusted.Typed("next")); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Type after sway exited = %v, want ErrUnavailable", err)
	}
}

// Settle closes the connection: the virtual keyboard goes, and the next
// text dials again and types.
func TestWaylandSettleAndReconnect(t *testing.T) {
	env := startSway(t)
	rec := startFoot(t, env)
	t.Cleanup(wayland.Settle)
	env = cLocale(t, env)
	inj, _ := New(Wayland, Options{Environ: env})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := inj.Type(ctx, untrusted.Typed("one ")); err != nil {
		t.Fatal(err)
	}
	rec.WaitFor(t, "one ")
	Settle()
	if n := wayland.Clients(); n != 0 {
		t.Fatalf("%d Wayland clients open after Settle", n)
	}
	if err := inj.Type(ctx, untrusted.Typed("two ✓")); err != nil {
		t.Fatal(err)
	}
	rec.WaitFor(t, "one two ✓")
}

// The focus comes from sway's IPC socket in-process: with no swaymsg in
// PATH (an empty folder) and RequireFocus, an unknown focus would refuse;
// here the text arrives. An empty workspace refuses.
func TestWaylandFocusInProcess(t *testing.T) {
	env := startSway(t)
	rec := startFoot(t, env)
	t.Cleanup(wayland.Settle)
	plain := env
	env = cLocale(t, env)
	inj, _ := New(Wayland, Options{Environ: env, RequireFocus: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := inj.Type(ctx, untrusted.Typed("ok")); err != nil {
		t.Fatalf("Type: %v", err)
	}
	rec.WaitFor(t, "ok")
	swaymsg(t, plain, "workspace", "2")
	if f, err := inj.Focus(ctx); err != nil || f != FocusNone {
		t.Errorf("Focus on an empty workspace = %v, %v; want none", f, err)
	}
	if err := inj.Type(ctx, untrusted.Typed("secret")); !errors.Is(err, ErrNoTarget) {
		t.Errorf("Type on an empty workspace = %v, want ErrNoTarget", err)
	}
}

// A compositor without the virtual keyboard (GNOME, KDE): "auto" leaves
// the backend out (here, with no portal and no ydotoold, nothing is left,
// and it says what to install), and the backend itself is unavailable (a
// Typer falls back from it).
func TestWaylandNoVirtualKeyboardGlobal(t *testing.T) {
	f := wayland.StartFakeCompositor(t, false, false)
	t.Cleanup(wayland.Settle)
	typer, err := Open(Auto, Options{Environ: f.Env})
	switch {
	case err == nil && slices.Contains(typer.Backends(), Wayland):
		t.Errorf("auto tries %v on a compositor without the virtual keyboard", typer.Backends())
	case err != nil && (!errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "xdg-desktop-portal")):
		t.Errorf("Open(auto) = %v, want ErrUnavailable saying what to install", err)
	}
	inj, _ := New(Wayland, Options{Environ: f.Env})
	err = inj.Type(context.Background(), untrusted.Typed("text"))
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrInterrupted) {
		t.Errorf("Type = %v, want ErrUnavailable", err)
	}
}

// A protocol error on the keymap comes before any key: the text was not
// typed, the error says why, and a Typer goes on to the next backend.
func TestWaylandKeymapRefused(t *testing.T) {
	f := wayland.StartFakeCompositor(t, true, true)
	t.Cleanup(wayland.Settle)
	typer, err := Open(Auto, Options{Environ: f.Env})
	if err != nil {
		t.Fatal(err)
	}
	if got := typer.Backends(); len(got) == 0 || got[0] != Wayland {
		t.Fatalf("auto tries %v, want wayland first", got)
	}
	used, err := typer.Type(context.Background(), "text")
	if err == nil || errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "protocol error") {
		t.Errorf("Type = %v, want the protocol error, not ErrInterrupted", err)
	}
	if used == Wayland {
		t.Errorf("used %q: the Typer did not go on to the next backend", used)
	}
	if keys := f.Keys.Load(); keys != 0 {
		t.Errorf("the compositor got %d keys after refusing the keymap", keys)
	}
}

// toolsPath is a PATH folder with only the named tools (links to the real
// ones).
func toolsPath(t *testing.T, tools ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, tool := range tools {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s is needed for this test: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The Wayland paste is in-process under sway (data control, and the chord
// on the daemon's virtual keyboard: no wtype in PATH) and counts as typed
// because foot fetched the text; the clipboard holds what it held before.
func TestWaylandPasteInProcess(t *testing.T) {
	env := startSway(t)
	rec := startFoot(t, env)
	t.Cleanup(wayland.Settle)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const before = "copied before: Ärger ✓"
	c := exec.CommandContext(ctx, "wl-copy")
	c.Env = env
	c.Stdin = strings.NewReader(before)
	if err := c.Run(); err != nil {
		t.Fatalf("wl-copy: %v", err)
	}
	// No wtype: wl-paste runs cat (and sh) to write out what it got.
	env = append(withoutEnv(env, "PATH"), "PATH="+toolsPath(t, "wl-copy", "wl-paste", "swaymsg", "cat", "sh"))
	inj, _ := New(Clipboard, Options{Environ: env})
	text := wayland.MixedOf(500)
	if err := inj.Type(ctx, untrusted.Typed(text)); err != nil {
		t.Fatalf("Type: %v", err)
	}
	rec.WaitFor(t, text)
	if got := runTool(ctx, t, env, "wl-paste", "--no-newline"); got != before {
		t.Errorf("clipboard after paste = %q, want %q", got, before)
	}
}

// A window that does not paste with the chord (foot under another app_id
// gets Ctrl+V, which it does not paste with) fetches nothing: the paste is
// not typed, and the error is not ErrInterrupted, so a Typer types the
// text instead.
func TestWaylandPasteNotFetched(t *testing.T) {
	env := startSway(t)
	rec := startFootApp(t, env, "viewer")
	t.Cleanup(wayland.Settle)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inj, _ := New(Clipboard, Options{Environ: env})
	err := inj.Type(ctx, untrusted.Typed("pasted text"))
	if !errors.Is(err, backend.ErrNotPasted) || errors.Is(err, ErrInterrupted) {
		t.Fatalf("Type = %v, want errNotPasted", err)
	}
	if got := rec.Contents(t); strings.Contains(got, "pasted") {
		t.Errorf("the window received %q", got)
	}
	typer, _ := Open(Auto, Options{Environ: env, PasteOverChars: 5})
	used, err := typer.Type(ctx, "typed instead")
	if err != nil || used != Wayland {
		t.Fatalf("Typer: %q, %v; want typed by wayland after the paste failed", used, err)
	}
	// foot sends each Ctrl+V on as ^V: what else arrived is the typing.
	var got string
	if testwait.Until(ctx, func() bool {
		got = strings.ReplaceAll(rec.Contents(t), "\x16", "")
		return got == "typed instead"
	}, rec) != nil {
		t.Fatalf("the window received %q, want %q", got, "typed instead")
	}
}

// Without data control (a compositor of the test's own), the paste goes
// through wl-copy and wtype, which cannot tell whether the window took it:
// not typed (ErrInterrupted: not typed again either), and the clipboard is
// put back.
func TestWaylandPasteUnprovenIsNotTyped(t *testing.T) {
	f := wayland.StartFakeCompositor(t, true, false)
	t.Cleanup(wayland.Settle)
	dir := t.TempDir()
	clip := filepath.Join(dir, "clip")
	tools := map[string]string{
		"wl-copy":  "#!/bin/sh\nif [ \"$1\" = --clear ]; then rm -f " + clip + "; else cat > " + clip + "; fi\n",
		"wl-paste": "#!/bin/sh\nexec cat " + clip + "\n",
		"wtype":    "#!/bin/sh\nexit 0\n",
	}
	for name, script := range tools {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(clip, []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(withoutEnv(f.Env, "PATH"), "PATH="+dir+":/usr/bin:/bin")
	inj, _ := New(Clipboard, Options{Environ: env, RestoreDelay: time.Millisecond})
	err := inj.Type(context.Background(), untrusted.Typed("some text"))
	if !errors.Is(err, ErrInterrupted) {
		t.Errorf("Type = %v, want ErrInterrupted (delivery cannot be told)", err)
	}
	if got, _ := os.ReadFile(clip); string(got) != "before" {
		t.Errorf("clipboard after = %q, want it restored", got)
	}
}
