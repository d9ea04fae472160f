package portal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/godbus/dbus/v5"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/wayland"
	"github.com/yazses/yazses/cmd/yaz-type/internal/xkb"
	"github.com/yazses/yazses/lib/bcast"
	"github.com/yazses/yazses/lib/untrusted"
	"github.com/yazses/yazses/lib/xdp"
)

// The RemoteDesktop portal's names and values.
const (
	rdIface      = "org.freedesktop.portal.RemoteDesktop"
	keysymMethod = rdIface + ".NotifyKeyboardKeysym"
	// deviceKeyboard is the KEYBOARD bit of types and devices.
	deviceKeyboard = 1
	// persistUntilRevoked is persist_mode 2: the desktop keeps the
	// consent until the person revokes it.
	persistUntilRevoked = 2
	// keyPressed and keyReleased are NotifyKeyboardKeysym's states.
	keyPressed  = 1
	keyReleased = 0
)

// NotifyConsent is the notification kind shown before the consent dialog.
const NotifyConsent = "portal_consent"

// Bounds.
const (
	// exchange bounds every exchange with the portal that shows no
	// dialog (a property, a session's creation, the keys of a text).
	exchange = 5 * time.Second
	// retryGap is the least time between two tries of a session.
	retryGap = time.Second
)

// The states of a session (Status.Session).
const (
	StateStarting    = "starting"    // asking the portal for a session
	StateAsking      = "asking"      // the consent dialog is open
	StateReady       = "ready"       // started with a keyboard: texts type
	StateRefused     = "refused"     // the dialog was cancelled: asked again only at the next start
	StateEnded       = "ended"       // the desktop ended it: asked again at the next dictation
	StateGone        = "gone"        // the portal went away: a new session when it is back
	StateUnavailable = "unavailable" // no session bus, or no RemoteDesktop portal with a keyboard
)

// Status is the portal session's state, for `yazsesd status`.
type Status struct {
	Session string // one of the states above; "" when none was prepared
	// Consent says whether the person's consent is stored, in words.
	Consent string
	// Cause says why the session is not ready ("" when it is).
	Cause string
}

// The compositor's keymap and the desktop's clipboard; tests replace them.
var (
	keymapSource = wayland.SeatKeymap
	newClipboard = func(o backend.Options) clipboard {
		return wayland.Selections{Env: o.Environ, Primary: true, Log: o.Log}
	}
)

// session is the Route's RemoteDesktop session, kept from Prepare to
// Close. A goroutine of its own (run) creates it, waits while it works,
// and makes a new one when the portal comes back or a dictation needs it.
type session struct {
	o backend.Options
	// ctx ends at Close; done is closed when run has ended.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	kick   chan struct{} // a dictation found no session: try now
	typing sync.Mutex    // one text at a time

	mu         sync.Mutex
	started    bool
	conn       *xdp.Conn
	handle     dbus.ObjectPath // the session; "" while none is started
	lost       chan struct{}   // closed when the desktop closes handle
	owner      string          // the portal that started handle
	triedOwner string          // the portal last tried
	version    uint32
	status     Status
	changed    bcast.Signal

	// The portal's clipboard in the session (portalclip.go): clip when
	// the desktop gave it; what the session offers on it (serving, while
	// owning); fetches counts the windows that fetched it.
	clip      bool
	clipAsked bool // the portal has a clipboard: it was asked for
	otherText bool // another window owns the clipboard, with text
	serving   []byte
	owning    bool
	// confirmed: the portal said the session owns the clipboard since
	// the last offer (a SelectionOwnerChanged with session_is_owner).
	confirmed bool
	// ownerHeard is closed at the first SelectionOwnerChanged of the
	// session; clipReady is when the clipboard was given.
	ownerHeard chan struct{}
	clipReady  time.Time
	fetches    uint64
	served     time.Time // when a fetch of the offer was last served
	fetched    bcast.Signal
	transfers  chan transfer
}

