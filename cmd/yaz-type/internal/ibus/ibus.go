// Package ibus types text through IBus, the input method framework GNOME
// uses on Wayland and X11 (and KDE offers): it becomes, for one text, the
// session's global input method engine and commits the text as one
// CommitText, which the framework hands to the focused field as an input
// method's commit (on GNOME Wayland: ibus-daemon → gnome-shell → the
// text-input protocol → the toolkit). No keys are pressed, so no keymap,
// no layout and no keysym lookup stands between the text and the field:
// every Unicode character arrives as it is, emoji and CJK included.
//
// One text, step by step (each call bounded by the context):
//
//  1. connect to the IBus bus ([Address]: IBUS_ADDRESS, or the address
//     file ibus-daemon writes for the session);
//  2. register a component with one engine ("yazses") and own the
//     component's bus name, serving org.freedesktop.IBus.Factory;
//  3. remember the global engine (org.freedesktop.IBus GlobalEngine) and
//     ask for ours with SetGlobalEngine, asynchronously: the daemon calls
//     back into this connection's factory (CreateEngine) before it
//     answers, so a call that waited for the answer first would deadlock;
//  4. wait for the engine's focus (FocusIn or FocusInId): the daemon gives
//     it when an input context, a text field, has the focus;
//  5. read the field's content type (the engine's ContentType property:
//     purpose and hints): a password or PIN field is refused, nothing is
//     committed ([ErrRefused]);
//  6. commit the whole text as ONE CommitText signal (commits sent back
//     to back race in the toolkits: only the last one lands);
//  7. give the previous global engine back.
//
// What the route may claim about delivery. What the desktop lets an
// engine see is the focus of an input context (FocusIn, FocusInId with the
// kind of client, "fake" being no text field), the field's content type,
// and, where the field offers it (capability SurroundingText), the text
// around the cursor. So a nil error from Type means: the daemon took the
// commit for the input context that had the focus, a field that did not
// call itself a password or PIN field. Where the field then reports its
// surrounding text (GTK 3 and 4 fields on GNOME 48 do, seen in the tests),
// Type waits, at most [ConfirmWait], for the text before the cursor to end
// with what it committed, and [Route.LastDelivery] says Confirmed;
// otherwise Committed: the commit was sent and the route did not see it
// arrive. It is no error: a field may filter its input, an empty field
// sends no surrounding text through GNOME Shell, and an input context
// whose field has just taken the focus may not be connected to it yet
// (seen on GNOME 48: a GTK 4 entry's text input is enabled about 150 ms
// after its window is active, and a commit before then is lost). A caller
// that needs to know reads LastDelivery. With no text field at all, the
// commit goes to the shell's own input context and nowhere: on GNOME
// Wayland the engine's focus is the shell's, given whether or not a field
// has the keyboard (so [Route.Focus] says FocusUnknown, and Type cannot
// return ErrNoTarget there); Type then says Committed, never Confirmed.
//
// Errors: ErrUnavailable (no IBus bus here, or the daemon did not make
// this engine global: nothing typed), ErrNoTarget (no text field got the
// focus: nothing typed), ErrRefused (a password or PIN field: nothing
// typed), ErrInterrupted (the context ended or the connection failed
// after the commit was sent: the text may be in the field).
package ibus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/lib/untrusted"
)

// Name is the backend's name.
const Name = "ibus"

// Errors: the typing backends' (package backend).
var (
	ErrNoTarget    = backend.ErrNoTarget
	ErrUnavailable = backend.ErrUnavailable
	ErrInterrupted = backend.ErrInterrupted
	// ErrRefused: the focused field is a password or PIN field. Nothing
	// was typed; no other backend should type it either.
	ErrRefused = backend.ErrRefused
)

// Focus is where committed text would go (package backend's).
type Focus = backend.Focus

// The focus the route reports.
const (
	FocusUnknown = backend.FocusUnknown
	FocusWindow  = backend.FocusWindow
	FocusNone    = backend.FocusNone
)

// Delivery is what Type could see of its commit.
type Delivery int

const (
	// Committed: the daemon took the commit for the focused field.
	Committed Delivery = iota
	// Confirmed: the field's surrounding text shows the text before the
	// cursor.
	Confirmed
)

