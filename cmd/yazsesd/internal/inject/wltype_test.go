package inject

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
)

// mixedScripts is Latin with combining marks, Greek, Hebrew, CJK, emoji
// and ASCII punctuation with spaces: every kind of character a keymap of
// its own must carry.
const mixedScripts = "Cafe\u0301 nai\u0308ve, Grüße! Καλημέρα κόσμε; שלום עולם: 日本語のテキスト 中文 😀🎉 " +
	"(1+2)*3 = 9, {ok} [yes] <no> @home #tag $5 %50 ^_^ ~/p|q\\r `t` 'q' \"dq\"? "

// mixedOf is n characters of mixedScripts, repeated; from 2000 characters
// on, with 300 more distinct CJK characters in it, so that the text needs
// more than one keymap.
func mixedOf(n int) string {
	var r []rune
	if n >= 2000 {
		for c := rune(0x4e00); c < 0x4e00+300; c++ {
			r = append(r, c)
		}
	}
	base := []rune(mixedScripts)
	for len(r) < n {
		r = append(r, base[:min(len(base), n-len(r))]...)
	}
	return string(r)
}

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

func TestWlPlan(t *testing.T) {
	for _, n := range []int{1, 58, 500, 2000, 5000} {
		text := mixedOf(n)
		pieces := wlPlan(text)
		var back strings.Builder
		for i, p := range pieces {
			if len(p.code) > wlKeysPerMap {
				t.Errorf("%d chars: piece %d has %d keys, more than %d", n, i, len(p.code), wlKeysPerMap)
			}
			seen := map[uint32]rune{}
			for r, c := range p.code {
				if c+8 < wlMinKeycode || c+8 > wlMaxKeycode {
					t.Errorf("%d chars: %U on keycode %d, outside %d-%d", n, r, c+8, wlMinKeycode, wlMaxKeycode)
				}
				if o, dup := seen[c]; dup {
					t.Errorf("%d chars: %U and %U share code %d", n, r, o, c)
				}
				seen[c] = r
				if !strings.Contains(p.keymap, fmt.Sprintf("<K%d> = %d;", c+8-wlMinKeycode, c+8)) ||
					!strings.Contains(p.keymap, fmt.Sprintf("key <K%d> { type = \"ONE_LEVEL\", [ %s ] };", c+8-wlMinKeycode, xkbKeysym(r))) {
					t.Errorf("%d chars: keymap lacks %U on keycode %d", n, r, c+8)
				}
			}
			back.WriteString(string(p.text))
		}
		if back.String() != text {
			t.Errorf("%d chars: the pieces spell %q", n, back.String())
		}
		if want := 1 + btoi(n >= 2000); len(pieces) != want {
			t.Errorf("%d chars: %d pieces, want %d", n, len(pieces), want)
		}
	}
	// Keysyms as xkbcommon names them: Latin-1 its own, others Unicode.
	for r, want := range map[rune]string{'a': "U0061", 'é': "U00E9", 'λ': "U03BB", '😀': "U1F600", 0x301: "U0301"} {
		if got := xkbKeysym(r); got != want {
			t.Errorf("keysym of %U = %s, want %s", r, got, want)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The in-process backend types mixed scripts exactly into a real terminal
// under sway, in the C locale, with no wtype in reach, for short and long
// texts; "auto" picks it.
func TestWaylandInProcessTypesMixedScripts(t *testing.T) {
	env := startSway(t)
	rec := startFoot(t, env)
	t.Cleanup(closeWayland)
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
		text := mixedOf(n)
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
	t.Cleanup(closeWayland)
	env = cLocale(t, env)
	typer, err := Open(Auto, Options{Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	wlAfterBatch = func(sent int) {
		if sent >= wlBatch {
			kill()
		}
	}
	t.Cleanup(func() { wlAfterBatch = nil })
	text := strings.Repeat("abc ", 200)
	done := make(chan error, 1)
	go func() {
		_, err := typer.Type(context.Background(), text)
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(2 * wlIOTimeout):
		t.Fatalf("Type still running %v after sway was killed", 2*wlIOTimeout)
	}
	if !errors.Is(err, ErrInterrupted) {
		t.Errorf("Type = %v, want ErrInterrupted", err)
	}
	if got := rec.Contents(t); len(got) >= len(text) {
		t.Errorf("the window received all %d bytes", len(got))
	}
	inj, _ := New(Wayland, Options{Environ: env})
	if err := inj.Type(context.Background(), "next"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Type after sway exited = %v, want ErrUnavailable", err)
	}
}

// Settle closes the connection: the virtual keyboard goes, and the next
// text dials again and types.
func TestWaylandSettleAndReconnect(t *testing.T) {
	env := startSway(t)
	rec := startFoot(t, env)
	t.Cleanup(closeWayland)
	env = cLocale(t, env)
	inj, _ := New(Wayland, Options{Environ: env})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := inj.Type(ctx, "one "); err != nil {
		t.Fatal(err)
	}
	rec.WaitFor(t, "one ")
	Settle()
	wlMu.Lock()
	n := len(wlClients)
	wlMu.Unlock()
	if n != 0 {
		t.Fatalf("%d Wayland clients open after Settle", n)
	}
	if err := inj.Type(ctx, "two ✓"); err != nil {
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
	t.Cleanup(closeWayland)
	plain := env
	env = cLocale(t, env)
	inj, _ := New(Wayland, Options{Environ: env, RequireFocus: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := inj.Type(ctx, "ok"); err != nil {
		t.Fatalf("Type: %v", err)
	}
	rec.WaitFor(t, "ok")
	swaymsg(t, plain, "workspace", "2")
	if f, err := inj.Focus(ctx); err != nil || f != FocusNone {
		t.Errorf("Focus on an empty workspace = %v, %v; want none", f, err)
	}
	if err := inj.Type(ctx, "secret"); !errors.Is(err, ErrNoTarget) {
		t.Errorf("Type on an empty workspace = %v, want ErrNoTarget", err)
	}
}

// fakeCompositor is a Wayland server of the test's own that speaks the
// requests the wayland backend sends: it advertises a seat (and the
// virtual keyboard manager when manager is set), answers wl_display.sync,
// and, with failKeymap, answers the first keymap with a protocol error and
// hangs up, as wlroots does with a keymap it cannot compile. keys counts
// the key requests it got.
type fakeCompositor struct {
	env  []string
	keys atomic.Int64
}

func startFakeCompositor(t *testing.T, manager, failKeymap bool) *fakeCompositor {
	t.Helper()
	dir := t.TempDir()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "wayland-fake"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeCompositor{env: []string{"XDG_RUNTIME_DIR=" + dir, "WAYLAND_DISPLAY=wayland-fake", "PATH=" + t.TempDir()}}
	done := make(chan struct{})
	var conns sync.WaitGroup
	go func() {
		defer close(done)
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				defer c.Close()
				f.serve(c, manager, failKeymap)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		conns.Wait()
	})
	return f
}

func (f *fakeCompositor) serve(c *net.UnixConn, withManager, failKeymap bool) {
	send := func(m *wlMsg) bool {
		_, err := c.Write(m.bytes())
		return err == nil
	}
	var registry, manager, keyboard uint32
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	buf := make([]byte, 0, 8192)
	chunk := make([]byte, 4096)
	oob := make([]byte, 256)
	for {
		n, oobn, _, _, err := c.ReadMsgUnix(chunk, oob)
		closeFds(oob[:max(oobn, 0)])
		buf = append(buf, chunk[:max(n, 0)]...)
		for len(buf) >= 8 {
			obj, word := binary.LittleEndian.Uint32(buf), binary.LittleEndian.Uint32(buf[4:])
			size, op := int(word>>16), word&0xffff
			if len(buf) < size {
				break
			}
			a := &wlArgs{b: buf[8:size]}
			switch {
			case obj == wlDisplayID && op == wlDisplayGetRegistry:
				registry = a.uint()
				send(newWlMsg(registry, wlRegistryGlobal).uint(1).str(wlSeatInterface).uint(7))
				if withManager {
					send(newWlMsg(registry, wlRegistryGlobal).uint(2).str(wlVirtualKeyboardManager).uint(1))
				}
			case obj == wlDisplayID && op == wlDisplaySync:
				id := a.uint()
				send(newWlMsg(id, wlCallbackDone).uint(0))
				send(newWlMsg(wlDisplayID, wlDisplayDeleteID).uint(id))
			case obj == registry && op == wlRegistryBind:
				name, iface := a.uint(), a.str()
				_, id := a.uint(), a.uint()
				if name == 2 && iface == wlVirtualKeyboardManager {
					manager = id
				}
			case manager != 0 && obj == manager && op == zwpVirtualKeyboardManagerCreateVirtualKeyboard:
				_ = a.uint() // the seat
				keyboard = a.uint()
			case keyboard != 0 && obj == keyboard && op == zwpVirtualKeyboardKeymap:
				if failKeymap {
					send(newWlMsg(wlDisplayID, wlDisplayError).uint(obj).uint(2).str("invalid keymap"))
					return
				}
			case keyboard != 0 && obj == keyboard && op == zwpVirtualKeyboardKey:
				f.keys.Add(1)
			}
			buf = buf[size:]
		}
		if err != nil {
			return
		}
	}
}

// A compositor without the virtual keyboard (GNOME, KDE): "auto" leaves
// the backend out, and the backend itself is unavailable (a Typer falls
// back from it).
func TestWaylandNoVirtualKeyboardGlobal(t *testing.T) {
	f := startFakeCompositor(t, false, false)
	t.Cleanup(closeWayland)
	typer, err := Open(Auto, Options{Environ: f.env})
	if err != nil {
		t.Fatal(err)
	}
	if got := typer.Backends(); slices.Contains(got, Wayland) {
		t.Errorf("auto tries %v on a compositor without the virtual keyboard", got)
	}
	inj, _ := New(Wayland, Options{Environ: f.env})
	err = inj.Type(context.Background(), "text")
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrInterrupted) {
		t.Errorf("Type = %v, want ErrUnavailable", err)
	}
}

// A protocol error on the keymap comes before any key: the text was not
// typed, the error says why, and a Typer goes on to the next backend.
func TestWaylandKeymapRefused(t *testing.T) {
	f := startFakeCompositor(t, true, true)
	t.Cleanup(closeWayland)
	typer, err := Open(Auto, Options{Environ: f.env})
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
	if keys := f.keys.Load(); keys != 0 {
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
	t.Cleanup(closeWayland)
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
	text := mixedOf(500)
	if err := inj.Type(ctx, text); err != nil {
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
	t.Cleanup(closeWayland)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inj, _ := New(Clipboard, Options{Environ: env})
	err := inj.Type(ctx, "pasted text")
	if !errors.Is(err, errNotPasted) || errors.Is(err, ErrInterrupted) {
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
	f := startFakeCompositor(t, true, false)
	t.Cleanup(closeWayland)
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
	env := append(withoutEnv(f.env, "PATH"), "PATH="+dir+":/usr/bin:/bin")
	inj, _ := New(Clipboard, Options{Environ: env, RestoreDelay: time.Millisecond})
	err := inj.Type(context.Background(), "some text")
	if !errors.Is(err, ErrInterrupted) {
		t.Errorf("Type = %v, want ErrInterrupted (delivery cannot be told)", err)
	}
	if got, _ := os.ReadFile(clip); string(got) != "before" {
		t.Errorf("clipboard after = %q, want it restored", got)
	}
}
