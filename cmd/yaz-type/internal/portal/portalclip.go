package portal

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/xkb"
	"github.com/yazses/yazses/lib/xdp"
)

// The Clipboard portal's names (org.freedesktop.portal.Clipboard, served
// in a RemoteDesktop session: xdg-desktop-portal 1.17 and later, with
// xdg-desktop-portal-gnome's backend over mutter's own clipboard).
const (
	clipIface      = "org.freedesktop.portal.Clipboard"
	transferSignal = clipIface + ".SelectionTransfer"
	ownerSignal    = clipIface + ".SelectionOwnerChanged"
	ksV            = 0x76
	// maxClip bounds what is read back of the clipboard before a paste,
	// to put it back after.
	maxClip = 16 << 20
)

// textTypes are the types the route offers its text in: what GTK, Qt
// and X11 clients (through Xwayland) ask for.
var textTypes = []string{"text/plain;charset=utf-8", "UTF8_STRING", "text/plain", "STRING", "TEXT"}

// transfer is one SelectionTransfer: a window pastes what the session
// offers, and waits for it on the pipe SelectionWrite returns.
type transfer struct {
	handle   dbus.ObjectPath
	mimeType string
	serial   uint32
}

// requestClipboard asks for the session's clipboard (RequestClipboard,
// before Start: the desktop's dialog then shows it among what is
// shared). false when the portal has no Clipboard interface or refuses.
func (s *session) requestClipboard(conn *xdp.Conn, handle dbus.ObjectPath) bool {
	ctx, cancel := context.WithTimeout(s.ctx, exchange)
	defer cancel()
	if _, err := conn.Version(ctx, clipIface); err != nil {
		s.o.Log.Debug("portal: no clipboard portal", "err", err)
		return false
	}
	if err := conn.Call(ctx, clipIface+".RequestClipboard", handle, map[string]dbus.Variant{}); err != nil {
		s.o.Log.Debug("portal: the clipboard was not given", "err", err)
		return false
	}
	return true
}

// onTransfer is the SelectionTransfer handler, on the connection's
// dispatcher: it hands the transfer to serveTransfers.
func (s *session) onTransfer(sig *dbus.Signal) {
	var tr transfer
	if len(sig.Body) != 3 {
		return
	}
	tr.handle, _ = sig.Body[0].(dbus.ObjectPath)
	tr.mimeType, _ = sig.Body[1].(string)
	tr.serial, _ = sig.Body[2].(uint32)
	select {
	case s.transfers <- tr:
	default:
		s.o.Log.Warn("portal: a paste request was dropped: too many at once")
	}
}

// onOwner is the SelectionOwnerChanged handler, on the connection's
// dispatcher: it keeps whether another window owns the clipboard with
// text (what a paste reads first, to put it back after). mutter tells a
// session the owner when its clipboard is enabled (where there is one)
// and at each change.
//
// An offer stands until the portal has said the session owns the
// clipboard and then that another owner took it: a signal saying
// another window owns it that comes before the one for the offer was
// sent before the offer took effect. mutter's first signal, for the
// owner when the clipboard was enabled, comes through the portal after
// the session's start, and can come after the first paste's offer (seen
// on the desk under load: the offer was dropped, the window's two
// fetches got nothing, and the paste failed after 5 s).
func (s *session) onOwner(sig *dbus.Signal) {
	if len(sig.Body) != 2 {
		return
	}
	handle, _ := sig.Body[0].(dbus.ObjectPath)
	opts, _ := sig.Body[1].(map[string]dbus.Variant)
	types := mimeTypes(opts["mime_types"].Value())
	own, _ := opts["session_is_owner"].Value().(bool)
	text := false
	for _, t := range types {
		if t == textTypes[0] || t == "text/plain" || t == "UTF8_STRING" {
			text = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if handle != s.handle {
		return
	}
	stale := !own && s.owning && !s.confirmed
	s.o.Log.Debug("portal: the clipboard's owner changed", "text", text, "session_is_owner", own, "types", len(types), "before_the_offer", stale)
	select {
	case <-s.ownerHeard:
	default:
		close(s.ownerHeard)
	}
	switch {
	case own:
		s.confirmed = true
	case stale:
		// What the clipboard held before the offer: the offer stands.
		s.otherText = text
	default:
		s.otherText = text
		s.serving, s.owning, s.confirmed = nil, false, false
	}
}

// mimeTypes are the types of a SelectionOwnerChanged: an array of
// strings as the portal's documentation has it, or that array in a
// structure, as xdg-desktop-portal-gnome 48 sends it ("(as)", seen on
// the desk).
func mimeTypes(v any) []string {
	switch t := v.(type) {
	case []string:
		return t
	case []any:
		if len(t) == 1 {
			s, _ := t[0].([]string)
			return s
		}
	}
	return nil
}

// serveTransfers writes what the session offers on the clipboard to each
// window that pastes it, until Close.
func (s *session) serveTransfers() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case tr := <-s.transfers:
			s.serveTransfer(tr)
		}
	}
}

