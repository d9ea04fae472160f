package testportal

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"

	"github.com/yazses/yazses/internal/testwait"
)

// Backend interfaces and paths.
const (
	implPath    = dbus.ObjectPath("/org/freedesktop/portal/desktop")
	implRD      = "org.freedesktop.impl.portal.RemoteDesktop"
	implGS      = "org.freedesktop.impl.portal.GlobalShortcuts"
	implSession = "org.freedesktop.impl.portal.Session"
	implRequest = "org.freedesktop.impl.portal.Request"
)

// Keysyms the backend treats as keys, not characters.
const (
	ksShiftL   = 0xffe1
	ksInsert   = 0xff63
	ksCapsLock = 0xffe5
)

// Shortcut is one shortcut as BindShortcuts gave it.
type Shortcut struct {
	ID               string
	Description      string
	PreferredTrigger string
}

// Backend is the test desktop's portal backend (see the package comment).
// Its methods are safe to call from the test while the frontend calls it.
type Backend struct {
	t        testing.TB
	conn     *dbus.Conn
	exportMu sync.Mutex // see export
	layout   string
	options  string // XKB options
	// Changed is notified after every call from the frontend.
	Changed testwait.Signal

	mu         sync.Mutex
	events     []string
	selects    []map[string]dbus.Variant
	dialogs    int
	refuse     bool
	needID     bool      // Options.RequireAppID
	bindCode   uint32    // Options.BindResponse
	appIDs     []string  // the application id of each GlobalShortcuts session asked for
	hold       chan bool // non-nil: Start waits for the test's answer
	typed      []rune
	keysyms    int
	dropped    []uint32
	unknown    []uint32
	wrong      []uint32
	shift      bool
	locked     bool   // Caps Lock
	leds       string // the keyboard LEDs' folder, as /sys/class/leds
	clipboard  string
	pastes     int
	runes      map[uint32]rune
	rdSessions []dbus.ObjectPath
	gsSession  dbus.ObjectPath
	bound      []Shortcut
	closed     []dbus.ObjectPath
}

func newBackend(t testing.TB, addr string, opts Options) *Backend {
	b := &Backend{t: t, layout: opts.Layout, options: opts.Options, refuse: opts.Refuse, needID: opts.RequireAppID, bindCode: opts.BindResponse, runes: map[uint32]rune{}, leds: t.TempDir()}
	for _, led := range []string{"input3::numlock", "input3::capslock", "input3::scrolllock"} {
		if err := os.MkdirAll(filepath.Join(b.leds, led), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The desktop's lock starts as this machine's keyboards show theirs:
	// a daemon under test reads the real LEDs, and finds the desktop's.
	b.locked = hostCapsLocked()
	b.setLED()
	// godbus runs each method call on a goroutine of its own: the keys
	// are taken here instead, in the order they arrive, as mutter does.
	c, err := dbus.Connect(addr, dbus.WithIncomingInterceptor(b.intercept))
	if err != nil {
		t.Fatalf("connect the backend: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	b.conn = c
	if err := c.Export(rdImpl{b}, implPath, implRD); err != nil {
		t.Fatal(err)
	}
	if err := c.Export(gsImpl{b}, implPath, implGS); err != nil {
		t.Fatal(err)
	}
	props := prop.Map{
		implRD: {
			"AvailableDeviceTypes": {Value: uint32(7)},
			"version":              {Value: uint32(1)},
		},
		implGS: {"version": {Value: uint32(1)}},
	}
	if _, err := prop.Export(c, implPath, props); err != nil {
		t.Fatal(err)
	}
	reply, err := c.RequestName(BackendName, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own %s: %v (reply %d)", BackendName, err, reply)
	}
	return b
}

func (b *Backend) note(format string, args ...any) {
	b.mu.Lock()
	b.events = append(b.events, fmt.Sprintf(format, args...))
	b.mu.Unlock()
	b.Changed.Notify()
}

// Events are the calls that arrived, in order ("RemoteDesktop.Start" …).
func (b *Backend) Events() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.events)
}

// Dialogs is how many consent dialogs RemoteDesktop.Start showed.
func (b *Backend) Dialogs() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dialogs
}

// Selects are the options of each SelectDevices as the backend got them
// (what the frontend let through).
func (b *Backend) Selects() []map[string]dbus.Variant {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.selects)
}

// Refuse sets whether the next dialogs are cancelled.
func (b *Backend) Refuse(refuse bool) {
	b.mu.Lock()
	b.refuse = refuse
	b.mu.Unlock()
}