func (d Delivery) String() string {
	if d == Confirmed {
		return "confirmed"
	}
	return "committed"
}

// ConfirmWait bounds the wait for the field's surrounding text to show a
// commit (it comes in milliseconds where it comes at all).
const ConfirmWait = 2 * time.Second

// FocusWait bounds the wait for the engine's focus once it is global.
const FocusWait = 5 * time.Second

// Content purposes (IBusInputPurpose, the same numbers as GTK's).
const (
	PurposePassword = 8
	PurposePIN      = 9
)

// Capability bits (IBusCapabilite).
const (
	CapPreeditText    = 1 << 0
	CapSurroundingTxt = 1 << 5
)

// D-Bus names.
const (
	ibusService   = "org.freedesktop.IBus"
	ibusPath      = "/org/freedesktop/IBus"
	ibusIface     = "org.freedesktop.IBus"
	factoryPath   = "/org/freedesktop/IBus/Factory"
	factoryIface  = "org.freedesktop.IBus.Factory"
	engineIface   = "org.freedesktop.IBus.Engine"
	serviceIface  = "org.freedesktop.IBus.Service"
	propsIface    = "org.freedesktop.DBus.Properties"
	componentName = "org.yazses.YazSes.IBusEngine"
	// EngineName is the engine's name in IBus.
	EngineName = "yazses"
)

// Options configure a Route.
type Options struct {
	// Environ is the session's environment (IBUS_ADDRESS, DISPLAY,
	// XDG_CONFIG_HOME, HOME): see Address. Nil is no variables at all.
	Environ []string
	// Settle is the quiet left after each change of the global engine
	// (see EngineSettle): EngineSettle where IBus's own Wayland input
	// method may run (KDE), 0 on GNOME, whose shell is the input method
	// and takes engine changes in any order, and where the quiet delays
	// the text's arrival (measured on GNOME 48: 825 ms from the release
	// to the last character with 400 ms, 55 ms without; as if the field
	// showed the commit only once the engine had gone, not traced
	// further).
	Settle time.Duration
	// MachineIDFiles override where the machine id is read (tests); nil
	// is DefaultMachineIDFiles.
	MachineIDFiles []string
	// Log gets debug lines (steps, focus, content type, durations: never
	// text); nil discards them.
	Log *slog.Logger
}

// Route is the IBus typing backend.
type Route struct {
	opt  Options
	mu   sync.Mutex // one text at a time; guards last and changed
	last Delivery
	// changed is when this route last saw the global engine change.
	changed time.Time
}

// EngineSettle is the quiet time the route leaves after each change of the
// global engine before it makes another, or ends: IBus's own Wayland input
// method (ibus-ui-gtk3 --enable-wayland-im, what KWin runs for "IBus
// Wayland") answers each GlobalEngineChanged by asking for the global
// engine and aborts when the answer is not the engine the signal named
// (IBus 1.5.32, ibuswaylandim.c: the assertion in
// _bus_global_engine_changed_cb), so two changes closer together than that
// input method takes to answer the first kill it (seen here on KWin 6.3
// on a busy machine: a change 100 ms after another). The cost is this
// much after each text (outside GNOME: see Options.Settle).
const EngineSettle = 400 * time.Millisecond