// serveTransfer answers one transfer: SelectionWrite gives the pipe the
// window reads, the text goes into it, SelectionWriteDone says how it
// went.
func (s *session) serveTransfer(tr transfer) {
	s.mu.Lock()
	conn, handle := s.conn, s.handle
	s.mu.Unlock()
	data, owning := s.offered()
	if conn == nil || handle == "" || handle != tr.handle {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, exchange)
	defer cancel()
	f, err := conn.CallFD(ctx, clipIface+".SelectionWrite", handle, tr.serial)
	if err != nil {
		s.o.Log.Debug("portal: SelectionWrite", "err", err)
		return
	}
	ok := owning
	if owning {
		if dl, has := ctx.Deadline(); has {
			_ = f.SetWriteDeadline(dl)
		}
		if _, err := f.Write(data); err != nil {
			s.o.Log.Debug("portal: write the pasted text", "err", err)
			ok = false
		}
	}
	if err := f.Close(); err != nil {
		ok = false
	}
	if err := conn.Call(ctx, clipIface+".SelectionWriteDone", handle, tr.serial, ok); err != nil {
		s.o.Log.Debug("portal: SelectionWriteDone", "err", err)
	}
	s.o.Log.Debug("portal: clipboard fetched", "type", tr.mimeType, "bytes", len(data), "ok", ok)
	if ok {
		s.mu.Lock()
		s.fetches++
		s.served = time.Now()
		s.mu.Unlock()
		s.fetched.Broadcast()
	}
}

// clipboardText is what the clipboard holds as text, to put back after a
// paste: what the session offers itself when it owns the clipboard, else
// what SelectionRead gives when the portal said that another window owns
// it with text (had is false when no window owns it, or it holds no
// text, or the portal did not say). SelectionRead is not tried
// otherwise: xdg-desktop-portal-gnome 48 exits when mutter answers it
// with no owner (seen on the desk: NoReply, then a new backend without
// the session), which would end every session of the desktop.
func (s *session) clipboardText(ctx context.Context, conn *xdp.Conn, handle dbus.ObjectPath) (text []byte, had bool) {
	s.heardOwner(ctx)
	s.mu.Lock()
	data, owning, other := s.serving, s.owning, s.otherText
	s.mu.Unlock()
	if owning {
		return data, true
	}
	if !other {
		return nil, false
	}
	rctx, cancel := context.WithTimeout(ctx, exchange)
	defer cancel()
	f, err := conn.CallFD(rctx, clipIface+".SelectionRead", handle, textTypes[0])
	if err != nil {
		s.o.Log.Debug("portal: the clipboard holds nothing to read", "err", err)
		return nil, false
	}
	defer f.Close()
	if dl, ok := rctx.Deadline(); ok {
		_ = f.SetReadDeadline(dl)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxClip+1))
	if err != nil || len(b) > maxClip || len(b) == 0 {
		s.o.Log.Debug("portal: the clipboard's text was not read", "bytes", len(b), "err", err)
		return nil, false
	}
	return b, true
}

// ownerGrace bounds how long after the clipboard was given a paste waits
// for mutter's first SelectionOwnerChanged (the owner when it was
// enabled), to know what to put back. None comes where nothing owns the
// clipboard; where one does it came within milliseconds on the desk.
const ownerGrace = 300 * time.Millisecond

// heardOwner waits until the portal has said who owned the clipboard
// when the session got it, or until ownerGrace after that, or ctx.
func (s *session) heardOwner(ctx context.Context) {
	s.mu.Lock()
	heard, since := s.ownerHeard, time.Since(s.clipReady)
	s.mu.Unlock()
	if since >= ownerGrace {
		return
	}
	t := time.NewTimer(ownerGrace - since)
	defer t.Stop()
	select {
	case <-heard:
	case <-t.C:
	case <-ctx.Done():
	}
}

// offer makes the session the clipboard's owner with data (SetSelection
// with the text types), or gives the clipboard up (nil: SetSelection
// without types, which mutter takes as no owner).
func (s *session) offer(ctx context.Context, conn *xdp.Conn, handle dbus.ObjectPath, data []byte, own bool) error {
	s.offering(data, own)
	opts := map[string]dbus.Variant{}
	if own {
		opts["mime_types"] = dbus.MakeVariant(textTypes)
	}
	cctx, cancel := context.WithTimeout(ctx, exchange)
	defer cancel()
	if err := conn.Call(cctx, clipIface+".SetSelection", handle, opts); err != nil {
		s.offering(nil, false)
		return err
	}
	return nil
}