// HoldDialogs makes each Start wait until Answer.
func (b *Backend) HoldDialogs() {
	b.mu.Lock()
	b.hold = make(chan bool)
	b.mu.Unlock()
}

// Answer answers a Start that waits (true: allowed).
func (b *Backend) Answer(allow bool) {
	b.mu.Lock()
	h := b.hold
	b.mu.Unlock()
	select {
	case h <- allow:
	case <-time.After(testwait.Hang):
		b.t.Errorf("no consent dialog was waiting for an answer within %v", testwait.Hang)
	}
}

// Expect readies the backend for the characters of text: it learns from
// libxkbcommon which keysym stands for each (so that it can tell the text
// that arrives, and a keysym that stands for none of them).
func (b *Backend) Expect(text string) {
	b.t.Helper()
	for _, r := range text {
		ks := Keysym(b.t, r)
		b.mu.Lock()
		if ks != 0 {
			b.runes[ks] = r
		}
		b.mu.Unlock()
	}
}

// Typed is the text that arrived: the characters of the keysyms the
// layout has, and the pastes.
func (b *Backend) Typed() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.typed)
}

// Keysyms is how many key presses of characters arrived (the paste
// chord not counted).
func (b *Backend) Keysyms() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.keysyms
}

// Pastes is how many Shift+Insert chords pasted.
func (b *Backend) Pastes() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pastes
}

// Lost lists the keysyms that did not type what they stand for: dropped
// (the layout lacks them, as mutter drops them), of no character Expect
// was told of, or at a level mutter does not press.
func (b *Backend) Lost() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var parts []string
	for _, l := range []struct {
		what string
		ks   []uint32
	}{{"dropped", b.dropped}, {"unknown", b.unknown}, {"wrong level", b.wrong}} {
		if len(l.ks) > 0 {
			parts = append(parts, fmt.Sprintf("%s %#x", l.what, l.ks))
		}
	}
	return strings.Join(parts, "; ")
}

// SetClipboard sets what a paste in the desktop's window reads.
func (b *Backend) SetClipboard(s string) {
	b.mu.Lock()
	b.clipboard = s
	b.mu.Unlock()
}

// Clipboard is what a paste would read now.
func (b *Backend) Clipboard() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.clipboard
}

// Reset forgets the text that arrived.
func (b *Backend) Reset() {
	b.mu.Lock()
	b.typed, b.keysyms, b.pastes = nil, 0, 0
	b.dropped, b.unknown, b.wrong = nil, nil, nil
	b.mu.Unlock()
}

// Bound are the shortcuts of the last BindShortcuts.
func (b *Backend) Bound() []Shortcut {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.bound)
}

// ShortcutSession is the GlobalShortcuts session the shortcuts were bound
// in ("" before).
func (b *Backend) ShortcutSession() dbus.ObjectPath {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gsSession
}

// RemoteDesktopSessions are the sessions created, in order.
func (b *Backend) RemoteDesktopSessions() []dbus.ObjectPath {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.rdSessions)
}

// Closed are the sessions the frontend closed, in order.
func (b *Backend) Closed() []dbus.ObjectPath {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.closed)
}

// AppIDs lists the application id the frontend gave each GlobalShortcuts
// session asked for ("" for a caller it knows none of).
func (b *Backend) AppIDs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.appIDs)
}

// Activate presses the shortcut id: the desktop emits Activated.
func (b *Backend) Activate(id string) { b.emitShortcut("Activated", id) }

// Deactivate releases it: Deactivated.
func (b *Backend) Deactivate(id string) { b.emitShortcut("Deactivated", id) }

func (b *Backend) emitShortcut(member, id string) {
	b.t.Helper()
	s := b.ShortcutSession()
	if s == "" {
		b.t.Fatalf("%s %s: no shortcut was bound", member, id)
	}
	ts := uint64(time.Now().UnixMicro())
	if err := b.conn.Emit(implPath, implGS+"."+member, s, id, ts, map[string]dbus.Variant{}); err != nil {
		b.t.Fatalf("emit %s: %v", member, err)
	}
}

// EndSession closes a session from the desktop's side (the person
// stopped it in the desktop's indicator): the impl Session emits Closed.
func (b *Backend) EndSession(s dbus.ObjectPath) {
	b.t.Helper()
	if err := b.conn.Emit(s, implSession+".Closed"); err != nil {
		b.t.Fatalf("emit Closed: %v", err)
	}
}

type options = map[string]dbus.Variant

// session is an impl Session object.
type session struct {
	b    *Backend
	path dbus.ObjectPath
}

func (s session) Close() *dbus.Error {
	s.b.mu.Lock()
	s.b.closed = append(s.b.closed, s.path)
	s.b.mu.Unlock()
	_ = s.b.export(nil, s.path, implSession)
	s.b.note("Session.Close")
	return nil
}

