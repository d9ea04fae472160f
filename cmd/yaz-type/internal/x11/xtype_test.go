package x11_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"
	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/x11"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/untrusted"
)

// mixedText is 500 characters of ASCII, accented Latin, Greek, CJK, an
// emoji and a right-to-left word: more distinct characters than the spare
// keycodes of a usual keyboard map hold, so it is typed in two chunks.
func mixedText() string {
	parts := []string{
		"Dictation at the speed of speech: naïve café, Grüße aus Köln, señor, façade, smørbrød, Ærø, déjà vu. ",
		"Greek: Καλημέρα κόσμε, ψυχή και λόγος. ",
		"CJK: 日本語のテキスト, 中文输入法. ",
		"Emoji 😀 and a right-to-left word: שלום. ",
	}
	s := strings.Join(parts, "")
	filler := "The quick brown fox jumps over the lazy dog; (1+2)*3 = 9, {ok} [yes] <no> @home #tag $5 %50 ^_^ ~/path|pipe\\back `tick` 'q' \"dq\"! ? "
	for utf8.RuneCountInString(s) < 500 {
		s += filler
	}
	r := []rune(s)
	return string(r[:500])
}

// busyCPUs keeps every CPU busy until the test ends.
func busyCPUs(t *testing.T) {
	t.Helper()
	for range runtime.NumCPU() {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		})
	}
}

// xevRecorder is xev, a real Xlib client that is no terminal: each key
// press it reports with the keysym Xlib looked up in its copy of the
// keyboard map, turned back into the character. Xlib reads the map at
// the first key it looks up and keeps it up to date by the map
// notifications it asks for then (see readsMapChanges).
type xevRecorder struct {
	env     []string
	win     string
	pid     int // xev's (stdbuf execs it)
	changed testwait.Signal
	mu      sync.Mutex
	presses []xevPress
	from    int           // the presses before from are forgotten
	hold    chan struct{} // non-nil: parse stops after a press until it is closed
}

// xevPress is a key press as xev reported it.
type xevPress struct {
	kc xproto.Keycode
	ks uint64
}

func startXev(t *testing.T, env []string) *xevRecorder {
	t.Helper()
	for _, tool := range []string{"xev", "stdbuf"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed for this test (scripts/install-deps.sh installs it): %v", tool, err)
		}
	}
	// xev's output goes through a pipe of one page: held (see holdReports),
	// xev stops within a few reports.
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := onePage(out); err != nil {
		t.Fatal(err)
	}
	title := fmt.Sprintf("yazxev-%d", time.Now().UnixNano())
	cmd := exec.Command("stdbuf", "-oL", "xev", "-event", "keyboard", "-name", title, "-geometry", "300x200+0+0")
	cmd.Env = env
	cmd.Stdout = w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		out.Close()
		t.Fatalf("start xev: %v", err)
	}
	x := &xevRecorder{env: env, pid: cmd.Process.Pid}
	done := make(chan error, 1)
	go func() {
		x.parse(out) // to xev's end
		out.Close()
		done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		x.release()
		testwait.Recv(t, done, "xev's end")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	x.win = strings.Fields(runTool(ctx, t, env, "xdotool", "search", "--sync", "--onlyvisible", "--name", title))[0]
	return x
}

// onePage makes pipe f hold one page.
func onePage(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		_, ferr = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, os.Getpagesize())
	}); err != nil {
		return err
	}
	return ferr
}

// parse reads xev's output: "KeyPress event, …" then a line with
// "keycode 38 (keysym 0x61, a)".
func (x *xevRecorder) parse(r io.Reader) {
	sc := bufio.NewScanner(r)
	press := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "KeyPress event") {
			press = true
			continue
		}
		if strings.HasPrefix(line, "KeyRelease event") {
			press = false
			continue
		}
		var p xevPress
		_, after, ok := strings.Cut(line, "keycode ")
		if !press || !ok {
			continue
		}
		press = false
		if _, err := fmt.Sscanf(after, "%d (keysym 0x%x,", &p.kc, &p.ks); err != nil {
			continue
		}
		x.mu.Lock()
		x.presses = append(x.presses, p)
		hold := x.hold
		x.mu.Unlock()
		x.changed.Notify()
		if hold != nil {
			<-hold
		}
	}
}