// clipLinger is how long a session that owns the clipboard stays after a
// window (or mutter's clipboard manager) fetched its offer, before it
// closes. mutter's clipboard manager keeps a copy of each new owner's
// text to own the clipboard when that owner goes, but only once its
// fetch has finished in mutter's main loop: a session closed before that
// leaves the clipboard empty (seen on the desk under load: yaz-type put
// the person's copy back, ended, and Ctrl+V then pasted nothing). There
// is no word from mutter when it has the copy.
const clipLinger = 300 * time.Millisecond

// linger is how long the session should still live so that what it
// offers outlives it: clipLinger after its last served fetch, while it
// owns the clipboard.
func (s *session) linger() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.owning || s.served.IsZero() {
		return 0
	}
	return max(0, clipLinger-time.Since(s.served))
}

// offering is what the session serves from now on: data while own, until
// the portal says another window took the clipboard after the offer.
func (s *session) offering(data []byte, own bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serving, s.owning, s.confirmed = data, own, false
}

// offered is what the session serves a window that fetches now: the
// offer, and whether there is one.
func (s *session) offered() ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.serving, s.owning
}

// pastePortal pastes text through the session's own clipboard: the text
// is offered on the clipboard, Ctrl+V is pressed through the session's
// keyboard, and the route serves every fetch (a SelectionTransfer) while
// it waits; then the clipboard gets back the text it held, where the
// route knows it.
//
// Where it does not, the pasted text stays on the clipboard: the route
// learns the owner from SelectionOwnerChanged (mutter sends the current
// one as the session's clipboard is enabled, and each change after), and
// reads the owner's text only when that said there is one: a
// SelectionRead with no owner makes xdg-desktop-portal-gnome 48 exit
// (seen on the desk: NoReply, then a new backend without the session),
// ending every session of the desktop. An empty offer instead would
// throw away what the person had copied, where the signal came late.
//
// Who fetched cannot be told: mutter's own clipboard manager fetches a
// copy of every new text owner's offer at once (to keep it when the
// owner goes), then the window fetches after the chord, each a transfer
// of its own, in that order (mutter handles SetSelection before the
// keys). So the route waits for two fetches, or backend.PasteWait when
// only one comes (a text too long for the manager to keep). One fetch or
// more:
// ErrPasted (whether the window shows it cannot be seen). None:
// ErrNotPasted (nothing arrived; another backend may type it).
func (r *Route) pastePortal(ctx context.Context, s *session, conn *xdp.Conn, handle dbus.ObjectPath, km *xkb.Keymap, text string) error {
	if km != nil && (!km.Everywhere(xkb.ControlL, 0) || !km.Everywhere(ksV, 0)) {
		return fmt.Errorf("portal: the keymap has no Control_L or v to paste with: %w", backend.ErrUnavailable)
	}
	prev, had := s.clipboardText(ctx, conn, handle)
	count := func() uint64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.fetches
	}
	// waitFetches waits until n fetches after base were served, or d.
	waitFetches := func(base, n uint64, d time.Duration) {
		t := time.NewTimer(d)
		defer t.Stop()
		for {
			changed := s.fetched.C()
			if count()-base >= n {
				return
			}
			select {
			case <-changed:
			case <-t.C:
				return
			case <-ctx.Done():
				return
			}
		}
	}
	before := count()
	if err := s.offer(ctx, conn, handle, []byte(text), true); err != nil {
		return fmt.Errorf("portal: offer the text on the clipboard: %w: %w", backend.ErrUnavailable, err)
	}
	start := time.Now()
	chord := r.chord(ctx, conn, handle, xkb.ControlL, ksV)
	if chord == nil {
		waitFetches(before, 2, backend.PasteWait)
	}
	took, fetches := time.Since(start), count()-before
	if had {
		// The window reads the text from mutter after the route wrote
		// it; a new offer before it has read it all cuts the paste
		// short (seen on the desk with a GTK 3 field).
		wait(ctx, r.o.RestoreDelay)
		// Back: what the clipboard held. mutter's clipboard manager
		// fetches it at once: served before this returns, so that a
		// program that ends now leaves it there.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exchange)
		restoreAt := count()
		if err := s.offer(rctx, conn, handle, prev, true); err != nil {
			r.o.Log.Warn("portal: the clipboard was not put back", "err", err)
		} else {
			waitFetches(restoreAt, 1, r.o.RestoreDelay)
		}
		cancel()
	}
	r.o.Log.Debug("portal: pasted through the portal's clipboard", "fetches", fetches, "took", took, "restored", had)
	switch {
	case chord != nil:
		return chord
	case fetches > 0:
		return fmt.Errorf("portal: %w", backend.ErrPasted)
	case ctx.Err() != nil:
		return fmt.Errorf("portal: paste: %w: %w", backend.ErrInterrupted, ctx.Err())
	}
	return fmt.Errorf("portal: nothing fetched the paste within %v: %w", backend.PasteWait, backend.ErrNotPasted)
}

// wait returns after d, or when ctx ends.
func wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