// settle waits until Options.Settle has passed since the last change.
func (r *Route) settle(ctx context.Context) error {
	wait := time.Until(r.changed.Add(r.opt.Settle))
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// New returns a Route for the session opt describes.
func New(opt Options) *Route {
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	return &Route{opt: opt}
}

// Name is "ibus".
func (r *Route) Name() string { return Name }

// Log is the route's logger (Options.Log).
func (r *Route) Log() *slog.Logger { return r.opt.Log }

// Focus asks the daemon whether an input context has the focus
// (CurrentInputContext): FocusNone when none has, FocusUnknown when one
// has. Not FocusWindow: on GNOME Wayland the input context is the shell's
// own, focused whether or not a text field is (seen on GNOME 48 with no
// window at all), so IBus cannot tell a field from none. An error wraps
// ErrUnavailable when there is no IBus bus here.
func (r *Route) Focus(ctx context.Context) (Focus, error) {
	conn, err := r.dial(ctx, nil)
	if err != nil {
		return FocusUnknown, err
	}
	defer conn.Close()
	var path dbus.ObjectPath
	err = conn.Object(ibusService, ibusPath).CallWithContext(ctx, ibusIface+".CurrentInputContext", 0).Store(&path)
	var derr dbus.Error
	switch {
	case err == nil && path != "" && path != "/":
		return FocusUnknown, nil
	case err == nil, errors.As(err, &derr) && strings.Contains(strings.ToLower(fmt.Sprint(derr.Body...)), "no focused"):
		return FocusNone, nil
	case ctx.Err() != nil:
		return FocusUnknown, fmt.Errorf("ibus: focus: %w", ctx.Err())
	default:
		r.opt.Log.Debug("ibus focus unknown", "err", err)
		return FocusUnknown, nil
	}
}

// Running reports whether an IBus daemon answers at the session's address:
// the desktop runs IBus as its input-method framework (GNOME starts it
// itself).
func (r *Route) Running(ctx context.Context) bool {
	conn, err := r.dial(ctx, nil)
	if err != nil {
		return false
	}
	defer conn.Close()
	return conn.Object(ibusService, ibusPath).CallWithContext(ctx, "org.freedesktop.DBus.Peer.Ping", 0).Err == nil
}

// LastDelivery is what the last successful Type saw of its commit.
func (r *Route) LastDelivery() Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// Type commits typed into the focused field (see the package comment).
// Text that is empty or only spaces types nothing and is no error.
func (r *Route) Type(ctx context.Context, typed untrusted.TypedText) error {
	text := typed.Text()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := r.begin(ctx)
	if err != nil {
		return err
	}
	d, err := s.Commit(ctx, text)
	if err != nil {
		s.restoreAfterFailure(ctx)
		return err
	}
	if err := s.restore(ctx); err != nil {
		return err
	}
	r.last = d
	return nil
}

// Session is the route's engine made global, with the focus of a field
// that is not a password field, for preedit and commits; Close gives the
// previous engine back.
type Session struct {
	r      *Route
	conn   *dbus.Conn
	eng    *engine
	prev   string
	closed bool // conn is closed
	ended  bool // Close has run
	// engaged: SetGlobalEngine was asked for this engine.
	engaged bool
}

// Begin makes the route's engine global until Close, and waits for a
// field's focus (ErrNoTarget, ErrRefused, ErrUnavailable as for Type).
func (r *Route) Begin(ctx context.Context) (*Session, error) {
	r.mu.Lock()
	s, err := r.begin(ctx)
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	return s, nil
}

// Type ends the session with a text, as Route.Type types one: the
// preedit shown is taken away, the text committed in its place, and the
// previous engine given back; LastDelivery says what was seen of it.
// Text that is empty or only spaces commits nothing and only ends the
// session.
func (s *Session) Type(ctx context.Context, typed untrusted.TypedText) error {
	if s.ended {
		return fmt.Errorf("ibus: the session has ended: %w", ErrInterrupted)
	}
	text := typed.Text()
	fail := func(err error) error {
		s.ended = true
		defer s.r.mu.Unlock()
		s.restoreAfterFailure(ctx)
		return err
	}
	if err := s.Preedit(ctx, ""); err != nil {
		return fail(err)
	}
	d := Committed
	if strings.TrimSpace(text) != "" {
		var err error
		if d, err = s.Commit(ctx, text); err != nil {
			return fail(err)
		}
	}
	s.ended = true
	defer s.r.mu.Unlock()
	if err := s.restore(ctx); err != nil {
		return err
	}
	s.r.last = d
	return nil
}

// Close gives the previous global engine back and disconnects.
func (s *Session) Close(ctx context.Context) error {
	if s.ended {
		return nil
	}
	s.ended = true
	defer s.r.mu.Unlock()
	return s.restore(ctx)
}

func (r *Route) dial(ctx context.Context, in dbus.Interceptor) (*dbus.Conn, error) {
	addr, err := Address(r.opt.Environ, r.opt.MachineIDFiles...)
	if err != nil {
		return nil, fmt.Errorf("ibus: %w: %w", ErrUnavailable, err)
	}
	opts := []dbus.ConnOption{dbus.WithContext(ctx)}
	if in != nil {
		opts = append(opts, dbus.WithIncomingInterceptor(in))
	}
	conn, err := dbus.Connect(addr, opts...)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("ibus: connect: %w: %w", ErrUnavailable, ctx.Err())
		}
		return nil, fmt.Errorf("ibus: connect: %w: %w", ErrUnavailable, err)
	}
	return conn, nil
}