// holdReports stops reading xev's output after the next key press it
// reports, until the test next waits for a report (release): xev stops
// too once the pipe is full.
func (x *xevRecorder) holdReports() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.hold == nil {
		x.hold = make(chan struct{})
	}
}

// release reads xev's output again.
func (x *xevRecorder) release() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.hold != nil {
		close(x.hold)
		x.hold = nil
	}
}

func (x *xevRecorder) focus(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	runTool(ctx, t, x.env, "xdotool", "windowfocus", "--sync", x.win)
}

// Changed is a testwait.Source: xev reported a key press.
func (x *xevRecorder) Changed() <-chan struct{} { return x.changed.Changed() }

// text is what xev received since the presses it forgot: the characters,
// and the key presses that are no character.
func (x *xevRecorder) text() (string, []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	var got []rune
	var bad []string
	for _, p := range x.presses[x.from:] {
		switch ks := p.ks; {
		case ks >= 0xffe1 && ks <= 0xffee, ks >= 0xfe01 && ks <= 0xfe0f: // Shift, Control, Caps Lock, Alt, group keys ...
		case ks >= 0x20 && ks <= 0xff && ks != 0x7f:
			got = append(got, rune(ks))
		case ks >= 0x01000100 && ks <= 0x0110ffff:
			got = append(got, rune(ks-0x01000000))
		default:
			bad = append(bad, fmt.Sprintf("keysym 0x%x", ks))
		}
	}
	return string(got), bad
}

// waitFor waits until xev has reported want (or more), and fails with
// what it has.
func (x *xevRecorder) waitFor(t testing.TB, want string) {
	t.Helper()
	x.release()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Hang)
	defer cancel()
	var got string
	var bad []string
	err := testwait.Until(ctx, func() bool {
		got, bad = x.text()
		return len(bad) > 0 || len(got) >= len(want)
	}, x)
	switch {
	case len(bad) > 0:
		t.Fatalf("xev got key presses that are no character: %v (text so far %q)", bad, got)
	case err != nil:
		t.Fatalf("waiting for xev to report %q: after %v it has %q", want, testwait.Hang, got)
	case got != want:
		t.Fatalf("xev received %q, want %q", got, want)
	}
}

// pressOf waits for xev's report of a press of keycode kc after the
// first n presses (held reports stay held).
func (x *xevRecorder) pressOf(t testing.TB, kc xproto.Keycode, n int) xevPress {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Hang)
	defer cancel()
	var p xevPress
	err := testwait.Until(ctx, func() bool {
		x.mu.Lock()
		defer x.mu.Unlock()
		i := slices.IndexFunc(x.presses[n:], func(p xevPress) bool { return p.kc == kc })
		if i >= 0 {
			p = x.presses[n+i]
		}
		return i >= 0
	}, x)
	if err != nil {
		t.Fatalf("waiting for xev to report the press of keycode %d: nothing within %v", kc, testwait.Hang)
	}
	return p
}