// request is an impl Request object.
type request struct {
	b    *Backend
	path dbus.ObjectPath
}

func (r request) Close() *dbus.Error {
	r.b.note("Request.Close")
	return nil
}

// export is the connection's Export, one at a time: godbus (5.2.4) reads
// its table of objects there without its lock, and the calls that export
// and take away run on goroutines of their own (TestBackendOverlappingCalls).
func (b *Backend) export(v any, path dbus.ObjectPath, iface string) error {
	b.exportMu.Lock()
	defer b.exportMu.Unlock()
	return b.conn.Export(v, path, iface)
}

func (b *Backend) exportSession(path dbus.ObjectPath) {
	if err := b.export(session{b, path}, path, implSession); err != nil {
		b.t.Errorf("export session: %v", err)
	}
}

func (b *Backend) exportRequest(path dbus.ObjectPath) func() {
	if err := b.export(request{b, path}, path, implRequest); err != nil {
		b.t.Errorf("export request: %v", err)
	}
	return func() { _ = b.export(nil, path, implRequest) }
}

type rdImpl struct{ b *Backend }

func (r rdImpl) CreateSession(handle, sess dbus.ObjectPath, appID string, opts options) (uint32, options, *dbus.Error) {
	b := r.b
	defer b.exportRequest(handle)()
	b.exportSession(sess)
	b.mu.Lock()
	b.rdSessions = append(b.rdSessions, sess)
	b.mu.Unlock()
	b.note("RemoteDesktop.CreateSession")
	return 0, options{}, nil
}

func (r rdImpl) SelectDevices(handle, sess dbus.ObjectPath, appID string, opts options) (uint32, options, *dbus.Error) {
	b := r.b
	b.mu.Lock()
	b.selects = append(b.selects, opts)
	b.mu.Unlock()
	b.note("RemoteDesktop.SelectDevices")
	return 0, options{}, nil
}

func (r rdImpl) Start(handle, sess dbus.ObjectPath, appID, parent string, opts options) (uint32, options, *dbus.Error) {
	b := r.b
	defer b.exportRequest(handle)()
	b.mu.Lock()
	b.dialogs++
	refuse, hold := b.refuse, b.hold
	b.mu.Unlock()
	b.note("RemoteDesktop.Start")
	if hold != nil {
		select {
		case allow := <-hold:
			refuse = !allow
		case <-time.After(testwait.Hang):
			return 2, options{}, nil
		}
	}
	if refuse {
		b.note("RemoteDesktop.Start refused")
		return 1, options{}, nil
	}
	b.note("RemoteDesktop.Start allowed")
	return 0, options{"devices": dbus.MakeVariant(uint32(1))}, nil
}

// NotifyKeyboardKeysym: the key was taken by intercept.
func (r rdImpl) NotifyKeyboardKeysym(sess dbus.ObjectPath, opts options, keysym int32, state uint32) *dbus.Error {
	return nil
}

// intercept sees every message the backend receives, in order, on the
// connection's reader.
func (b *Backend) intercept(m *dbus.Message) {
	if m.Type != dbus.TypeMethodCall {
		return
	}
	iface, _ := m.Headers[dbus.FieldInterface].Value().(string)
	member, _ := m.Headers[dbus.FieldMember].Value().(string)
	if iface != implRD || member != "NotifyKeyboardKeysym" || len(m.Body) != 4 {
		return
	}
	keysym, _ := m.Body[2].(int32)
	state, _ := m.Body[3].(uint32)
	b.key(uint32(keysym), state)
}

// key types as mutter does (see the package comment).
func (b *Backend) key(ks, state uint32) {
	defer b.Changed.Notify()
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case ks == ksShiftL:
		b.shift = state == 1
		return
	case state != 1:
		return
	case ks == ksInsert && b.shift:
		b.pastes++
		b.typed = append(b.typed, []rune(b.clipboard)...)
		return
	case ks == ksCapsLock:
		if _, ok, err := firstLevel(b.layout, b.options, ks); err != nil || !ok {
			b.dropped = append(b.dropped, ks)
			return
		}
		b.locked = !b.locked
		b.setLED()
		return
	}
	b.keysyms++
	level, ok, err := firstLevel(b.layout, b.options, ks)
	switch {
	case err != nil:
		b.t.Errorf("the backend's keymap: %v", err)
	case !ok:
		b.dropped = append(b.dropped, ks)
	case level > 3:
		b.wrong = append(b.wrong, ks)
	default:
		r, known := b.runes[ks]
		if !known {
			b.unknown = append(b.unknown, ks)
			return
		}
		if b.locked && level <= 2 {
			// The letter keys' types (ALPHABETIC and its kin) take
			// Lock as Shift at the first two levels, and Shift with
			// Lock as neither: mutter leaves the lock as it is.
			r = swapCase(r)
		}
		b.typed = append(b.typed, r)
	}
}