func newSession(o backend.Options) *session {
	ctx, cancel := context.WithCancel(context.Background())
	return &session{o: o, ctx: ctx, cancel: cancel, done: make(chan struct{}), kick: make(chan struct{}, 1),
		transfers: make(chan transfer, 16), ownerHeard: make(chan struct{})}
}

// begin starts the session's goroutine once.
func (s *session) begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		s.started = true
		go s.run()
	}
}

// end closes the session (the portal's Session.Close) and waits for its
// goroutine.
func (s *session) end() {
	s.cancel()
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if started {
		<-s.done
	}
}

// Route is the "portal" backend: keys through the RemoteDesktop portal of
// its session bus (see the package comment). It holds one session, which
// Prepare starts (or its first text) and Close ends; the consent the
// desktop keeps for it is the restore token in Options.StateDir.
type Route struct {
	o  backend.Options
	mu sync.Mutex
	s  *session // never nil; a new one after Close
}

// New returns the "portal" backend of o's session bus. Nothing starts
// until Prepare or its first text.
func New(o backend.Options) *Route {
	o = o.WithDefaults()
	return &Route{o: o, s: newSession(o)}
}

// session is the Route's current session.
func (r *Route) session() *session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.s
}

// Prepare starts the session in the background: the portal's consent
// dialog appears now (the daemon calls it when it starts, while the
// person is setting up), after a notification of kind NotifyConsent that
// says why. A restore token kept in Options.StateDir lets the desktop skip
// the dialog. Close ends it.
func (r *Route) Prepare() { r.session().begin() }

