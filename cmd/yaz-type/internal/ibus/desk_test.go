package ibus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/yazses/yazses/internal/testbin"
	"github.com/yazses/yazses/internal/testdesk"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/untrusted"
)

// sample has what keys cannot type on a US layout: umlauts, a dash,
// Greek, CJK, an emoji and the AltGr characters of a German one.
const sample = "Grüße aus Köln — ψυχή, 日本語, 😀 and AltGr: € @ ~ naïve"

// desk is a real GNOME Shell with the route pointed at its IBus (through
// the desk's relay: see testdesk.Desk.Relay), and the daemon's address
// file found by Address as a session process finds it.
type desk struct {
	*testdesk.Desk
	route *Route
	bus   string // the relayed IBus address
}

func startDesk(t *testing.T) *desk {
	t.Helper()
	return startDeskOf(t, testdesk.GNOME)
}

// startDeskOf is startDesk on a desktop of choice.
func startDeskOf(t *testing.T, desktop testdesk.Desktop) *desk {
	t.Helper()
	d := testdesk.StartDesktop(t, desktop)
	// IBus's address, relayed, once ibus-daemon has written its address
	// file (KWin starts IBus after it serves clients).
	bus := d.IBus(t)
	// The address file as the session's own processes find it: the
	// desk's environment (WAYLAND_DISPLAY, XDG_CONFIG_HOME) and the
	// machine id the desk shares with the host.
	if _, err := Address(d.Env); err != nil {
		t.Fatalf("Address(the desk's environment): %v", err)
	}
	opt := Options{Environ: []string{"IBUS_ADDRESS=" + bus}, Log: testLog(t)}
	if desktop == testdesk.KDE {
		opt.Settle = EngineSettle // as yaz-type sets it outside GNOME
	}
	return &desk{Desk: d, bus: bus, route: New(opt)}
}

// testLog sends the route's debug lines (no text) to t.Log.
func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// globalEngineName asks the daemon for its global engine.
func (d *desk) globalEngineName(t *testing.T) string {
	t.Helper()
	ctx := testwait.Context(t)
	conn, err := dbus.Connect(d.bus, dbus.WithContext(ctx))
	if err != nil {
		t.Fatalf("connect to IBus: %v", err)
	}
	defer conn.Close()
	name, err := globalEngine(ctx, conn.Object(ibusService, ibusPath))
	if err != nil {
		t.Fatalf("the global engine: %v", err)
	}
	return name
}