// readsMapChanges returns once xev is proven to hear of the keyboard
// map's changes, and forgets what it reported so far. Xlib reads the map
// at a client's first key lookup and only then asks for the XKB map
// notifications (libX11's _XkbLoadDpy), in a request that waits in its
// output buffer until the client next waits for events; the X server
// tells a client that uses XKB of a map change only if it asked, with no
// event at all otherwise. A change made in between (the typer's
// bindings, typed right after the test saw xev report its first key)
// never reaches xev, which then looks every bound key up as NoSymbol.
// The proof, on the test's own spare keycode: once xev has reported a
// key, the keycode gets a keysym it never had and is tapped, until xev
// reports that keysym, which it can only have from the change's
// notification; then the keycode is emptied again. It returns the
// number of changes that took.
func (x *xevRecorder) readsMapChanges(t testing.TB) int {
	t.Helper()
	tool := dialTool(t, x.env)
	kc := tool.spare()
	x.mu.Lock()
	loaded := len(x.presses) > 0 // xev has read the map
	x.mu.Unlock()
	const tries = 10
	for i := range tries {
		ks := xproto.Keysym(0x1002460 + i) // ①, ②, …: no key has them
		tool.setKey(kc, ks)
		x.mu.Lock()
		n := len(x.presses)
		x.mu.Unlock()
		tool.tap(kc)
		x.release()
		if p := x.pressOf(t, kc, n); loaded && p.ks == uint64(ks) {
			tool.setKey(kc, 0)
			x.mu.Lock()
			x.from = len(x.presses)
			x.mu.Unlock()
			return i + 1
		}
		loaded = true
	}
	t.Fatalf("xev never reported the keysym that keycode %d got (%d tries): it does not hear of the map's changes", kc, tries)
	return 0
}

// xProbe reads, through the protocol, the keyboard map, the modifier map
// and the keys held down.
type xProbe struct {
	keymap   []xproto.Keysym
	per      byte
	modmap   []xproto.Keycode
	down     []xproto.Keycode
	lockedOn bool
}

// dialProbe is a connection of the test's own to the display of env.
func dialProbe(t *testing.T, env []string) *xgb.Conn {
	t.Helper()
	c, err := xgb.NewConnDisplay(backend.Getenv(env, "DISPLAY"))
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	return c
}

func probeX(t *testing.T, env []string) xProbe {
	t.Helper()
	c := dialProbe(t, env)
	defer c.Close()
	setup := xproto.Setup(c)
	root := setup.DefaultScreen(c).Root
	km, err := xproto.GetKeyboardMapping(c, setup.MinKeycode, byte(setup.MaxKeycode-setup.MinKeycode+1)).Reply()
	if err != nil {
		t.Fatal(err)
	}
	mm, err := xproto.GetModifierMapping(c).Reply()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := xproto.QueryKeymap(c).Reply()
	if err != nil {
		t.Fatal(err)
	}
	ptr, err := xproto.QueryPointer(c, root).Reply()
	if err != nil {
		t.Fatal(err)
	}
	p := xProbe{keymap: km.Keysyms, per: km.KeysymsPerKeycode, modmap: mm.Keycodes, lockedOn: ptr.Mask&xproto.ModMaskLock != 0}
	for kc := range 256 {
		if x11.IsDown(keys.Keys, byte(kc)) {
			p.down = append(p.down, xproto.Keycode(kc))
		}
	}
	return p
}

// checkClean closes typer and fails unless no key is down and the maps
// equal before's.
func (before xProbe) checkClean(t *testing.T, env []string, run int, typer interface{ Close() }) {
	t.Helper()
	typer.Close()
	after := probeX(t, env)
	if len(after.down) > 0 {
		t.Errorf("run %d: keys still down after typing: %v", run, after.down)
	}
	if after.per != before.per || !slices.Equal(after.keymap, before.keymap) {
		t.Errorf("run %d: the keyboard map differs after typing", run)
	}
	if !slices.Equal(after.modmap, before.modmap) {
		t.Errorf("run %d: the modifier map differs after typing", run)
	}
	if after.lockedOn != before.lockedOn {
		t.Errorf("run %d: Caps Lock was %v, is %v", run, before.lockedOn, after.lockedOn)
	}
}

