package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testdesk"
	"github.com/yazses/yazses/internal/testportal"
	"github.com/yazses/yazses/internal/testsway"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/internal/testwl"
	"github.com/yazses/yazses/internal/testx"
)

// text58 is the 58 characters of the typing latency goals (docs/performance.md).
const text58 = "And so, my fellow Americans, ask not what your country can"

// BenchmarkReleaseToLastChar: the key's release (hold.stop) to the last
// character of a 58-character dictation in the window, through the real
// daemon with a decoder that answers at once (the fake one), route by
// route on this machine: x11 (XTEST in the daemon, into xterm under
// Xvfb), wayland (the virtual keyboard in the daemon, into foot under
// headless sway), wtype (the same with wtype), and portal (Debian's
// xdg-desktop-portal 1.16 to the test backend, the GNOME-like desktop of
// TestPortalDesktop: to the last key the backend took), and ibus (the
// real GNOME Shell 48 with IBus, into a GTK 4 field: internal/testdesk;
// skipped without root and the desk's root, as its tests are). The goal
// for wayland: at most 120 ms. Each iteration records the speech once
// (a few seconds) before the release; the first, a warm-up that also
// gives the headless seat its keyboard, is not counted. Run with
// -benchtime=5x.
func BenchmarkReleaseToLastChar(b *testing.B) {
	for _, route := range []string{"x11", "wayland", "wtype", "portal", "ibus"} {
		b.Run("route="+route, func(b *testing.B) {
			desk := benchDesktop(b, route)
			content, src := desk.content, desk.src
			size := func() int { return len(content()) }
			cfg := dictationConfig(answerWAV(), true).With("dictation.inject", q(desk.inject))
			d := newDaemon(b, cfg, append(desk.env, "YAZ_FAKE_TEXT="+text58)...)
			d.Level = "info"
			d.Start()
			d.WaitRunning("gate", "speak", "decode")
			c := d.Client()
			speech := wavDuration(b, answerWAV())
			var lat []time.Duration
			b.ResetTimer()
			b.StopTimer()
			for i := range b.N + 1 {
				d.holdWhileSpeaking(c, speech)
				before := size()
				t0 := time.Now()
				r := d.stopHold(c)
				if r.Outcome != "typed" || r.Backend != route {
					b.Fatalf("hold.stop = %+v, want typed with %s\n%s", r, route, d.LogTail(20))
				}
				if i == 0 {
					continue // the warm-up: the next speech gives its keys time to arrive
				}
				var last time.Time
				err := testwait.Until(testwait.Context(b), func() bool {
					if size() >= before+len(text58) {
						last = time.Now()
						return true
					}
					return false
				}, src)
				if err != nil {
					b.Fatalf("the text never arrived: %d of %d", size()-before, len(text58))
				}
				lat = append(lat, last.Sub(t0))
				if got := content()[before:]; got != text58 {
					b.Fatalf("the window got %q, want %q", got, text58)
				}
			}
			med := median(lat)
			b.ReportMetric(ms(med), "release-to-last-char-ms")
			fmt.Printf("BenchmarkReleaseToLastChar route=%s: release → last of 58 characters, median of %d: %s ms (all: %v)\n",
				route, len(lat), formatMs(med), lat)
		})
	}
}

// benchDesk is a desktop a route types into: the daemon's environment,
// its dictation.inject, the window's file ("" for the portal, whose test
// backend holds what it took), what has arrived so far and a source that
// changes when that grows.
type benchDesk struct {
	env     []string
	inject  string
	file    string
	content func() string
	src     testwait.Source
}

// benchDesktop starts the desktop route types into.
func benchDesktop(b *testing.B, route string) benchDesk {
	b.Helper()
	switch route {
	case "x11":
		x := startX(b)
		rec := startRecorder(b, x)
		rec.Focus(b)
		return benchDesk{x.DaemonEnv(), route, rec.File, func() string { return readFile(rec.File) }, rec}
	case "ibus":
		desk := testdesk.Start(b)
		bus := desk.IBus(b)
		f := desk.Field(b, testdesk.FieldOptions{GTK: 4})
		return benchDesk{[]string{"DISPLAY=", "WAYLAND_DISPLAY=" + desk.WaylandSocket, "IBUS_ADDRESS=" + bus, "XDG_CURRENT_DESKTOP=GNOME"},
			"auto", "", f.Text, f}
	case "portal":
		p := testportal.Start(b, testportal.Options{Layout: "us"})
		p.Backend.Expect(text58)
		wl := testwl.Start(b, p.Keymap())
		return benchDesk{[]string{"DBUS_SESSION_BUS_ADDRESS=" + p.Addr, wl.Env[0], "DISPLAY="}, route, "",
			p.Backend.Typed, &p.Backend.Changed}
	}
	sway := testsway.Start(b)
	file := testsway.StartFoot(b, sway)
	rec := testx.NewRecorder(b, sway, "", file)
	env := []string{"DISPLAY=", "SWAYSOCK=" + getenv(sway, "SWAYSOCK"),
		"WAYLAND_DISPLAY=" + filepath.Join(getenv(sway, "XDG_RUNTIME_DIR"), getenv(sway, "WAYLAND_DISPLAY"))}
	inject := route
	if route == "wayland" {
		// auto: the daemon makes its virtual keyboard when it starts, as
		// on a desktop, so the terminal has bound its keyboard before the
		// first text (the headless seat has no keyboard of its own).
		inject = "auto"
	}
	return benchDesk{env, inject, file, func() string { return readFile(file) }, rec}
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func getenv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