func (r *Route) begin(ctx context.Context) (*Session, error) {
	start := time.Now()
	eng := newEngine(r.opt.Log)
	conn, err := r.dial(ctx, eng.observe)
	if err != nil {
		return nil, err
	}
	s := &Session{r: r, conn: conn, eng: eng}
	fail := func(err error) (*Session, error) {
		s.restoreAfterFailure(ctx)
		return nil, err
	}
	if err := eng.export(conn); err != nil {
		return fail(fmt.Errorf("ibus: export the engine: %w: %w", ErrUnavailable, err))
	}
	bus := conn.Object(ibusService, ibusPath)
	if err := bus.CallWithContext(ctx, ibusIface+".RegisterComponent", 0, dbus.MakeVariant(component())).Err; err != nil {
		return fail(fmt.Errorf("ibus: RegisterComponent: %w: %w", ErrUnavailable, err))
	}
	// Flag 4 (DBUS_NAME_FLAG_DO_NOT_QUEUE): another YazSes engine of
	// this session (another process typing now) makes this one fail
	// rather than wait in a queue.
	var reply uint32
	if err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.RequestName", 0, componentName, uint32(4)).Store(&reply); err != nil {
		return fail(fmt.Errorf("ibus: RequestName: %w: %w", ErrUnavailable, err))
	}
	if reply != 1 { // DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER
		return fail(fmt.Errorf("ibus: another YazSes engine is typing in this session (RequestName %d): %w", reply, ErrUnavailable))
	}
	prev, err := globalEngine(ctx, bus)
	if err != nil {
		return fail(fmt.Errorf("ibus: the global engine: %w: %w", ErrUnavailable, err))
	}
	s.prev = prev
	r.opt.Log.Debug("ibus connected", "previous_engine", prev, "ms", time.Since(start).Milliseconds())

	if err := r.settle(ctx); err != nil {
		return fail(fmt.Errorf("ibus: %w: %w", ErrUnavailable, err))
	}
	// Asynchronously: the daemon calls CreateEngine on this connection
	// before it answers.
	s.engaged = true
	r.changed = time.Now()
	set := bus.GoWithContext(ctx, ibusIface+".SetGlobalEngine", 0, make(chan *dbus.Call, 1), EngineName)
	wait, cancel := context.WithTimeout(ctx, FocusWait)
	defer cancel()
	var setErr error
	setDone := set.Done
	for {
		st := eng.state()
		if st.focused && st.client != "fake" {
			break
		}
		select {
		case c := <-setDone:
			setDone = nil
			if c.Err != nil {
				setErr = c.Err
				return fail(fmt.Errorf("ibus: SetGlobalEngine: %w: %w", ErrUnavailable, setErr))
			}
			continue
		case <-eng.changed():
			continue
		case <-wait.Done():
		}
		if ctx.Err() != nil {
			return fail(fmt.Errorf("ibus: waiting for the focus: %w: %w", ErrUnavailable, ctx.Err()))
		}
		if !eng.state().created {
			return fail(fmt.Errorf("ibus: the daemon did not create the engine within %v: %w", FocusWait, ErrUnavailable))
		}
		return fail(fmt.Errorf("ibus: no text field took the focus within %v: %w", FocusWait, ErrNoTarget))
	}
	// Everything the daemon sent with the focus (the content type, the
	// capabilities, the surrounding text) is in once a call made after
	// it has its answer: the daemon's messages come in order.
	if err := s.barrier(ctx); err != nil {
		return fail(err)
	}
	st := eng.state()
	r.opt.Log.Debug("ibus focus", "client", st.client, "purpose", st.purpose, "hints", st.hints, "caps", st.caps, "ms", time.Since(start).Milliseconds())
	if st.purpose == PurposePassword || st.purpose == PurposePIN {
		return fail(fmt.Errorf("ibus: purpose %d: %w", st.purpose, ErrRefused))
	}
	return s, nil
}