// The proof of exactness at speed: the mixed text, 20 times in a
// row with every CPU busy, into an xterm and into xev; after each run no
// key is down and the keyboard and modifier maps are as before. The text
// has more characters than the spare keycodes hold, so the x11 backend
// refuses it whole (a Typer pastes it) and types it in pieces of at most
// 30 of them, one text each: the bindings of one piece stay while it is
// typed, and the next piece binds again what it needs.
func TestX11TypesMixedTextExactlyUnderLoad(t *testing.T) {
	text := mixedText()
	if n := utf8.RuneCountInString(text); n != 500 {
		t.Fatalf("text has %d characters", n)
	}
	pieces := chunks(text, 30)
	if len(pieces) < 2 {
		t.Fatalf("the mixed text is %d piece(s), want more", len(pieces))
	}
	env := startX(t)
	busyCPUs(t)
	inj, err := New(X11, Options{Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inj.Close)
	clients := []struct {
		name  string
		start func(t *testing.T) (focus func(testing.TB), waitFor func(testing.TB, string))
	}{
		{"xterm", func(t *testing.T) (func(testing.TB), func(testing.TB, string)) {
			r := startRecorder(t, env)
			return r.Focus, r.WaitFor
		}},
		{"xev", func(t *testing.T) (func(testing.TB), func(testing.TB, string)) {
			x := startXev(t, env)
			return func(t testing.TB) {
				x.focus(t)
				x.readsMapChanges(t)
			}, x.waitFor
		}},
	}
	for _, cl := range clients {
		t.Run(cl.name, func(t *testing.T) {
			focus, waitFor := cl.start(t)
			focus(t)
			before := probeX(t, env)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if err := inj.Type(ctx, untrusted.Typed(text)); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("Type of the whole text = %v, want ErrUnavailable (more characters than fit)", err)
			}
			want := ""
			for run := range 20 {
				for _, piece := range pieces {
					if err := inj.Type(ctx, untrusted.Typed(piece)); err != nil {
						t.Fatalf("run %d: Type: %v", run, err)
					}
					want += piece
					waitFor(t, want)
				}
				before.checkClean(t, env, run, inj)
			}
		})
	}
}

// distinctText is n different CJK ideographs.
func distinctText(n int) string {
	r := make([]rune, n)
	for i := range r {
		r[i] = rune(0x4e00 + i)
	}
	return string(r)
}

// longText is a text that takes the x11 backend seconds to type (about
// 10 µs a key): ASCII and a few characters it binds.
func longText() string {
	return strings.Repeat("abc dé✓ ", 200_000)
}

