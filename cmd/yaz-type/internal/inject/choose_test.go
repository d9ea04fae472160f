package inject

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/yazses/yazses/cmd/yaz-type/internal/wayland"
	"github.com/yazses/yazses/internal/testportal"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/typewire"
	"github.com/yazses/yazses/lib/untrusted"
)

// fakeProbes replaces what "auto" asks the session until the test ends.
func fakeProbes(t *testing.T, vk, vkKnown, rd, rdKnown, ydotoold bool) {
	fakeProbesIBus(t, vk, vkKnown, rd, rdKnown, ydotoold, false)
}

func fakeProbesIBus(t *testing.T, vk, vkKnown, rd, rdKnown, ydotoold, ibusRuns bool) {
	t.Helper()
	old := probe
	probe = probes{
		virtualKeyboard: func(*wayland.Route, context.Context) (bool, bool) { return vk, vkKnown },
		remoteDesktop:   func(context.Context, []string) (bool, bool) { return rd, rdKnown },
		ibus:            func(context.Context, []string) bool { return ibusRuns },
		ydotoold:        func([]string) bool { return ydotoold },
	}
	t.Cleanup(func() { probe = old })
}

// TestChoose: "auto" follows its order (X11's XTEST; a Wayland
// compositor's virtual keyboard; the RemoteDesktop portal; ydotool when
// ydotoold runs) and says why; with none, it says what to install or
// allow.
func TestChoose(t *testing.T) {
	wl := []string{"WAYLAND_DISPLAY=wayland-0", "DISPLAY=:0"}
	x := []string{"DISPLAY=:0"}
	gnomeWl := append([]string{"XDG_CURRENT_DESKTOP=ubuntu:GNOME"}, wl...)
	kdeWl := append([]string{"XDG_CURRENT_DESKTOP=KDE"}, wl...)
	tests := []struct {
		name                               string
		env                                []string
		vk, vkKnown, rd, rdKnown, ydotoold bool
		want                               []string
		why                                string // a word of Why, or of the error
		ibus                               bool   // IBus runs
	}{
		{"x11", x, false, false, true, true, true, []string{X11, Clipboard}, "XTEST", false},
		{"wlroots", wl, true, true, true, true, false, []string{Wayland, Clipboard}, "virtual keyboard", false},
		{"wlroots+ydotoold", wl, true, true, false, true, true, []string{Wayland, Ydotool, Clipboard}, "virtual keyboard", false},
		{"compositor not answering", wl, false, false, false, true, false, []string{Wayland, Clipboard}, "could not be asked", false},
		{"gnome", wl, false, true, true, true, false, []string{Portal}, "RemoteDesktop portal", false},
		{"gnome+ydotoold", wl, false, true, true, true, true, []string{Portal, Ydotool}, "RemoteDesktop portal", false},
		{"no portal, ydotoold", wl, false, true, false, true, true, []string{Ydotool}, "ydotoold", false},
		{"no bus, ydotoold", wl, false, true, false, false, true, []string{Ydotool}, "ydotoold", false},
		{"nothing", wl, false, true, false, true, false, nil, "xdg-desktop-portal", false},
		{"no session", []string{}, false, false, false, false, true, nil, "DISPLAY", false},
		{"gnome with ibus", gnomeWl, false, true, true, true, false, []string{IBus}, "IBus", true},
		{"gnome with ibus+ydotoold", gnomeWl, false, true, true, true, true, []string{IBus, Ydotool}, "no dialog", true},
		{"kde with ibus", kdeWl, false, true, true, true, false, []string{Portal}, "RemoteDesktop portal", true},
		{"desktop unknown, ibus", wl, false, true, true, true, false, []string{Portal}, "RemoteDesktop portal", true},
		{"wlroots, ibus too", wl, true, true, true, true, false, []string{Wayland, Clipboard}, "virtual keyboard", true},
		{"x11, ibus too", x, false, false, true, true, false, []string{X11, Clipboard}, "XTEST", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fakeProbesIBus(t, tt.vk, tt.vkKnown, tt.rd, tt.rdKnown, tt.ydotoold, tt.ibus)
			c, err := Choose(context.Background(), Options{Environ: tt.env}.WithDefaults())
			if tt.want == nil {
				if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), tt.why) {
					t.Fatalf("Choose = %v, %v; want ErrUnavailable saying %q", c, err, tt.why)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.Names, tt.want) || !strings.Contains(c.Why, tt.why) {
				t.Errorf("Choose = %v (%s), want %v (%q)", c.Names, c.Why, tt.want, tt.why)
			}
		})
	}
	t.Run("nothing says what to do", func(t *testing.T) {
		fakeProbes(t, false, true, false, true, false)
		_, err := Choose(context.Background(), Options{Environ: wl}.WithDefaults())
		for _, w := range []string{"xdg-desktop-portal-gnome", "ydotoold", "/dev/uinput"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not name %q", err, w)
			}
		}
	})
}