// settle returns once the field's input method path is live: a GTK
// field reports its window active and its entry focused before the
// toolkit has enabled the compositor's text input for it (about 150 ms
// later with GTK 4 on GNOME 48), and what the engine sends before then
// goes nowhere. The proof is the route's own preedit showing in the
// field; a preedit that does not show within a second is sent again, in
// the same session (the preedit shows nothing once cleared, so a late
// one is harmless): one change of the global engine and one back, since
// on KWin IBus's Wayland input method aborts at changes closer together
// than it answers them, which a loaded machine makes slow (seen with a
// new session for each attempt: the second one's change killed it).
func (d *desk) settle(t *testing.T, f *testdesk.Field) {
	t.Helper()
	ctx := testwait.Context(t)
	s, err := d.route.Begin(ctx)
	if err != nil {
		t.Fatalf("settle: Begin: %v", err)
	}
	for attempt := 1; ; attempt++ {
		if err := s.Preedit(ctx, "…"); err != nil {
			t.Fatalf("settle: Preedit: %v", err)
		}
		shown := f.WaitFor(time.Second, func(ev testdesk.Event) bool { return ev.Ev == "preedit" && ev.Text == "…" })
		if err := s.Preedit(ctx, ""); err != nil {
			t.Fatalf("settle: Preedit(\"\"): %v", err)
		}
		if shown {
			f.Wait(t, "the settling preedit cleared", func(ev testdesk.Event) bool { return ev.Ev == "preedit" && ev.Text == "" })
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("settle: the field's input method never showed a preedit (%d attempts)", attempt)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("settle: Close: %v", err)
	}
}

// repeat is n characters of the sample, cycled.
func repeat(n int) string {
	r := []rune(sample)
	out := make([]rune, n)
	for i := range out {
		out[i] = r[i%len(r)]
	}
	// No leading or trailing space: the cleaned text keeps them, but a
	// text of spaces alone types nothing.
	if out[0] == ' ' {
		out[0] = 'G'
	}
	return string(out)
}

// TestOnGNOME runs the route against a real GNOME Shell 48 with IBus
// 1.5.32 (testdesk), into GTK 4 and GTK 3 entries.
func TestOnGNOME(t *testing.T) {
	d := startDesk(t)
	before := d.globalEngineName(t)
	if before == "" || before == EngineName {
		t.Fatalf("the desk's global engine before any text is %q", before)
	}

	// No window at all: IBus's focus is the shell's own input context,
	// so the route cannot say there is no field, and says it did not see
	// its text arrive.
	t.Run("nofield", func(t *testing.T) {
		ctx := testwait.Context(t)
		if got, err := d.route.Focus(ctx); err != nil || got == FocusWindow {
			t.Fatalf("Focus with no window = %v, %v; want unknown or none", got, err)
		}
		if err := d.route.Type(ctx, untrusted.Typed("nowhere")); err != nil && !errors.Is(err, ErrNoTarget) {
			t.Fatalf("Type with no window: %v", err)
		}
		if got := d.route.LastDelivery(); got == Confirmed {
			t.Errorf("Type with no window: delivery %v, want not confirmed", got)
		}
	})

	for _, gtk := range []int{4, 3} {
		t.Run(fmt.Sprintf("GTK%d", gtk), func(t *testing.T) {
			f := d.Field(t, testdesk.FieldOptions{GTK: gtk})
			d.settle(t, f)
			ctx := testwait.Context(t)
			if err := d.route.Type(ctx, untrusted.Typed(sample)); err != nil {
				t.Fatalf("Type: %v", err)
			}
			f.WaitText(t, sample)
			// GTK fields on GNOME report their surrounding text: the route
			// saw the text arrive.
			if got := d.route.LastDelivery(); got != Confirmed {
				t.Errorf("delivery %v, want confirmed", got)
			}
			if got := d.globalEngineName(t); got != before {
				t.Errorf("the global engine after Type is %q, want %q back", got, before)
			}
		})
	}

	t.Run("lengths", func(t *testing.T) {
		for _, n := range []int{1, 100, 5000} {
			t.Run(fmt.Sprint(n), func(t *testing.T) {
				f := d.Field(t, testdesk.FieldOptions{GTK: 4})
				d.settle(t, f)
				text := repeat(n)
				if err := d.route.Type(testwait.Context(t), untrusted.Typed(text)); err != nil {
					t.Fatalf("Type(%d characters): %v", n, err)
				}
				f.WaitText(t, text)
			})
		}
	})

	t.Run("password", func(t *testing.T) {
		f := d.Field(t, testdesk.FieldOptions{GTK: 4})
		d.settle(t, f)
		f.SetPassword(t, true)
		ctx := testwait.Context(t)
		// The entry's new purpose reaches IBus through the toolkit and the
		// shell after the field has said it set it: Begin, which commits
		// nothing, is asked until it sees it.
		d.until(t, func(err error) bool { return errors.Is(err, ErrRefused) })
		err := d.route.Type(ctx, untrusted.Typed("secret"))
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("Type into a password field: %v, want ErrRefused", err)
		}
		if got := d.globalEngineName(t); got != before {
			t.Errorf("the global engine after a refusal is %q, want %q back", got, before)
		}
		// The event after: the same entry made a plain one takes a text,
		// which then must be all it holds.
		f.SetPassword(t, false)
		d.until(t, func(err error) bool { return err == nil })
		if err := d.route.Type(ctx, untrusted.Typed("after")); err != nil {
			t.Fatalf("Type into the same entry, no longer a password entry: %v", err)
		}
		f.WaitText(t, "after")
	})

	t.Run("preedit", func(t *testing.T) {
		f := d.Field(t, testdesk.FieldOptions{GTK: 4})
		d.settle(t, f)
		ctx := testwait.Context(t)
		s, err := d.route.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if err := s.Preedit(ctx, "vorläufig 😀"); err != nil {
			t.Fatalf("Preedit: %v", err)
		}
		f.Wait(t, "the preedit text", func(ev testdesk.Event) bool { return ev.Ev == "preedit" && ev.Text == "vorläufig 😀" })
		if err := s.Preedit(ctx, ""); err != nil {
			t.Fatalf("Preedit(\"\"): %v", err)
		}
		f.Wait(t, "the preedit cleared", func(ev testdesk.Event) bool { return ev.Ev == "preedit" && ev.Text == "" })
		if _, err := s.Commit(ctx, "fertig"); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		f.WaitText(t, "fertig")
		if err := s.Close(ctx); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if got := d.globalEngineName(t); got != before {
			t.Errorf("the global engine after the session is %q, want %q back", got, before)
		}
	})
}

