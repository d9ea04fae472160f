package desk

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"

	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/config"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testDesktop opens what the test says.
type testDesktop struct {
	inj    Injector
	injErr error
	keys   Hotkey
	keyErr error
}

func (d testDesktop) Notify(context.Context, string) {}
func (d testDesktop) OpenInjector(string, int) (Injector, error) {
	return d.inj, d.injErr
}
func (d testDesktop) OpenHotkey() (Hotkey, error) { return d.keys, d.keyErr }

type backends []string

func (b backends) Type(context.Context, string) (string, error) { return b[0], nil }
func (b backends) Backends() []string                           { return b }

// told records what the desk tells the daemon.
type told struct {
	audited  []string
	notified []string
}

func (t *told) Audit(e audit.Event) { t.audited = append(t.audited, e.Kind) }
func (t *told) Notify(kind string)  { t.notified = append(t.notified, kind) }

// TestTypingStatus: status names the injector's backends and the
// dictation.inject it was opened for; without one it says why (the
// opening's error, notified as no_route, or that there is no typing
// backend: the text is kept).
func TestTypingStatus(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	dc := config.Default().Dictation
	dc.Inject = "auto"
	var r told
	d := New(testDesktop{inj: backends{"wtype", "ydotool"}}, config.Default().Hotkey, &r, log)
	if st := d.Typing("auto"); st.Error == "" || len(st.Backends) != 0 {
		t.Errorf("before the opening: %+v, want no backend and why", st)
	}
	d.OpenInjector(dc)
	if st := d.Typing("other"); st.Inject != "auto" || !slices.Equal(st.Backends, []string{"wtype", "ydotool"}) || st.Error != "" {
		t.Errorf("opened: %+v, want auto with wtype, ydotool", st)
	}
	if d.Injector() == nil || len(r.notified) != 0 {
		t.Errorf("opened: Injector %v, notified %v; want one, nothing", d.Injector(), r.notified)
	}

	d = New(testDesktop{injErr: errors.New("no route here")}, config.Default().Hotkey, &r, log)
	d.OpenInjector(dc)
	if st := d.Typing("auto"); st.Error != "no route here" || len(st.Backends) != 0 {
		t.Errorf("failed: %+v, want the error", st)
	}
	if d.Injector() != nil || !slices.Equal(r.notified, []string{"no_route"}) {
		t.Errorf("failed: Injector %v, notified %v; want none, no_route", d.Injector(), r.notified)
	}

	d = New(nil, config.Default().Hotkey, &r, log)
	d.OpenInjector(dc)
	if st := d.Typing("auto"); st.Inject != "auto" || st.Error == "" {
		t.Errorf("no desktop: %+v, want auto, and why nothing types", st)
	}
}

// TestHotkeyFailed: a key source that cannot be opened leaves the status
// not listening, with the error, and is audited (hotkey.failed); one
// that ends with the daemon is not.
func TestHotkeyFailed(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	hk := config.Default().Hotkey
	hk.Enabled = true
	var r told
	d := New(testDesktop{keyErr: errors.New("no keyboard")}, hk, &r, log)
	d.RunHotkey(context.Background(), func(bool) {})
	if st := d.Hotkey(); st.Listening || st.Error != "no keyboard" || !st.Enabled {
		t.Errorf("status %+v, want enabled, not listening, the error", st)
	}
	if !slices.Equal(r.audited, []string{"hotkey.failed"}) {
		t.Errorf("audited %v, want hotkey.failed", r.audited)
	}

	r = told{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d = New(testDesktop{keys: listenUntil{}}, hk, &r, log)
	d.RunHotkey(ctx, func(bool) {})
	if st := d.Hotkey(); st.Listening || st.Error != "" || len(r.audited) != 0 {
		t.Errorf("ended with ctx: status %+v, audited %v; want not listening, no error, nothing", st, r.audited)
	}
}

// listenUntil listens until ctx ends.
type listenUntil struct{}

func (listenUntil) Listen(ctx context.Context, press func(bool)) error {
	<-ctx.Done()
	return nil
}
