package inject

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testx"
	"github.com/yazses/yazses/lib/untrusted"
)

// The Typer's own policy over real X11 backends (a list "auto" would not
// make): the X server, the recording xterm and the tools are
// internal/testx's; x11's tests drive each backend.

// startX starts a private Xvfb and returns an environment that points at
// it.
func startX(t testing.TB) []string {
	t.Helper()
	return testx.Start(t).Env
}

// Many distinct characters: more than the spare keycodes hold. xdotool
// refuses the text before typing any of it (it would have to bind
// keycodes again part-way through), so that "auto" pastes it.
func TestXdotoolRefusesManyDistinctCharacters(t *testing.T) {
	env := startX(t)
	rec := testx.StartRecorder(t, env)
	rec.Focus(t)
	var b strings.Builder
	for r := 'Α'; r <= 'Ω'; r++ { // Greek capitals, 24 letters (and U+03A2, unassigned: skipped)
		if r != 0x3a2 {
			b.WriteRune(r)
		}
	}
	b.WriteString(" жёлтый ✓ ☃ 😀 日本語 עברית")
	text := b.String()
	distinct := map[rune]bool{} // what xdotool would bind: above U+007E
	for _, r := range text {
		if r > 0x7e {
			distinct[r] = true
		}
	}
	if n := len(distinct); n < 30 {
		t.Fatalf("test text has %d distinct characters, want more than the spare keycodes", n)
	}
	inj, err := New(Xdotool, Options{Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inj.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := inj.Type(ctx, untrusted.Typed(text)); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Type = %v, want ErrUnavailable", err)
	}
	o := Options{Environ: env}.WithDefaults()
	rs := newRoutes(o)
	typer := &Typer{list: []Injector{inj, newClipboard(o, rs)}, log: o.Log, rs: rs}
	t.Cleanup(typer.Close)
	if used, err := typer.Type(ctx, text+" and more"); err != nil || used != Clipboard {
		t.Fatalf("Typer.Type = %q, %v; want it pasted", used, err)
	}
	rec.WaitFor(t, text+" and more")
}

// A Typer falls back to the next backend when one fails before typing.
func TestFallsBackFromMissingXdotool(t *testing.T) {
	env := startX(t)
	rec := testx.StartRecorder(t, env)
	rec.Focus(t)
	// xdotool is needed by the clipboard's paste too; here the first
	// backend fails on a tool that only it needs: a PATH where xmodmap is
	// missing makes xdotool's Unicode typing unavailable.
	env = testx.HideTool(t, env, "xmodmap")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	xd, _ := New(Xdotool, Options{Environ: env})
	t.Cleanup(xd.Close)
	cb, _ := New(Clipboard, Options{Environ: env})
	t.Cleanup(cb.Close)
	typer := &Typer{list: []Injector{xd, cb}, log: Options{}.WithDefaults().Log}
	if got := typer.Backends(); strings.Join(got, ",") != "xdotool,clipboard" {
		t.Fatalf("Backends = %v", got)
	}
	used, err := typer.Type(ctx, unicodeText)
	if err != nil {
		t.Fatalf("Type: %v", err)
	}
	if used != Clipboard {
		t.Errorf("used = %q, want clipboard", used)
	}
	rec.WaitFor(t, unicodeText)
}