// State is the session's state.
func (r *Route) State() Status {
	s := r.session()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Settle starts the session (as Prepare) and waits while it is starting
// or its consent dialog is open: for a program that types one text and
// ends (yaz-type in a pipeline), which has nothing to type with before
// the person answers. It returns the state it came to, or the state when
// ctx ended.
func (r *Route) Settle(ctx context.Context) Status {
	r.Prepare()
	for {
		changed := r.Changes()
		st := r.State()
		switch st.Session {
		case "", StateStarting, StateAsking:
		default:
			return st
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return r.State()
		}
	}
}

// Changes returns a channel closed at the next change of the session's
// state.
func (r *Route) Changes() <-chan struct{} { return r.session().changed.C() }

// Close closes the session (the portal's Session.Close, so the desktop
// stops showing that the daemon may type) and waits for its goroutine.
// The restore token stays in the state folder. A later Prepare or text
// starts a new session.
func (r *Route) Close() {
	r.mu.Lock()
	s := r.s
	r.s = newSession(r.o)
	r.mu.Unlock()
	s.end()
}

// Offers reports whether the session bus of env has a RemoteDesktop portal
// that offers a keyboard; known is false when there is no bus to ask.
// Bounded by a few seconds.
func Offers(ctx context.Context, env []string) (offers, known bool) {
	ctx, cancel := context.WithTimeout(ctx, exchange)
	defer cancel()
	c, err := xdp.Dial(ctx, env, nil)
	if err != nil {
		return false, false
	}
	defer c.Close()
	_, err = keyboardPortal(ctx, c)
	switch {
	case err == nil:
		return true, true
	case errors.Is(err, xdp.ErrNoPortal):
		return false, true
	}
	return false, false
}

// keyboardPortal is the RemoteDesktop version, when the portal has one
// with a keyboard.
func keyboardPortal(ctx context.Context, c *xdp.Conn) (uint32, error) {
	ver, err := c.Version(ctx, rdIface)
	if err != nil {
		return 0, err
	}
	v, err := c.Property(ctx, rdIface, "AvailableDeviceTypes")
	if err != nil {
		return 0, err
	}
	if types, _ := v.Value().(uint32); types&deviceKeyboard == 0 {
		return 0, fmt.Errorf("the RemoteDesktop portal offers no keyboard (device types %d): %w", types, xdp.ErrNoPortal)
	}
	return ver, nil
}

func (s *session) set(state, cause, consent string) {
	s.mu.Lock()
	s.status = Status{Session: state, Cause: cause, Consent: consent}
	s.mu.Unlock()
	s.changed.Broadcast()
	s.o.Log.Debug("portal session", "state", state, "cause", cause)
}

// run keeps a session until Close.
func (s *session) run() {
	defer close(s.done)
	served := make(chan struct{})
	go func() {
		defer close(served)
		s.serveTransfers()
	}()
	defer func() { <-served }()
	defer s.shutdown()
	for {
		tried := time.Now()
		err := s.establish()
		if s.ctx.Err() != nil {
			return
		}
		switch {
		case err == nil:
			s.waitLost()
		case errors.Is(err, xdp.ErrRefused):
			// The person said no: not asked again until the next start.
			<-s.ctx.Done()
			return
		}
		if s.ctx.Err() != nil || !s.waitRetry(tried) {
			return
		}
	}
}

// establish dials when needed and starts a session: CreateSession,
// SelectDevices (a keyboard; where the portal can keep consent, persist
// until revoked, with the restore token kept from the last time), a
// notification, Start (the consent dialog: as long as the person takes).
func (s *session) establish() error {
	ctx := s.ctx
	s.set(StateStarting, "", "")
	s.mu.Lock()
	s.clip, s.clipAsked, s.serving, s.owning, s.otherText, s.confirmed = false, false, nil, false, false, false
	s.ownerHeard = make(chan struct{})
	s.mu.Unlock()
	conn, err := s.dial()
	if err != nil {
		s.set(StateUnavailable, "no session bus to reach the desktop portal: "+err.Error(), "")
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, exchange)
	ver, err := keyboardPortal(pctx, conn)
	cancel()
	owner, _ := conn.Owner()
	s.mu.Lock()
	s.triedOwner, s.version = owner, ver
	s.mu.Unlock()
	if err != nil {
		s.set(StateUnavailable, "no RemoteDesktop portal with a keyboard on this desktop (xdg-desktop-portal with the desktop's backend: -gnome, -kde): "+err.Error(), "")
		return err
	}
	pctx, cancel = context.WithTimeout(ctx, exchange)
	res, err := conn.Request(pctx, rdIface+".CreateSession", map[string]dbus.Variant{
		"session_handle_token": dbus.MakeVariant(conn.Token("s")),
	})
	cancel()
	if err != nil {
		return s.failed(err, "the portal did not create a session")
	}
	handle := sessionHandle(res)
	if handle == "" {
		return s.failed(xdp.ErrEnded, "the portal created a session without a handle")
	}
	s.mu.Lock()
	s.handle, s.lost = "", make(chan struct{})
	pending := handle
	s.mu.Unlock()
	sel := map[string]dbus.Variant{"types": dbus.MakeVariant(uint32(deviceKeyboard))}
	token := ""
	if ver >= 2 {
		sel["persist_mode"] = dbus.MakeVariant(uint32(persistUntilRevoked))
		if token = readToken(s.o); token != "" {
			sel["restore_token"] = dbus.MakeVariant(token)
		}
	}
	pctx, cancel = context.WithTimeout(ctx, exchange)
	_, err = conn.Request(pctx, rdIface+".SelectDevices", sel, pending)
	cancel()
	if err != nil {
		s.closeSession(conn, pending)
		return s.failed(err, "the portal refused the keyboard")
	}
	// The clipboard is asked for before Start, which grants it with the
	// keyboard (or not: Start's clipboard_enabled).
	clip := s.requestClipboard(conn, pending)
	if token == "" {
		s.set(StateAsking, "the desktop's remote-desktop dialog is open: allow it so that dictation can type", consentWaiting)
		if s.o.Notify != nil {
			s.o.Notify(NotifyConsent)
		}
	}
	s.mu.Lock()
	s.handle = pending // Closed from now on ends it
	s.mu.Unlock()
	res, err = conn.Request(ctx, rdIface+".Start", map[string]dbus.Variant{}, pending, "")
	if err != nil {
		s.mu.Lock()
		s.handle = ""
		s.mu.Unlock()
		if errors.Is(err, xdp.ErrRefused) {
			if token != "" {
				removeToken(s.o) // refused after all: the token is worth nothing
			}
			s.set(StateRefused, "the desktop's remote-desktop dialog was refused: dictation cannot type here; restart yazsesd to be asked again", consentRefused)
			return err
		}
		s.closeSession(conn, pending)
		return s.failed(err, "the portal did not start the session")
	}
	if devices, _ := res["devices"].Value().(uint32); devices&deviceKeyboard == 0 {
		s.closeSession(conn, pending)
		s.mu.Lock()
		s.handle = ""
		s.mu.Unlock()
		s.set(StateRefused, "the desktop granted no keyboard: dictation cannot type here; restart yazsesd to be asked again", consentRefused)
		return fmt.Errorf("start: no keyboard granted: %w", xdp.ErrRefused)
	}
	enabled, _ := res["clipboard_enabled"].Value().(bool)
	s.mu.Lock()
	s.clip, s.clipAsked, s.clipReady = clip && enabled, clip, time.Now()
	s.mu.Unlock()
	s.o.Log.Debug("portal: clipboard", "requested", clip, "enabled", enabled)
	consent := consentEachStart
	if ver >= 2 {
		consent = consentNotStored
		if rt, _ := res["restore_token"].Value().(string); rt != "" {
			if err := writeToken(s.o, rt); err != nil {
				s.o.Log.Warn("portal: the restore token could not be kept: the desktop will ask again at the next start", "err", err)
			} else {
				consent = consentStored + " (" + tokenPath(s.o) + ")"
			}
		}
	}
	owner, _ = conn.Owner()
	s.mu.Lock()
	s.owner = owner
	s.mu.Unlock()
	s.set(StateReady, "", consent)
	return nil
}

// Consent in words.
const (
	consentWaiting   = "not yet: the desktop's dialog is open"
	consentRefused   = "refused in the desktop's dialog: restart yazsesd to be asked again"
	consentEachStart = "asked at each start: this desktop's portal (RemoteDesktop version 1) cannot keep it"
	consentNotStored = "not stored: the desktop gave no restore token, so it asks at each start"
	consentStored    = "stored: the desktop restores it at the next start without asking"
)

// failed sets the state after a failed step and returns err.
func (s *session) failed(err error, what string) error {
	switch {
	case errors.Is(err, xdp.ErrGone):
		s.set(StateGone, "the desktop portal went away: "+what, "")
	case errors.Is(err, xdp.ErrNoPortal), errors.Is(err, xdp.ErrNoBus):
		s.set(StateUnavailable, what+": "+err.Error(), "")
	default:
		s.set(StateUnavailable, what+": "+err.Error(), "")
	}
	return err
}

// sessionHandle is the session_handle of CreateSession's results (a
// string in xdg-desktop-portal 1.16, an object path in the spec).
func sessionHandle(res map[string]dbus.Variant) dbus.ObjectPath {
	switch v := res["session_handle"].Value().(type) {
	case string:
		if dbus.ObjectPath(v).IsValid() {
			return dbus.ObjectPath(v)
		}
	case dbus.ObjectPath:
		return v
	}
	return ""
}

// dial returns the bus connection, dialling one (and watching its
// sessions' Closed signals) when there is none or the last one ended.
func (s *session) dial() (*xdp.Conn, error) {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c != nil {
		if _, ok := c.Owner(); ok {
			return c, nil
		}
		c.Close()
	}
	c, err := xdp.Dial(s.ctx, s.o.Environ, s.o.Log)
	if err != nil {
		s.mu.Lock()
		s.conn = nil
		s.mu.Unlock()
		return nil, err
	}
	// Who asks, before any other call (the portal takes it only then).
	rctx, cancel := context.WithTimeout(s.ctx, exchange)
	err = c.Register(rctx, xdp.AppID)
	cancel()
	if err != nil && !errors.Is(err, xdp.ErrNoRegistry) {
		s.o.Log.Warn("portal: the desktop portal did not take YazSes's application id", "err", err)
	}
	c.Subscribe(transferSignal, s.onTransfer)
	c.Subscribe(ownerSignal, s.onOwner)
	for _, member := range []string{"SelectionTransfer", "SelectionOwnerChanged"} {
		if err := c.AddMatch(s.ctx, clipIface, member); err != nil {
			s.o.Log.Debug("portal: no match for the clipboard's signals", "member", member, "err", err)
		}
	}
	c.Subscribe(xdp.SessionIface+".Closed", func(sig *dbus.Signal) {
		s.mu.Lock()
		if sig.Path == s.handle && s.lost != nil {
			close(s.lost)
			s.lost = nil
		}
		s.mu.Unlock()
	})
	s.mu.Lock()
	s.conn = c
	s.mu.Unlock()
	return c, nil
}

// waitLost returns when the started session ends: the desktop closed it,
// or the portal left the bus.
func (s *session) waitLost() {
	for {
		s.mu.Lock()
		conn, lost, owner := s.conn, s.lost, s.owner
		s.mu.Unlock()
		changed := conn.Changed()
		if now, ok := conn.Owner(); !ok || now != owner {
			s.lose(StateGone, "the desktop portal went away; a new session is asked for when it is back")
			return
		}
		if lost == nil {
			s.lose(StateEnded, "the desktop ended the remote-desktop session; it is asked for again at the next dictation")
			return
		}
		select {
		case <-s.ctx.Done():
			return
		case <-lost:
		case <-changed:
		}
	}
}

func (s *session) lose(state, cause string) {
	s.mu.Lock()
	s.handle, s.lost = "", nil
	s.mu.Unlock()
	s.set(state, cause, "")
}

// waitRetry waits for a reason to try again: a portal that was not tried
// yet owns its name on the bus (it came back, or was started), or a
// dictation asks (kick). It returns false when Close ends the session. A
// try follows the last one by retryGap at least.
func (s *session) waitRetry(last time.Time) bool {
	for {
		s.mu.Lock()
		conn, tried, state := s.conn, s.triedOwner, s.status.Session
		s.mu.Unlock()
		var changed <-chan struct{}
		if conn != nil {
			changed = conn.Changed()
			owner, ok := conn.Owner()
			if !ok {
				conn.Close()
				s.mu.Lock()
				s.conn = nil
				s.mu.Unlock()
				continue
			}
			if owner != "" && owner != tried && state != StateEnded {
				return s.pause(last)
			}
		}
		select {
		case <-s.ctx.Done():
			return false
		case <-s.kick:
			return s.pause(last)
		case <-changed:
		}
	}
}

func (s *session) pause(last time.Time) bool {
	t := time.NewTimer(time.Until(last.Add(retryGap)))
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// nudge asks run to try again now, where a try could help.
func (s *session) nudge() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *session) closeSession(conn *xdp.Conn, handle dbus.ObjectPath) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), exchange)
	defer cancel()
	_ = conn.CallObject(ctx, handle, xdp.SessionIface+".Close")
}