// TestTyperStatus: a Typer says its route and why; a named one says it
// was named.
func TestTyperStatus(t *testing.T) {
	fakeProbes(t, true, true, false, true, false)
	ty, err := Open(Auto, Options{Environ: []string{"WAYLAND_DISPLAY=wayland-0"}})
	if err != nil {
		t.Fatal(err)
	}
	if st := ty.Status(); st.Route != Wayland || !strings.Contains(st.Why, "virtual keyboard") {
		t.Errorf("Status = %+v", st)
	}
	ty, err = Open(Stdout, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st := ty.Status(); st.Route != Stdout || !strings.Contains(st.Why, "dictation.inject") {
		t.Errorf("Status = %+v", st)
	}
}

// pastes is a backend that pastes: ErrPasted.
type pastes struct{}

func (pastes) Name() string                         { return Portal }
func (pastes) Focus(context.Context) (Focus, error) { return FocusUnknown, nil }
func (pastes) Type(context.Context, untrusted.TypedText) error {
	return errors.Join(errors.New("portal"), ErrPasted)
}

// x11ish is an x11 route that fails before typing (no route that checks
// the window can type), or types.
type x11ish struct {
	fail  bool
	typed *int
}

func (x11ish) Name() string                         { return X11 }
func (x11ish) Focus(context.Context) (Focus, error) { return FocusWindow, nil }
func (x x11ish) Type(context.Context, untrusted.TypedText) error {
	if x.fail {
		return errors.New("x11: the display said no")
	}
	*x.typed++
	return nil
}

// TestBoundTextOnlyByX11: a text bound to a window (the pieces of one
// live dictation) goes only by the route that checks the window: when it
// fails, no other backend types it into whatever has the focus, and it is
// never pasted.
func TestBoundTextOnlyByX11(t *testing.T) {
	for _, fail := range []bool{false, true} {
		var out bytes.Buffer
		n := 0
		ty := &Typer{list: []Injector{x11ish{fail: fail, typed: &n}, pastes{}, &stdoutInjector{w: &out}}, paste: pastes{},
			pasteOver: 1, log: Options{}.WithDefaults().Log}
		ctx := typewire.WithTarget(context.Background(), &typewire.Target{Want: "42"})
		used, err := ty.Type(ctx, "hello")
		if out.Len() != 0 || errors.Is(err, ErrPasted) {
			t.Errorf("fail %v: another backend typed %q or pasted (%v)", fail, out.String(), err)
		}
		if fail && (err == nil || used != X11) || !fail && (err != nil || n != 1) {
			t.Errorf("fail %v: Type = %q, %v, typed %d", fail, used, err, n)
		}
	}
	ty := &Typer{list: []Injector{pastes{}}, log: Options{}.WithDefaults().Log}
	if _, err := ty.Type(typewire.WithTarget(context.Background(), &typewire.Target{Want: "42"}), "hello"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("a bound text with no x11 route: %v, want ErrUnavailable", err)
	}
}

// TestPastedIsNotTypedAgain: a paste whose arrival cannot be seen ends
// the attempt: no other backend types the text a second time.
func TestPastedIsNotTypedAgain(t *testing.T) {
	var out bytes.Buffer
	ty := &Typer{list: []Injector{pastes{}, &stdoutInjector{w: &out}}, log: Options{}.WithDefaults().Log}
	used, err := ty.Type(context.Background(), "hello")
	if used != Portal || !errors.Is(err, ErrPasted) {
		t.Errorf("Type = %q, %v; want portal, ErrPasted", used, err)
	}
	if out.Len() != 0 {
		t.Errorf("the next backend typed %q", out.String())
	}
}

// TestYdotooldRunning: ydotoold runs when its socket ($YDOTOOL_SOCKET,
// else $XDG_RUNTIME_DIR/.ydotool_socket, else /tmp/.ydotool_socket)
// takes a datagram; a socket file left by a dead one does not count.
func TestYdotooldRunning(t *testing.T) {
	rt := t.TempDir()
	env := []string{"XDG_RUNTIME_DIR=" + rt, "YDOTOOL_SOCKET=" + filepath.Join(rt, "none")}
	if ydotooldRunning(env) {
		t.Error("no socket: running")
	}
	path := filepath.Join(rt, ".ydotool_socket")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	if !ydotooldRunning([]string{"XDG_RUNTIME_DIR=" + rt}) {
		t.Error("a live socket in XDG_RUNTIME_DIR: not running")
	}
	if !ydotooldRunning([]string{"XDG_RUNTIME_DIR=/nonexistent", "YDOTOOL_SOCKET=" + path}) {
		t.Error("a live socket named by YDOTOOL_SOCKET: not running")
	}
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	if ydotooldRunning([]string{"XDG_RUNTIME_DIR=" + rt}) {
		t.Error("a stale socket file: running")
	}
}

// TestRefusedFallsBack: on a desktop without the virtual keyboard whose
// person refused the portal's dialog, "auto" says why and types with the
// next backend it has (ydotool, here a fake that records its input).
func TestRefusedFallsBack(t *testing.T) {
	p := testportal.Start(t, testportal.Options{Refuse: true})
	dir := t.TempDir()
	tool := filepath.Join(dir, "ydotool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\ncat > \"$0.stdin\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := probe
	probe.virtualKeyboard = func(*wayland.Route, context.Context) (bool, bool) { return false, true }
	probe.ydotoold = func([]string) bool { return true }
	t.Cleanup(func() { probe = old })
	env := append(slices.Clone(p.Env), "WAYLAND_DISPLAY=wayland-none", "PATH="+dir+":/usr/bin:/bin")
	ty, err := Open(Auto, Options{Environ: env, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ty.Close)
	if got := ty.Backends(); !slices.Equal(got, []string{Portal, Ydotool}) {
		t.Fatalf("Backends = %v, want portal, ydotool", got)
	}
	st := ty.Status()
	err = testwait.Until(testwait.Context(t), func() bool {
		st = ty.Status()
		return strings.Contains(st.Consent, "refused")
	}, portalChanges{ty})
	if err != nil {
		t.Fatalf("status never said the dialog was refused: %+v", st)
	}
	used, err := ty.Type(testwait.Context(t), "hello")
	if err != nil || used != Ydotool {
		t.Fatalf("Type = %q, %v; want ydotool", used, err)
	}
	if b, _ := os.ReadFile(tool + ".stdin"); string(b) != "hello" {
		t.Errorf("ydotool got %q", b)
	}
}

// portalChanges is the portal session's state changes as a
// testwait.Source.
type portalChanges struct{ ty *Typer }

func (p portalChanges) Changed() <-chan struct{} { return p.ty.rs.pt.Changes() }

// TestIBusPreeditOnGNOMEOnly: the IBus route shows a preedit (live
// text's guesses) on GNOME only; elsewhere each preedit's session would
// be two more changes of the global engine, which KWin's IBus Wayland
// input method does not survive in quick succession.
func TestIBusPreeditOnGNOMEOnly(t *testing.T) {
	for _, tc := range []struct {
		desktop string
		want    bool
	}{{"GNOME", true}, {"ubuntu:GNOME", true}, {"KDE", false}, {"", false}} {
		opts := Options{Environ: []string{"XDG_CURRENT_DESKTOP=" + tc.desktop}}.WithDefaults()
		ty := &Typer{list: []Injector{newIBus(opts)}, log: opts.Log}
		if got := ty.Preedits(); got != tc.want {
			t.Errorf("%q: Preedits() = %v, want %v", tc.desktop, got, tc.want)
		}
		if !tc.want {
			if _, err := ty.Preedit(context.Background(), "guess"); !errors.Is(err, ErrNoPreedit) {
				t.Errorf("%q: Preedit = %v, want ErrNoPreedit", tc.desktop, err)
			}
		}
	}
}