// TestProgramOnGNOME: the yaz-type program, started with an empty
// environment but the session's variables (no LANG), chooses IBus on the
// real GNOME Shell (auto: mutter has no virtual keyboard) and types, with
// auto and with --backend ibus, into a GTK 4 field exactly, exit 0 (the
// field showed the text arrive); into a password field it types nothing
// and exits 6.
func TestProgramOnGNOME(t *testing.T) {
	prog := testbin.Program(t, "yaz-type")
	d := startDesk(t)
	run := d.program(prog)
	// auto on GNOME: the compositor has no virtual keyboard, IBus runs.
	if code, out, stderr := run(t, "--route"); code != 0 || !strings.HasPrefix(out, "auto → ibus\n") {
		t.Fatalf("yaz-type --route on GNOME: exit %d, %q, %q; want auto → ibus", code, out, stderr)
	}
	f := d.Field(t, testdesk.FieldOptions{GTK: 4})
	d.settle(t, f)
	if code, _, stderr := run(t, sample); code != 0 {
		t.Fatalf("yaz-type (auto): exit %d: %s", code, stderr)
	}
	f.WaitText(t, sample)
	if code, _, stderr := run(t, "--backend", "ibus", "und weiter"); code != 0 {
		t.Fatalf("yaz-type --backend ibus: exit %d: %s", code, stderr)
	}
	f.WaitText(t, sample+"und weiter")
	f.SetPassword(t, true)
	d.until(t, func(err error) bool { return errors.Is(err, ErrRefused) })
	if code, _, stderr := run(t, "secret"); code != 6 || !strings.Contains(stderr, "password field") {
		t.Errorf("yaz-type into a password field: exit %d, %q; want 6 and why", code, stderr)
	}
	if got := f.Text(); got != sample+"und weiter" {
		t.Errorf("the field holds %q after the refusal, want %q", got, sample+"und weiter")
	}
}