// shutdown closes the started session and the connection (Close).
func (s *session) shutdown() {
	s.mu.Lock()
	conn, handle := s.conn, s.handle
	s.conn, s.handle = nil, ""
	s.mu.Unlock()
	if conn == nil {
		return
	}
	if handle != "" {
		if d := s.linger(); d > 0 {
			t := time.NewTimer(d)
			<-t.C
		}
		s.closeSession(conn, handle)
	}
	conn.Close()
}

// ready returns the started session, or why there is none.
func (s *session) ready() (*xdp.Conn, dbus.ObjectPath, Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status.Session == StateReady && s.handle != "" {
		return s.conn, s.handle, s.status
	}
	return nil, "", s.status
}

func (r *Route) Name() string { return backend.Portal }

// Focus is unknown: the portal does not say which window has the focus;
// the compositor delivers the keys to the focused one only.
func (r *Route) Focus(context.Context) (backend.Focus, error) {
	return backend.FocusUnknown, nil
}

func (r *Route) Type(ctx context.Context, typed untrusted.TypedText) error {
	text := typed.Text()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if err := backend.CheckFocus(ctx, r, r.o.RequireFocus, r.o.Log); err != nil {
		return err
	}
	s := r.session()
	s.begin()
	s.typing.Lock()
	defer s.typing.Unlock()
	conn, handle, st := s.ready()
	if conn == nil {
		switch st.Session {
		case StateEnded, StateGone, StateUnavailable:
			s.nudge()
		}
		why := st.Cause
		if why == "" {
			why = "the remote-desktop session is not started yet"
		}
		return fmt.Errorf("portal: %s: %w", why, backend.ErrUnavailable)
	}
	start := time.Now()
	km, kerr := r.keymap(ctx)
	long := r.o.PasteOverChars > 0 && utf8.RuneCountInString(text) > r.o.PasteOverChars
	if kerr != nil {
		r.o.Log.Debug("portal: the compositor's keymap cannot be read: the text is pasted", "err", kerr)
	} else if keys, ok := km.Plan(text); ok && !long {
		locked := capsLocked(ledDir)
		if !locked || km.Everywhere(xkb.CapsLock, 0) {
			err := r.typeKeys(ctx, conn, handle, keys, locked)
			r.o.Log.Debug("portal: typed", "runes", len(keys), "caps_lock", locked, "took", time.Since(start), "err", err)
			return err
		}
		r.o.Log.Debug("portal: Caps Lock is on and the keymap has no Caps_Lock key to turn it off: the text is pasted")
	}
	s.mu.Lock()
	clip, asked := s.clip, s.clipAsked
	s.mu.Unlock()
	switch {
	case clip:
		return r.pastePortal(ctx, s, conn, handle, km, text)
	case asked:
		// A desktop whose portal has a clipboard (GNOME) need not offer
		// one to other clients (GNOME has no data control): the text is
		// left to the next route (IBus), typed by none here.
		return fmt.Errorf("portal: the desktop gave the session no clipboard (its dialog's clipboard switch was off) to paste what the keymap lacks: %w", backend.ErrUnavailable)
	}
	return r.paste(ctx, conn, handle, km, text)
}

