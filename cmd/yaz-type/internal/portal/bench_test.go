package portal

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/internal/testportal"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/untrusted"
)

// BenchmarkPortalType types 58 characters through Debian's real
// xdg-desktop-portal 1.16 to the test backend, key by key (each call
// answered before the next), and a mixed-script text through the paste
// (the test's clipboard: no wl-copy runs in it, but the wait of
// RestoreDelay for the window to fetch it is). A call returns when the
// frontend has answered every key.
func BenchmarkPortalType(b *testing.B) {
	d := start(b, testportal.Options{Layout: "de"})
	d.o.Log = slog.New(slog.DiscardHandler)
	const text = "Grüße aus Köln, 58 Zeichen lang: ÄÖÜ äöü ß 0123456789 ok!!"
	if n := len([]rune(text)); n != 58 {
		b.Fatalf("%d characters", n)
	}
	d.p.Backend.Expect(text)
	d.route().Prepare()
	waitState(b, d.route(), StateReady)
	inj := d.route()
	b.Run("keys58", func(b *testing.B) {
		for b.Loop() {
			if err := inj.Type(testwait.Context(b), untrusted.Typed(text)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("paste", func(b *testing.B) {
		for b.Loop() {
			if err := inj.Type(testwait.Context(b), untrusted.Typed(mixed)); !errors.Is(err, backend.ErrPasted) {
				b.Fatal(err)
			}
		}
	})
}