// A window that closes while its text is typed ends the call with an
// error (no other backend then types the text again), before the rest of
// the text; nothing is left down and the map is restored.
func TestX11WindowClosesWhileTyping(t *testing.T) {
	env := startX(t)
	rec := startRecorder(t, env)
	rec.Focus(t)
	before := probeX(t, env)
	text := longText()
	typer, err := Open(Auto, Options{Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(typer.Close)
	g := watchGrowth(t, rec.File)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type result struct {
		used string
		err  error
	}
	res := make(chan result, 1)
	go func() {
		used, err := typer.Type(ctx, text)
		res <- result{used, err}
	}()
	// The text has begun to arrive: close the window.
	if g.wait(3, 20*time.Second).IsZero() {
		t.Fatal("nothing arrived")
	}
	runTool(ctx, t, env, "xdotool", "windowkill", rec.Win)
	r := <-res
	if !errors.Is(r.err, ErrInterrupted) || !errors.Is(r.err, x11.ErrWindowChanged) || r.used != X11 {
		t.Fatalf("Type = %q, %v; want x11, interrupted: the window closed", r.used, r.err)
	}
	if got := rec.Contents(t); len(got) >= len(text) || !strings.HasPrefix(text, got) {
		t.Errorf("window received %d of %d bytes, want a part of the text", len(got), len(text))
	}
	before.checkClean(t, env, 0, typer)
}

// Cancelling the context mid-text stops the typing at once: the call
// returns before the text's end was sent (a marker typed after it comes
// right after a part of the text), nothing is left down, the map is
// restored.
func TestX11CancelMidText(t *testing.T) {
	env := startX(t)
	rec := startRecorder(t, env)
	rec.Focus(t)
	before := probeX(t, env)
	inj, err := New(X11, Options{Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inj.Close)
	text := longText()
	g := watchGrowth(t, rec.File)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := make(chan error, 1)
	go func() { res <- inj.Type(ctx, untrusted.Typed(text)) }()
	if g.wait(3, 20*time.Second).IsZero() {
		t.Fatal("nothing arrived")
	}
	cancel()
	err = <-res
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrInterrupted) {
		t.Fatalf("Type = %v, want interrupted, canceled", err)
	}
	// The server delivers keys in the order they were sent: everything of
	// the text is ahead of the marker.
	mctx, mcancel := context.WithTimeout(context.Background(), time.Minute)
	defer mcancel()
	if err := inj.Type(mctx, untrusted.Typed("@END@")); err != nil {
		t.Fatal(err)
	}
	var got string
	if testwait.Until(mctx, func() bool {
		got = rec.Contents(t)
		return strings.HasSuffix(got, "@END@")
	}, rec) != nil {
		t.Fatalf("the marker never arrived; the window has %d bytes", len(got))
	}
	got = strings.TrimSuffix(got, "@END@")
	if len(got) >= len(text) || !strings.HasPrefix(text, got) {
		t.Fatalf("before the marker the window received %d of %d bytes, want a part of the text", len(got), len(text))
	}
	before.checkClean(t, env, 0, inj)
}

// A held Control would turn letters into shortcuts and Caps Lock would
// change their case: Control is released (and stays up), Caps Lock is off
// for the text and on again after.
func TestX11HeldControlAndCapsLock(t *testing.T) {
	env := startX(t)
	rec := startRecorder(t, env)
	rec.Focus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runTool(ctx, t, env, "xdotool", "key", "Caps_Lock")
	before := probeX(t, env)
	if !before.lockedOn {
		t.Fatal("Caps Lock did not lock")
	}
	runTool(ctx, t, env, "xdotool", "keydown", "Control_L")
	if p := probeX(t, env); len(p.down) == 0 {
		t.Fatal("Control is not down")
	}
	inj, _ := New(X11, Options{Environ: env})
	t.Cleanup(inj.Close)
	if err := inj.Type(ctx, untrusted.Typed(unicodeText+" Abc")); err != nil {
		t.Fatalf("Type: %v", err)
	}
	rec.WaitFor(t, unicodeText+" Abc")
	before.checkClean(t, env, 0, inj)
}

// qwertyCyrillic are the letter keys of a US map (keycode, Latin letter)
// and the Cyrillic letter of the Russian map on the same key.
var qwertyCyrillic = map[xproto.Keycode][2]rune{
	24: {'q', 'й'}, 25: {'w', 'ц'}, 26: {'e', 'у'}, 27: {'r', 'к'}, 28: {'t', 'е'}, 29: {'y', 'н'},
	30: {'u', 'г'}, 31: {'i', 'ш'}, 32: {'o', 'щ'}, 33: {'p', 'з'}, 38: {'a', 'ф'}, 39: {'s', 'ы'},
	40: {'d', 'в'}, 41: {'f', 'а'}, 42: {'g', 'п'}, 43: {'h', 'р'}, 44: {'j', 'о'}, 45: {'k', 'л'},
	46: {'l', 'д'}, 52: {'z', 'я'}, 53: {'x', 'ч'}, 54: {'c', 'с'}, 55: {'v', 'м'}, 56: {'b', 'и'},
	57: {'n', 'т'}, 58: {'m', 'ь'},
}

// xTool is a test's own X connection with XTEST, to change the map and
// press keys as a keyboard would.
type xTool struct {
	t testing.TB
	c *xgb.Conn
}

func dialTool(t testing.TB, env []string) *xTool {
	t.Helper()
	c, err := xgb.NewConnDisplay(backend.Getenv(env, "DISPLAY"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := xtest.Init(c); err != nil {
		t.Fatal(err)
	}
	return &xTool{t: t, c: c}
}

func (x *xTool) setKey(kc xproto.Keycode, syms ...xproto.Keysym) {
	x.t.Helper()
	if err := xproto.ChangeKeyboardMappingChecked(x.c, 1, kc, byte(len(syms)), syms).Check(); err != nil {
		x.t.Fatal(err)
	}
}

// spare returns the highest keycode with no keysym.
func (x *xTool) spare() xproto.Keycode {
	x.t.Helper()
	setup := xproto.Setup(x.c)
	n := int(setup.MaxKeycode) - int(setup.MinKeycode) + 1
	km, err := xproto.GetKeyboardMapping(x.c, setup.MinKeycode, byte(n)).Reply()
	if err != nil {
		x.t.Fatal(err)
	}
	per := int(km.KeysymsPerKeycode)
	for i := n - 1; i >= 0; i-- {
		if !slices.ContainsFunc(km.Keysyms[i*per:(i+1)*per], func(s xproto.Keysym) bool { return s != 0 }) {
			return setup.MinKeycode + xproto.Keycode(i)
		}
	}
	x.t.Fatal("the keyboard map has no spare keycode")
	return 0
}

func (x *xTool) tap(kc xproto.Keycode) {
	x.t.Helper()
	xtest.FakeInput(x.c, xproto.KeyPress, byte(kc), 0, 0, 0, 0, 0)
	xtest.FakeInput(x.c, xproto.KeyRelease, byte(kc), 0, 0, 0, 0, 0)
	x.c.Sync()
}

// The keys of the map type other characters in another keyboard group.
// With a Russian first group and a US second one (the map as the core
// protocol shows "ru,us": "Cyrillic_ef Cyrillic_EF a A"), and with a US
// first group and a Russian second one that is locked (as a person who
// switched layouts has it), the Latin letters are not typed on their keys
// but bound like any other character.
func TestX11OtherLayout(t *testing.T) {
	for _, tt := range []struct {
		name       string
		latinFirst bool
		lock       bool // lock the second group (ISO_Next_Group)
	}{
		{"ru,us", false, false},
		{"us,ru with the second group locked", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := startX(t)
			tool := dialTool(t, env)
			for kc, l := range qwertyCyrillic {
				latin := []xproto.Keysym{xproto.Keysym(x11.KeysymFor(l[0])), xproto.Keysym(x11.KeysymFor(l[0] - 0x20))}
				cyr := []xproto.Keysym{xproto.Keysym(x11.KeysymFor(l[1])), xproto.Keysym(x11.KeysymFor(l[1] - 0x20))}
				if tt.latinFirst {
					tool.setKey(kc, append(latin, cyr...)...)
				} else {
					tool.setKey(kc, append(cyr, latin...)...)
				}
			}
			x := startXev(t, env)
			x.focus(t)
			if tt.lock {
				tool.setKey(93, 0xfe08) // ISO_Next_Group on a spare key
				tool.tap(93)
			}
			// The check can fail: the key of "a" types a Cyrillic letter.
			tool.tap(38)
			x.waitFor(t, "ф")
			// xev read the map at that key: that it hears of the typer's
			// bindings takes a proof.
			x.readsMapChanges(t)
			before := probeX(t, env)
			inj, _ := New(X11, Options{Environ: env})
			t.Cleanup(inj.Close)
			const text = "Hello, world: Привет"
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := inj.Type(ctx, untrusted.Typed(text)); err != nil {
				t.Fatalf("Type: %v", err)
			}
			x.waitFor(t, text)
			before.checkClean(t, env, 0, inj)
		})
	}
}

// The race that readsMapChanges closes, lost every time: xev is held
// right after its first key, with the map read and its request for map
// notifications still in its output buffer (more keys are queued behind
// the first, and its output is not read, so it neither waits for events
// nor flushes), when the set-up ends. The first change of the test's
// own keycode does not reach it; once one does, a text typed with
// bindings arrives whole. (Typed without readsMapChanges, every bound
// character arrived as NoSymbol: what TestX11OtherLayout met about one
// run in eight on a loaded machine.)
func TestX11XevHeldAfterItsFirstKey(t *testing.T) {
	env := startX(t)
	tool := dialTool(t, env)
	x := startXev(t, env)
	x.focus(t)
	// Stopped, xev gets its first key and 40 Shift taps at once: woken,
	// it reads them all before it looks the first one up.
	resume := x.stop(t)
	tool.tap(38)
	for range 40 {
		tool.tap(50)
	}
	// The server wrote the keys to xev before it read this request.
	tool.c.Sync()
	x.holdReports()
	resume()
	x.pressOf(t, 38, 0)
	if n := x.readsMapChanges(t); n < 2 {
		t.Fatalf("the first change of the test's keycode reached xev (it took %d): xev was not held where the race is lost", n)
	}
	inj, _ := New(X11, Options{Environ: env})
	t.Cleanup(inj.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := inj.Type(ctx, untrusted.Typed(unicodeText)); err != nil {
		t.Fatalf("Type: %v", err)
	}
	x.waitFor(t, unicodeText)
}

// A server without XTEST: the in-process backend is unavailable, types
// nothing, and "auto" goes on to the next backend.
func TestX11WithoutXTEST(t *testing.T) {
	env := startXWith(t, "-extension", "XTEST")
	rec := startRecorder(t, env)
	rec.Focus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inj, _ := New(X11, Options{Environ: env})
	t.Cleanup(inj.Close)
	if err := inj.Type(ctx, untrusted.Typed("secret")); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Type = %v, want ErrUnavailable", err)
	}
	if _, err := inj.Focus(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Focus = %v, want ErrUnavailable", err)
	}
	typer, _ := Open(Auto, Options{Environ: env})
	t.Cleanup(typer.Close)
	used, _ := typer.Type(ctx, "x")
	if used == X11 {
		t.Fatalf("auto stopped at x11")
	}
}

// A Typer pastes a text longer than PasteOverChars (and restores the
// clipboard), types a shorter one, and with no focused window does neither.
func TestPasteOverChars(t *testing.T) {
	env := startX(t)
	rec := startRecorder(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	typer, err := Open(Auto, Options{Environ: env, PasteOverChars: 150})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(typer.Close)
	short, long := "ten chars!", strings.Repeat(" long", 31)
	if used, err := typer.Type(ctx, long); !errors.Is(err, ErrNoTarget) || used != Clipboard {
		t.Errorf("no focus: Type = %q, %v; want clipboard, ErrNoTarget", used, err)
	}
	rec.Focus(t)
	setClip(ctx, t, env, "copied before")
	for _, tt := range []struct{ text, want string }{{short, X11}, {long, Clipboard}} {
		used, err := typer.Type(ctx, tt.text)
		if err != nil || used != tt.want {
			t.Errorf("Type(%q) = %q, %v; want %s", tt.text, used, err, tt.want)
		}
	}
	// Shorter than the threshold, but more distinct characters than the
	// spare keycodes hold: typing would pause, it is pasted.
	many := distinctText(100)
	if used, err := typer.Type(ctx, many); err != nil || used != Clipboard {
		t.Errorf("Type(100 distinct) = %q, %v; want clipboard", used, err)
	}
	rec.WaitFor(t, short+long+many)
	if got := getClip(ctx, t, env); got != "copied before" {
		t.Errorf("clipboard = %q, want it restored", got)
	}
}

// A server that stops answering (here: stopped with SIGSTOP while the
// xterm has the focus) ends the call with an error after the exchange
// deadline, instead of wedging the caller; so does the focus check.
func TestX11ServerNotAnswering(t *testing.T) {
	env, pid := startXvfb(t)
	rec := startRecorder(t, env)
	rec.Focus(t)
	inj, _ := New(X11, Options{Environ: env})
	t.Cleanup(inj.Close)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGCONT)
	ctx, cancel := context.WithTimeout(context.Background(), 4*x11.XIOTimeout)
	defer cancel()
	if err := inj.Type(ctx, untrusted.Typed(unicodeText)); err == nil || ctx.Err() != nil {
		t.Fatalf("Type with a stopped server = %v (context: %v), want an error of its own", err, ctx.Err())
	}
	if _, err := inj.Focus(ctx); err == nil || ctx.Err() != nil {
		t.Fatalf("Focus with a stopped server = %v (context: %v), want an error of its own", err, ctx.Err())
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// Once it answers again, typing works.
	if err := inj.Type(ctx, untrusted.Typed("back")); err != nil {
		t.Fatalf("Type after the server resumed: %v", err)
	}
	rec.WaitFor(t, "back")
}

func TestChunks(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want []string
	}{
		{"abc", 2, []string{"abc"}},
		{"äöü", 2, []string{"äö", "ü"}},
		{"a ä b ä ö c ü", 2, []string{"a ä b ä ö c ", "ü"}},
		{"ääää", 1, []string{"ääää"}},
	}
	for _, tt := range tests {
		got := chunks(tt.s, tt.n)
		if !slices.Equal(got, tt.want) {
			t.Errorf("chunks(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
		if strings.Join(got, "") != tt.s {
			t.Errorf("chunks(%q) lost text", tt.s)
		}
	}
}

// chunks cuts s into consecutive pieces with at most n distinct non-ASCII
// runes each (n >= 1).
func chunks(s string, n int) []string {
	var out []string
	seen := map[rune]bool{}
	start := 0
	for i, r := range s {
		if r > 0x7e && !seen[r] {
			if len(seen) == n {
				out = append(out, s[start:i])
				start = i
				clear(seen)
			}
			seen[r] = true
		}
	}
	return append(out, s[start:])
}

// heldRecord reports whether the display records keycodes that the x11
// backend holds (the root window's _YAZSES_HELD_KEYCODES).
func heldRecord(t *testing.T, env []string) bool {
	t.Helper()
	c := dialProbe(t, env)
	defer c.Close()
	const name = "_YAZSES_HELD_KEYCODES"
	a, err := xproto.InternAtom(c, true, uint16(len(name)), name).Reply()
	if err != nil {
		t.Fatal(err)
	}
	if a.Atom == 0 {
		return false
	}
	r, err := xproto.GetProperty(c, false, xproto.Setup(c).DefaultScreen(c).Root, a.Atom, xproto.AtomCardinal, 0, 1).Reply()
	if err != nil {
		t.Fatal(err)
	}
	return r.Format != 0
}

// A Typer holds what it bound and nothing of another's: two Typers in one
// process, one of which types; closing the other leaves the bound
// keycodes (the window may still read them), closing the one that typed
// gives them back (the keyboard map as before, no record left on the
// display), and it types again after, binding anew.
func TestX11TypersCloseWhatTheyHold(t *testing.T) {
	env := startX(t)
	rec := startRecorder(t, env)
	rec.Focus(t)
	before := probeX(t, env)
	typed, _ := Open(X11, Options{Environ: env})
	t.Cleanup(typed.Close)
	idle, _ := Open(X11, Options{Environ: env})
	t.Cleanup(idle.Close)
	ctx := testwait.Context(t)
	if _, err := typed.Type(ctx, "Grüße ☃"); err != nil {
		t.Fatalf("Type: %v", err)
	}
	rec.WaitFor(t, "Grüße ☃")
	if slices.Equal(probeX(t, env).keymap, before.keymap) || !heldRecord(t, env) {
		t.Fatal("typing bound no spare keycode: the test proves nothing")
	}
	idle.Close()
	if slices.Equal(probeX(t, env).keymap, before.keymap) || !heldRecord(t, env) {
		t.Fatal("closing a Typer that typed nothing gave back the other Typer's keycodes")
	}
	before.checkClean(t, env, 0, typed)
	if heldRecord(t, env) {
		t.Error("the display still records held keycodes after the Typer that bound them closed")
	}
	if _, err := typed.Type(ctx, " ✓"); err != nil {
		t.Fatalf("Type after Close: %v", err)
	}
	rec.WaitFor(t, "Grüße ☃ ✓")
	before.checkClean(t, env, 1, typed)
}