// typeKeys types keys. Caps Lock on (locked) would change the case of
// every letter: mutter presses the key of a keysym, with Shift for its
// second level, and leaves the lock as it is (so "Hello" arrives as
// "hELLO"). Then Caps_Lock is pressed once before the keys, to turn it
// off, and once after them, to turn it on again, even when typing stops
// part way (as the X11 backend does).
func (r *Route) typeKeys(ctx context.Context, conn *xdp.Conn, handle dbus.ObjectPath, keys []uint32, locked bool) error {
	if !locked {
		return r.keys(ctx, conn, handle, keys)
	}
	if err := r.keys(ctx, conn, handle, []uint32{xkb.CapsLock}); err != nil {
		return err
	}
	err := r.keys(ctx, conn, handle, keys)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exchange)
	defer cancel()
	if rerr := r.keys(rctx, conn, handle, []uint32{xkb.CapsLock}); rerr != nil {
		r.o.Log.Warn("portal: Caps Lock was turned off to type and could not be turned on again", "err", rerr)
	}
	return err
}

// keymap reads and parses the compositor's keymap (a few milliseconds:
// read at each text, so that a layout the person adds counts at once).
func (r *Route) keymap(ctx context.Context) (*xkb.Keymap, error) {
	kctx, cancel := context.WithTimeout(ctx, exchange)
	defer cancel()
	text, err := keymapSource(kctx, r.o.Environ)
	if err != nil {
		return nil, err
	}
	return xkb.Parse(text)
}