// TestProgramOnKDE: on the real KWin 6.3 with IBus as its input method
// (kwinrc's InputMethod, what Plasma's Virtual Keyboard setting "IBus
// Wayland" writes), auto does not take IBus (its Wayland input method
// there passes no password purpose on and dies when engines change in
// quick succession: see EngineSettle), and a person who names it gets
// the text exactly, twice in a row from two processes (the second one's
// change of engine comes right after the first one's end), exit 0: the
// field's surrounding text showed it arrive; and sessions that end as soon
// as they begin leave IBus's input method alive.
func TestProgramOnKDE(t *testing.T) {
	prog := testbin.Program(t, "yaz-type")
	d := startDeskOf(t, testdesk.KDE)
	run := d.program(prog)
	if code, out, stderr := run(t, "--route"); strings.HasPrefix(out, "auto → ibus") {
		t.Fatalf("yaz-type --route on KDE: exit %d, %q, %q; want a route other than ibus", code, out, stderr)
	} else {
		t.Logf("yaz-type --route on KWin: exit %d: %s%s", code, out, stderr)
	}
	f := d.Field(t, testdesk.FieldOptions{GTK: 4})
	d.settle(t, f)
	if code, _, stderr := run(t, "--backend", "ibus", sample); code != 0 {
		t.Fatalf("yaz-type --backend ibus: exit %d: %s", code, stderr)
	}
	f.WaitText(t, sample)
	if code, _, stderr := run(t, "--backend", "ibus", "und weiter"); code != 0 {
		t.Fatalf("yaz-type --backend ibus, again: exit %d: %s", code, stderr)
	}
	f.WaitText(t, sample+"und weiter")
	// Sessions that end as soon as they begin (what a refused field or a
	// caller that gives up does): engine changes back to back, which
	// IBus's Wayland input method survives only with the quiet between
	// (with no quiet, 40 of them killed it in both of two runs here).
	ctx := testwait.Context(t)
	for range 25 {
		s, err := d.route.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if err := s.Close(ctx); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if code, _, stderr := run(t, "--backend", "ibus", "!"); code != 0 {
		t.Fatalf("yaz-type --backend ibus after the sessions: exit %d: %s", code, stderr)
	}
	f.WaitText(t, sample+"und weiter!")
	if strings.Contains(d.Log(), "Input Method crashed") {
		t.Errorf("IBus's input method crashed on KWin:\n%s", d.Log())
	}
}

// program runs the yaz-type program prog with an empty environment but
// the session's variables as a program of the desktop gets them (no
// LANG), with IBus's address the desk's relay (see startDesk): its exit
// status, stdout and stderr.
func (d *desk) program(prog string) func(t *testing.T, args ...string) (int, string, string) {
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + d.Runtime, "IBUS_ADDRESS=" + d.bus}
	for _, kv := range d.Env {
		if strings.HasPrefix(kv, "WAYLAND_DISPLAY=") || strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") ||
			strings.HasPrefix(kv, "XDG_CURRENT_DESKTOP=") || strings.HasPrefix(kv, "DBUS_SESSION_BUS_ADDRESS=") {
			env = append(env, kv)
		}
	}
	return func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.CommandContext(testwait.Context(t), prog, args...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, stdout.String(), stderr.String()
		case errors.As(err, &ee):
			return ee.ExitCode(), stdout.String(), stderr.String()
		}
		t.Fatalf("yaz-type: %v", err)
		return -1, "", ""
	}
}

// until asks Begin (and Close) until its error satisfies ok.
func (d *desk) until(t *testing.T, ok func(error) bool) {
	t.Helper()
	ctx := testwait.Context(t)
	for {
		s, err := d.route.Begin(ctx)
		if s != nil {
			if cerr := s.Close(ctx); cerr != nil {
				t.Fatalf("Close: %v", cerr)
			}
		}
		if ok(err) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("Begin never gave the wanted result; the last: %v", err)
		}
	}
}

// TestUnavailable: no IBus bus at the address: ErrUnavailable, at once.
func TestUnavailable(t *testing.T) {
	r := New(Options{Environ: []string{"IBUS_ADDRESS=unix:path=" + t.TempDir() + "/none"}})
	ctx, cancel := context.WithCancel(testwait.Context(t))
	defer cancel()
	if err := r.Type(ctx, untrusted.Typed("x")); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Type with no bus: %v, want ErrUnavailable", err)
	}
	if _, err := r.Focus(ctx); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Focus with no bus: %v, want ErrUnavailable", err)
	}
}