// barrier makes a call to the daemon and waits for its answer.
func (s *Session) barrier(ctx context.Context) error {
	var out dbus.Variant
	if err := s.conn.Object(ibusService, ibusPath).CallWithContext(ctx, ibusIface+".Ping", 0, dbus.MakeVariant("")).Store(&out); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("ibus: %w: %w", ErrInterrupted, ctx.Err())
		}
		return fmt.Errorf("ibus: Ping: %w: %w", ErrInterrupted, err)
	}
	return nil
}

// Preedit shows text as the field's tentative text (cursor at its end);
// "" hides it.
func (s *Session) Preedit(ctx context.Context, text string) error {
	if text == "" {
		if err := s.conn.Emit(enginePath, engineIface+".UpdatePreeditText", dbus.MakeVariant(newText("")), uint32(0), false, uint32(0)); err != nil {
			return fmt.Errorf("ibus: UpdatePreeditText: %w: %w", ErrInterrupted, err)
		}
		if err := s.conn.Emit(enginePath, engineIface+".HidePreeditText"); err != nil {
			return fmt.Errorf("ibus: HidePreeditText: %w: %w", ErrInterrupted, err)
		}
		return s.barrier(ctx)
	}
	// Mode 0 (IBUS_ENGINE_PREEDIT_CLEAR): a focus change drops it.
	if err := s.conn.Emit(enginePath, engineIface+".UpdatePreeditText", dbus.MakeVariant(newText(text)), uint32(len([]rune(text))), true, uint32(0)); err != nil {
		return fmt.Errorf("ibus: UpdatePreeditText: %w: %w", ErrInterrupted, err)
	}
	return s.barrier(ctx)
}

// Commit commits text as one CommitText and says what it saw of it.
func (s *Session) Commit(ctx context.Context, text string) (Delivery, error) {
	st := s.eng.state()
	if st.purpose == PurposePassword || st.purpose == PurposePIN {
		return Committed, fmt.Errorf("ibus: purpose %d: %w", st.purpose, ErrRefused)
	}
	if !st.focused {
		return Committed, fmt.Errorf("ibus: the field lost the focus: %w", ErrNoTarget)
	}
	gen := st.surroundingGen
	if err := s.conn.Emit(enginePath, engineIface+".CommitText", dbus.MakeVariant(newText(text))); err != nil {
		return Committed, fmt.Errorf("ibus: CommitText: %w: %w", ErrInterrupted, err)
	}
	if err := s.barrier(ctx); err != nil {
		return Committed, err
	}
	if st.caps&CapSurroundingTxt == 0 {
		return Committed, nil
	}
	wait, cancel := context.WithTimeout(ctx, ConfirmWait)
	defer cancel()
	for {
		st := s.eng.state()
		if st.surroundingGen != gen && strings.HasSuffix(st.beforeCursor(), text) {
			s.r.opt.Log.Debug("ibus commit confirmed by the surrounding text")
			return Confirmed, nil
		}
		select {
		case <-s.eng.changed():
		case <-wait.Done():
			if ctx.Err() != nil {
				return Committed, fmt.Errorf("ibus: %w: %w", ErrInterrupted, ctx.Err())
			}
			return Committed, nil
		}
	}
}

// RestoreWait bounds giving the previous engine back.
const RestoreWait = 5 * time.Second

// restoreAfterFailure gives the previous engine back after a failure,
// even when ctx has ended (a bounded context of its own).
func (s *Session) restoreAfterFailure(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RestoreWait)
	defer cancel()
	if err := s.restore(rctx); err != nil {
		s.r.opt.Log.Debug("ibus restore failed", "err", err)
	}
}

