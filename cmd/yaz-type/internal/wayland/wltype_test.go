package wayland_test

import (
	"context"
	"encoding/json"
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
	env = cLocale(t, env)
	typer, err := Open(Auto, Options{Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(typer.Close)
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
	env = cLocale(t, env)
	typer, err := Open(Auto, Options{Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(typer.Close)
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
	err = testwait.Recv(t, done, "Type's end after sway was killed")
	if !errors.Is(err, ErrInterrupted) {
		t.Errorf("Type = %v, want ErrInterrupted", err)
	}
	if got := rec.Contents(t); len(got) >= len(text) {
		t.Errorf("the window received all %d bytes", len(got))
	}
	inj, _ := New(Wayland, Options{Environ: env})
	t.Cleanup(inj.Close)
	if err := inj.Type(context.Background(), untrusted.Typed("next")); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Type after sway exited = %v, want ErrUnavailable", err)
	}
}

// Close closes the connection: the virtual keyboard goes from the seat,
// and the next text dials again and types. Two backends of their own
// (two Typers in one process) hold a virtual keyboard each, and closing
// one leaves the other's.
func TestWaylandCloseAndReconnect(t *testing.T) {
	env := startSway(t)
	rec := startFoot(t, env)
	env = cLocale(t, env)
	w := watchSeat(t, env)
	seat := w.count(t) // the test's own seat keyboard
	inj, _ := New(Wayland, Options{Environ: env})
	t.Cleanup(inj.Close)
	other, _ := New(Wayland, Options{Environ: env})
	t.Cleanup(other.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := inj.Type(ctx, untrusted.Typed("one ")); err != nil {
		t.Fatal(err)
	}
	rec.WaitFor(t, "one ")
	if err := other.Type(ctx, untrusted.Typed("und ")); err != nil {
		t.Fatal(err)
	}
	rec.WaitFor(t, "one und ")
	w.waitFor(t, seat+2, "two backends open")
	inj.Close()
	w.waitFor(t, seat+1, "one backend closed, the other open")
	if err := other.Type(ctx, untrusted.Typed("zwei ")); err != nil {
		t.Fatalf("the other backend, after the first closed: %v", err)
	}
	rec.WaitFor(t, "one und zwei ")
	other.Close()
	w.waitFor(t, seat, "both closed")
	if err := inj.Type(ctx, untrusted.Typed("two ✓")); err != nil {
		t.Fatal(err)
	}
	rec.WaitFor(t, "one und zwei two ✓")
}

// seatWatch counts the virtual keyboards on sway's seat: it hears of
// every input added or removed (swaymsg subscribed to input events) and
// asks sway for its inputs (swaymsg -t get_inputs).
type seatWatch struct {
	env    []string
	events *testwait.Buffer
}

func watchSeat(t testing.TB, env []string) *seatWatch {
	t.Helper()
	w := &seatWatch{env: env, events: &testwait.Buffer{}}
	cmd := exec.Command("swaymsg", "-m", "-r", "-t", "subscribe", `["input"]`)
	cmd.Env = env
	cmd.Stdout = w.events
	if err := cmd.Start(); err != nil {
		t.Fatalf("swaymsg subscribe: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return w
}

// count is the number of virtual keyboards now.
func (w *seatWatch) count(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("swaymsg", "-r", "-t", "get_inputs")
	cmd.Env = w.env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("swaymsg get_inputs: %v", err)
	}
	var inputs []struct {
		Identifier string `json:"identifier"`
		Type       string `json:"type"`
	}
	if err := json.Unmarshal(out, &inputs); err != nil {
		t.Fatalf("swaymsg get_inputs: %v", err)
	}
	n := 0
	for _, in := range inputs {
		if in.Type == "keyboard" && strings.Contains(in.Identifier, "virtual") {
			n++
		}
	}
	return n
}

// waitFor waits until the seat has want virtual keyboards.
func (w *seatWatch) waitFor(t testing.TB, want int, what string) {
	t.Helper()
	n := -1
	if err := testwait.Until(testwait.Context(t), func() bool {
		n = w.count(t)
		return n == want
	}, w.events); err != nil {
		t.Fatalf("%s: the seat has %d virtual keyboards, want %d", what, n, want)
	}
}

// The focus comes from sway's IPC socket in-process: with no swaymsg in
// PATH (an empty folder) and RequireFocus, an unknown focus would refuse;
// here the text arrives. An empty workspace refuses.
func TestWaylandFocusInProcess(t *testing.T) {
	env := startSway(t)
	rec := startFoot(t, env)
	plain := env
	env = cLocale(t, env)
	inj, _ := New(Wayland, Options{Environ: env, RequireFocus: true})
	t.Cleanup(inj.Close)
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
	typer, err := Open(Auto, Options{Environ: f.Env})
	t.Cleanup(typer.Close)
	switch {
	case err == nil && slices.Contains(typer.Backends(), Wayland):
		t.Errorf("auto tries %v on a compositor without the virtual keyboard", typer.Backends())
	case err != nil && (!errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "xdg-desktop-portal")):
		t.Errorf("Open(auto) = %v, want ErrUnavailable saying what to install", err)
	}
	inj, _ := New(Wayland, Options{Environ: f.Env})
	t.Cleanup(inj.Close)
	err = inj.Type(context.Background(), untrusted.Typed("text"))
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrInterrupted) {
		t.Errorf("Type = %v, want ErrUnavailable", err)
	}
}

// A protocol error on the keymap comes before any key: the text was not
// typed, the error says why, and a Typer goes on to the next backend.
func TestWaylandKeymapRefused(t *testing.T) {
	f := wayland.StartFakeCompositor(t, true, true)
	typer, err := Open(Auto, Options{Environ: f.Env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(typer.Close)
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
	t.Cleanup(inj.Close)
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inj, _ := New(Clipboard, Options{Environ: env})
	t.Cleanup(inj.Close)
	err := inj.Type(ctx, untrusted.Typed("pasted text"))
	if !errors.Is(err, backend.ErrNotPasted) || errors.Is(err, ErrInterrupted) {
		t.Fatalf("Type = %v, want errNotPasted", err)
	}
	if got := rec.Contents(t); strings.Contains(got, "pasted") {
		t.Errorf("the window received %q", got)
	}
	typer, _ := Open(Auto, Options{Environ: env, PasteOverChars: 5})
	t.Cleanup(typer.Close)
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
	t.Cleanup(inj.Close)
	err := inj.Type(context.Background(), untrusted.Typed("some text"))
	if !errors.Is(err, ErrInterrupted) {
		t.Errorf("Type = %v, want ErrInterrupted (delivery cannot be told)", err)
	}
	if got, _ := os.ReadFile(clip); string(got) != "before" {
		t.Errorf("clipboard after = %q, want it restored", got)
	}
}