// swapCase is r in its other case, if it has one.
func swapCase(r rune) rune {
	switch {
	case unicode.IsUpper(r):
		return unicode.ToLower(r)
	case unicode.IsLower(r) && unicode.ToUpper(r) != r:
		return unicode.ToUpper(r)
	}
	return r
}

// setLED shows the lock on the keyboard's LED, as the compositor does.
// Called with b.mu held (or before the backend is shared).
func (b *Backend) setLED() {
	v := "0\n"
	if b.locked {
		v = "1\n"
	}
	if err := os.WriteFile(filepath.Join(b.leds, "input3::capslock", "brightness"), []byte(v), 0o644); err != nil {
		b.t.Errorf("the Caps Lock LED: %v", err)
	}
}

// hostCapsLocked reports whether a Caps Lock LED of this machine is lit.
func hostCapsLocked() bool {
	files, _ := filepath.Glob("/sys/class/leds/*::capslock/brightness")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) != "0" {
			return true
		}
	}
	return false
}

// LEDs is the folder of the keyboard's LEDs (the route's /sys/class/leds).
func (b *Backend) LEDs() string { return b.leds }

// SetCapsLock locks or unlocks Caps Lock, as the person's key would.
func (b *Backend) SetCapsLock(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.locked = on
	b.setLED()
}

// CapsLock reports whether Caps Lock is locked.
func (b *Backend) CapsLock() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.locked
}

func (r rdImpl) NotifyKeyboardKeycode(sess dbus.ObjectPath, opts options, keycode int32, state uint32) *dbus.Error {
	r.b.note("RemoteDesktop.NotifyKeyboardKeycode")
	return nil
}

type gsImpl struct{ b *Backend }

type shortcutArg struct {
	ID   string
	Opts options
}

func (g gsImpl) CreateSession(handle, sess dbus.ObjectPath, appID string, opts options) (uint32, options, *dbus.Error) {
	b := g.b
	defer b.exportRequest(handle)()
	b.mu.Lock()
	b.appIDs = append(b.appIDs, appID)
	needID := b.needID
	b.mu.Unlock()
	if needID && appID == "" {
		b.note("GlobalShortcuts.CreateSession refused: no app id")
		return 0, nil, dbus.NewError("org.freedesktop.portal.Error.NotAllowed", []any{"An app id is required"})
	}
	b.exportSession(sess)
	b.note("GlobalShortcuts.CreateSession")
	return 0, options{"session_handle": dbus.MakeVariant(sess)}, nil
}

func (g gsImpl) BindShortcuts(handle, sess dbus.ObjectPath, shortcuts []shortcutArg, parent string, opts options) (uint32, options, *dbus.Error) {
	b := g.b
	defer b.exportRequest(handle)()
	var bound []Shortcut
	var out []shortcutArg
	for _, s := range shortcuts {
		sc := Shortcut{ID: s.ID}
		if v, ok := s.Opts["description"].Value().(string); ok {
			sc.Description = v
		}
		if v, ok := s.Opts["preferred_trigger"].Value().(string); ok {
			sc.PreferredTrigger = v
		}
		bound = append(bound, sc)
		trigger := sc.PreferredTrigger
		if trigger == "" {
			trigger = "F13"
		}
		out = append(out, shortcutArg{s.ID, options{
			"description":         dbus.MakeVariant(sc.Description),
			"trigger_description": dbus.MakeVariant("Press " + trigger),
		}})
	}
	b.mu.Lock()
	b.bound, b.gsSession = bound, sess
	code := b.bindCode
	b.mu.Unlock()
	b.note("GlobalShortcuts.BindShortcuts")
	return code, options{"shortcuts": dbus.MakeVariant(out)}, nil
}

func (g gsImpl) ListShortcuts(handle, sess dbus.ObjectPath) (uint32, options, *dbus.Error) {
	b := g.b
	b.mu.Lock()
	var out []shortcutArg
	for _, s := range b.bound {
		out = append(out, shortcutArg{s.ID, options{"description": dbus.MakeVariant(s.Description)}})
	}
	b.mu.Unlock()
	b.note("GlobalShortcuts.ListShortcuts")
	return 0, options{"shortcuts": dbus.MakeVariant(out)}, nil
}