// restore closes the engine's connection and gives the previous global
// engine back, from a connection of its own, once the daemon has seen the
// engine's go (the component's name without an owner): the daemon drops
// the global engine when the connection that registered the component
// closes, so an engine given back on that connection, or before the
// daemon saw it close, would be lost with it (seen with IBus 1.5.32: "No
// global engine" afterwards). It returns once the daemon says the engine
// is global (GlobalEngineChanged).
func (s *Session) restore(ctx context.Context) error {
	prev := s.prev
	if !s.engaged || prev == "" || prev == EngineName {
		s.close()
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, RestoreWait)
	defer cancel()
	// Quiet after the engine's own change while it is still the global
	// engine: an input method that asks for it now gets it (once the
	// engine's connection closes there is none until the previous one is
	// back, and IBus's Wayland input method aborts on none).
	if err := s.r.settle(ctx); err != nil {
		s.close()
		return fmt.Errorf("ibus: give the engine back: %w", err)
	}
	b, err := s.r.dial(ctx, nil)
	if err != nil {
		s.close()
		return fmt.Errorf("ibus: give the engine back: %w", err)
	}
	defer b.Close()
	signals := make(chan *dbus.Signal, 64)
	b.Signal(signals)
	for _, m := range [][]dbus.MatchOption{
		{dbus.WithMatchInterface("org.freedesktop.DBus"), dbus.WithMatchMember("NameOwnerChanged"), dbus.WithMatchArg(0, componentName)},
		{dbus.WithMatchInterface(ibusIface), dbus.WithMatchMember("GlobalEngineChanged")},
	} {
		if err := b.AddMatchSignalContext(ctx, m...); err != nil {
			s.close()
			return fmt.Errorf("ibus: give the engine back: AddMatch: %w", err)
		}
	}
	s.close()
	// The component's name is gone once the daemon has dealt with the
	// closed connection (asked after the match is in place: no race).
	var owned bool
	if err := b.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, componentName).Store(&owned); err != nil {
		return fmt.Errorf("ibus: give the engine back: NameHasOwner: %w", err)
	}
	for owned {
		select {
		case sig := <-signals:
			if sig.Name == "org.freedesktop.DBus.NameOwnerChanged" && len(sig.Body) == 3 && sig.Body[0] == componentName && sig.Body[2] == "" {
				owned = false
			}
			if sig.Name == ibusIface+".GlobalEngineChanged" {
				// The daemon's own change as the engine went.
				s.r.changed = time.Now()
			}
		case <-ctx.Done():
			return fmt.Errorf("ibus: give the engine back: waiting for the daemon to see the engine go: %w", ctx.Err())
		}
	}
	if err := s.r.settle(ctx); err != nil {
		return fmt.Errorf("ibus: give the engine back: %w", err)
	}
	bus := b.Object(ibusService, ibusPath)
	s.r.changed = time.Now()
	call := bus.GoWithContext(ctx, ibusIface+".SetGlobalEngine", 0, make(chan *dbus.Call, 1), prev)
	replied, changed := false, false
	for !replied || !changed {
		select {
		case c := <-call.Done:
			if c.Err != nil {
				return fmt.Errorf("ibus: give the engine back: %w", c.Err)
			}
			replied = true
			// The daemon announces no change to the engine it has
			// already (it may have gone back to it by itself when the
			// engine's connection closed).
			if name, err := globalEngine(ctx, bus); err == nil && name == prev {
				changed = true
			}
		case sig := <-signals:
			if sig.Name == ibusIface+".GlobalEngineChanged" && len(sig.Body) == 1 && sig.Body[0] == prev {
				changed = true
			}
		case <-ctx.Done():
			return fmt.Errorf("ibus: give the engine back: %w", ctx.Err())
		}
	}
	s.prev = ""
	// Quiet before the next change, which may be another process's (the
	// next yaz-type of a pipeline).
	s.r.changed = time.Now()
	if err := s.r.settle(ctx); err != nil {
		return fmt.Errorf("ibus: give the engine back: %w", err)
	}
	return nil
}

func (s *Session) close() {
	if !s.closed {
		s.closed = true
		s.conn.Close()
	}
}

// globalEngine is the name of the global engine ("" when none): the
// GlobalEngine property (IBus 1.5), else GetGlobalEngine.
func globalEngine(ctx context.Context, bus dbus.BusObject) (string, error) {
	var v dbus.Variant
	err := bus.CallWithContext(ctx, propsIface+".Get", 0, ibusIface, "GlobalEngine").Store(&v)
	if err != nil {
		err = bus.CallWithContext(ctx, ibusIface+".GetGlobalEngine", 0).Store(&v)
	}
	if err != nil {
		var derr dbus.Error
		if errors.As(err, &derr) && strings.Contains(strings.ToLower(fmt.Sprint(derr.Body...)), "no global engine") {
			return "", nil
		}
		return "", err
	}
	return engineDescName(v)
}