// keys sends a press and a release of each keysym, one call after the
// other: xdg-desktop-portal handles each call on a thread of a pool, so
// calls in flight together reach the desktop in any order (seen with the
// real frontend: "Grüße" arrived as "Gürße"), and a call's answer means
// the frontend has passed the key on, in order. The portal has taken
// every key when it returns nil. Nothing taken is ErrUnavailable
// (another backend may type the text); part of it ErrInterrupted. Every
// call is bounded.
func (r *Route) keys(ctx context.Context, conn *xdp.Conn, handle dbus.ObjectPath, keys []uint32) error {
	none := map[string]dbus.Variant{}
	for i, ks := range keys {
		for _, state := range []uint32{keyPressed, keyReleased} {
			kctx, cancel := context.WithTimeout(ctx, exchange)
			err := conn.Call(kctx, keysymMethod, handle, none, int32(ks), state)
			cancel()
			switch {
			case err == nil:
			case i == 0 && state == keyPressed:
				return fmt.Errorf("portal: %w: %w", backend.ErrUnavailable, err)
			default:
				return fmt.Errorf("portal: %d of %d keys taken: %w: %w", i, len(keys), backend.ErrInterrupted, err)
			}
		}
	}
	return nil
}

// paste puts text on the clipboard and in the primary selection, presses
// Shift+Insert (what GTK, Qt, VTE and Konsole windows, browsers and
// LibreOffice paste with as installed: GTK and Qt from the clipboard,
// terminals from the primary selection, which holds the same), waits
// o.RestoreDelay for the window to fetch it and puts back what both held.
// Whether the window took it cannot be seen: ErrPasted.
func (r *Route) paste(ctx context.Context, conn *xdp.Conn, handle dbus.ObjectPath, km *xkb.Keymap, text string) error {
	if km != nil && (!km.Everywhere(xkb.ShiftL, 0) || !km.Everywhere(xkb.Insert, 0)) {
		return fmt.Errorf("portal: the keymap has no Shift_L or Insert to paste with: %w", backend.ErrUnavailable)
	}
	restore, err := newClipboard(r.o).Put(ctx, text)
	if err != nil {
		return fmt.Errorf("portal: set the clipboard: %w: %w", backend.ErrUnavailable, err)
	}
	chord := r.chord(ctx, conn, handle, xkb.ShiftL, xkb.Insert)
	if chord == nil {
		// The window fetches the text after it sees the chord.
		wait(ctx, r.o.RestoreDelay)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exchange)
	defer cancel()
	if err := restore(rctx); err != nil {
		r.o.Log.Warn("portal: the clipboard was not put back", "err", err)
	}
	if chord != nil {
		return chord
	}
	return fmt.Errorf("portal: %w", backend.ErrPasted)
}

// chord presses mod and key, and releases them (Shift+Insert, Ctrl+V).
func (r *Route) chord(ctx context.Context, conn *xdp.Conn, handle dbus.ObjectPath, mod, key uint32) error {
	cctx, cancel := context.WithTimeout(ctx, exchange)
	defer cancel()
	none := map[string]dbus.Variant{}
	steps := []struct {
		ks    uint32
		state uint32
	}{{mod, keyPressed}, {key, keyPressed}, {key, keyReleased}, {mod, keyReleased}}
	for i, st := range steps {
		if err := conn.Call(cctx, keysymMethod, handle, none, int32(st.ks), st.state); err != nil {
			if i == 0 {
				return fmt.Errorf("portal: paste chord: %w: %w", backend.ErrUnavailable, err)
			}
			return fmt.Errorf("portal: paste chord: %w: %w", backend.ErrInterrupted, err)
		}
	}
	return nil
}
