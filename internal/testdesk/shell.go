package testdesk

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testwait"
)

// WriteFile writes a file inside the desk's root (its overlay: the cache
// is not changed), making its folder, with mode perm: what a package or
// `make install` would put there.
func (d *Desk) WriteFile(t testing.TB, path string, data []byte, perm os.FileMode) {
	t.Helper()
	cmd := d.Command(t, "/bin/sh", "-c", `mkdir -p "$(dirname "$1")" && cat > "$1" && chmod "$2" "$1"`, "sh", path, strconv.FormatUint(uint64(perm), 8))
	cmd.Stdin = bytes.NewReader(data)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("write %s in the desk: %v\n%s", path, err, out)
	}
}

// Run runs a command inside the desk to its end and returns its output;
// a failure fails the test.
func (d *Desk) Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := d.Command(t, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s in the desk: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Keysyms of the keys the tests press.
const (
	KeyAltL   = 0xffe9
	KeyPause  = 0xff13
	KeyReturn = 0xff0d
	KeyTab    = 0xff09
	KeySpace  = 0x0020
	KeyEscape = 0xff1b
)

// Key presses (down) or releases a key, given by its keysym, on the
// seat's virtual keyboard (the one Start made): the desk sees a person's
// key.
func (d *Desk) Key(ctx context.Context, keysym uint32, down bool) error {
	state := "RELEASED"
	if down {
		state = "PRESSED"
	}
	_, err := d.Eval(ctx, fmt.Sprintf("global._yazsesKeyboard.notify_keyval(imports.gi.GLib.get_monotonic_time(), %d, imports.gi.Clutter.KeyState.%s); 'ok'", keysym, state))
	if err != nil {
		return fmt.Errorf("key %#x %s: %w", keysym, strings.ToLower(state), err)
	}
	return nil
}

// Tap presses keys in order and releases them in the reverse order (a
// chord: Alt, then a).
func (d *Desk) Tap(ctx context.Context, keysyms ...uint32) error {
	for _, k := range keysyms {
		if err := d.Key(ctx, k, true); err != nil {
			return err
		}
	}
	for i := len(keysyms) - 1; i >= 0; i-- {
		if err := d.Key(ctx, keysyms[i], false); err != nil {
			return err
		}
	}
	return nil
}

// Windows lists the titles of the shell's windows.
func (d *Desk) Windows(ctx context.Context) (string, error) {
	return d.Eval(ctx, "JSON.stringify(global.get_window_actors().map(a => a.meta_window.get_title()))")
}

// Focus records each window that takes the keyboard focus, as the shell
// sees it: a line "focus: TITLE" in a file of Runtime per change, which
// the test waits on (inotify), never polls.
type Focus struct {
	path string
	w    *testwait.File
}

// WatchFocus starts recording the focus.
func (d *Desk) WatchFocus(t testing.TB) *Focus {
	t.Helper()
	path := filepath.Join(d.Runtime, "focus.log")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := testwait.WatchFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	js := fmt.Sprintf(`(() => {
  const file = imports.gi.Gio.File.new_for_path(%q);
  global._yazsesFocus = global.display.connect('notify::focus-window', () => {
    const w = global.display.focus_window;
    const s = file.append_to(imports.gi.Gio.FileCreateFlags.NONE, null);
    s.write_all(new TextEncoder().encode('focus: ' + (w ? w.get_title() : '') + '\n'), null);
    s.close(null);
  });
  return 'watching';
})()`, path)
	if _, err := d.Eval(testwait.Context(t), js); err != nil {
		t.Fatalf("watch the focus: %v", err)
	}
	return &Focus{path: path, w: w}
}

// Lines is what was recorded so far.
func (f *Focus) Lines() []string {
	b, _ := os.ReadFile(f.path)
	return strings.FieldsFunc(string(b), func(r rune) bool { return r == '\n' })
}

// Count is how many times a window titled title has taken the focus.
func (f *Focus) Count(title string) int {
	n := 0
	for _, l := range f.Lines() {
		if l == "focus: "+title {
			n++
		}
	}
	return n
}

// Wait waits until a window titled title has taken the focus.
func (f *Focus) Wait(t testing.TB, title string) {
	t.Helper()
	f.WaitCount(t, title, 1)
}

// WaitCount waits until a window titled title has taken the focus n
// times.
func (f *Focus) WaitCount(t testing.TB, title string, n int) {
	t.Helper()
	if err := testwait.Until(testwait.Context(t), func() bool { return f.Count(title) >= n }, f.w); err != nil {
		t.Fatalf("waiting for %q to take the focus (%d times): %v (focus: %q)", title, n, err, f.Lines())
	}
}
