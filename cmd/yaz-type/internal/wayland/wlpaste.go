package wayland

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/internal/wlwire"
)

// The Wayland paste, in-process where the compositor offers
// zwlr_data_control_manager_v1 (wlroots compositors) and the virtual
// keyboard: the daemon's own data source holds the text as the clipboard
// selection, the virtual keyboard presses the paste chord, and the paste
// counts only when a client fetches the text after the chord (the source
// gets zwlr_data_control_source_v1.send and the whole text is written).
// A fetch before the chord (a clipboard manager reading every new
// selection) gets nothing and does not count. The protocol does not say
// which client fetched: a clipboard manager that reads the selection only
// after the chord would be taken for the window.

// wlr-data-control-unstable-v1, version 1.
const (
	wlDataControlManager = "zwlr_data_control_manager_v1"

	zwlrDataControlManagerCreateDataSource = 0
	zwlrDataControlManagerGetDataDevice    = 1

	zwlrDataControlDeviceSetSelection = 0
	zwlrDataControlDeviceDataOffer    = 0 // event
	zwlrDataControlDeviceFinished     = 2 // event

	zwlrDataControlSourceOffer     = 0
	zwlrDataControlSourceDestroy   = 1
	zwlrDataControlSourceSend      = 0 // event
	zwlrDataControlSourceCancelled = 1 // event

	zwlrDataControlOfferDestroy = 1
)

// wlTextMimes are the types the source offers (as wl-copy does for text).
var wlTextMimes = []string{"text/plain;charset=utf-8", "text/plain", "UTF8_STRING", "TEXT", "STRING"}

// errWlNoDataControl: the compositor does not offer data control.
var errWlNoDataControl = errors.New("the compositor offers no data control (zwlr_data_control_manager_v1)")

// wlSource is one data source's events, as the reader sees them.
type wlSource struct {
	armed     bool     // after the chord: a send is the paste (guarded by wlclient.mu)
	sends     chan int // the fd of the first send after the chord
	cancelled chan struct{}
	gone      bool // cancelled (guarded by wlclient.mu)
}

// dataDevice binds the data control manager and gets the seat's data
// device, once per connection. Route.mu is held.
func (c *wlclient) dataDevice(ctx context.Context) error {
	c.mu.Lock()
	dev := c.dcDevice
	c.mu.Unlock()
	if dev != 0 {
		return nil
	}
	if c.dcManager == 0 {
		if _, _, ok := c.global(wlDataControlManager); !ok {
			return fmt.Errorf("wayland: %w: %w", errWlNoDataControl, backend.ErrUnavailable)
		}
		m, err := c.bind(wlDataControlManager)
		if err != nil {
			return err
		}
		c.dcManager = m
	}
	dev = c.newID()
	if err := c.write(wlwire.NewMsg(c.dcManager, zwlrDataControlManagerGetDataDevice).Uint(dev).Uint(c.seat)); err != nil {
		return fmt.Errorf("wayland: get_data_device: %w", err)
	}
	c.mu.Lock()
	c.dcDevice = dev
	c.mu.Unlock()
	return c.roundtrip(ctx)
}

// pasteWl sets text as the selection, presses the chord (ctrl+shift+v in
// a terminal, ctrl+v elsewhere) and waits until a client has fetched it.
// Errors before the chord wrap backend.ErrUnavailable (nothing was pasted); no
// fetch within backend.PasteWait is backend.ErrNotPasted; a failure after the chord is
// backend.ErrInterrupted. The selection is left with the daemon's source: the
// caller restores it.
func (c *wlclient) pasteWl(ctx context.Context, text string, terminal bool) (src uint32, err error) {
	if err := c.dataDevice(ctx); err != nil {
		return 0, err
	}
	src = c.newID()
	s := &wlSource{sends: make(chan int, 1), cancelled: make(chan struct{})}
	c.mu.Lock()
	c.sources[src] = s
	dev := c.dcDevice
	c.mu.Unlock()
	msgs := []*wlwire.Msg{wlwire.NewMsg(c.dcManager, zwlrDataControlManagerCreateDataSource).Uint(src)}
	for _, m := range wlTextMimes {
		msgs = append(msgs, wlwire.NewMsg(src, zwlrDataControlSourceOffer).Str(m))
	}
	msgs = append(msgs, wlwire.NewMsg(dev, zwlrDataControlDeviceSetSelection).Uint(src))
	if err := c.write(msgs...); err != nil {
		return src, fmt.Errorf("wayland: set_selection: %w: %w", backend.ErrUnavailable, err)
	}
	if err := c.roundtrip(ctx); err != nil {
		return src, fmt.Errorf("wayland: set_selection: %w: %w", backend.ErrUnavailable, err)
	}
	c.mu.Lock()
	s.armed = !s.gone
	c.mu.Unlock()
	if !s.armed {
		return src, fmt.Errorf("wayland: another client took the clipboard: %w", backend.ErrUnavailable)
	}
	if err := c.chord(ctx, terminal); err != nil {
		return src, fmt.Errorf("wayland: paste chord: %w: %w", backend.ErrInterrupted, err)
	}
	timer := time.NewTimer(backend.PasteWait)
	defer timer.Stop()
	select {
	case fd := <-s.sends:
		if err := writePaste(fd, text); err != nil {
			return src, fmt.Errorf("wayland: serve the paste: %w: %w", backend.ErrInterrupted, err)
		}
		return src, nil
	case <-s.cancelled:
		return src, fmt.Errorf("wayland: another client took the clipboard after the chord: %w", backend.ErrInterrupted)
	case <-c.dead:
		return src, fmt.Errorf("wayland: %w: %w", backend.ErrInterrupted, c.failed())
	case <-ctx.Done():
		return src, fmt.Errorf("wayland: %w: %w", backend.ErrInterrupted, ctx.Err())
	case <-timer.C:
		return src, backend.ErrNotPasted
	}
}

// dropSource destroys a data source of pasteWl.
func (c *wlclient) dropSource(src uint32) {
	c.mu.Lock()
	_, ok := c.sources[src]
	delete(c.sources, src)
	c.mu.Unlock()
	if ok {
		_ = c.write(wlwire.NewMsg(src, zwlrDataControlSourceDestroy))
	}
}

// writePaste writes the text to a requester's pipe, with a deadline, and
// closes it.
func writePaste(fd int, text string) error {
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return err
	}
	f := os.NewFile(uintptr(fd), "paste")
	defer f.Close()
	_ = f.SetWriteDeadline(time.Now().Add(backend.PasteWait))
	if _, err := f.WriteString(text); err != nil {
		return err
	}
	return f.Close()
}

// The chord's keymap: Control_L, Shift_L and v, the modifiers on their
// real modifier bits (Shift 1<<0, Control 1<<2).
const (
	wlChordKeymap = "xkb_keymap {\nxkb_keycodes \"yazses\" {\nminimum = 8;\nmaximum = 255;\n<K0> = 9;\n<K1> = 10;\n<K2> = 11;\n};\n" +
		"xkb_types \"yazses\" {\ntype \"ONE_LEVEL\" {\nmodifiers = none;\nlevel_name[Level1] = \"Any\";\n};\n};\n" +
		"xkb_compatibility \"yazses\" {\n};\n" +
		"xkb_symbols \"yazses\" {\nkey <K0> { type = \"ONE_LEVEL\", [ Control_L ] };\nkey <K1> { type = \"ONE_LEVEL\", [ Shift_L ] };\n" +
		"key <K2> { type = \"ONE_LEVEL\", [ v ] };\nmodifier_map Control { <K0> };\nmodifier_map Shift { <K1> };\n};\n};\n"
	wlChordCtrl, wlChordShift, wlChordV = 1, 2, 3 // evdev codes (keycode - 8)
	wlModShift, wlModControl            = 1 << 0, 1 << 2
)

// chord presses ctrl(+shift)+v on the virtual keyboard and releases it.
func (c *wlclient) chord(ctx context.Context, shift bool) error {
	if err := c.setKeymap(ctx, wlChordKeymap); err != nil {
		return err
	}
	key := func(code, state uint32) *wlwire.Msg {
		return wlwire.NewMsg(c.keyboard, zwpVirtualKeyboardKey).Uint(wlTime()).Uint(code).Uint(state)
	}
	mods := func(m uint32) *wlwire.Msg {
		return wlwire.NewMsg(c.keyboard, zwpVirtualKeyboardModifiers).Uint(m).Uint(0).Uint(0).Uint(0)
	}
	held := uint32(wlModControl)
	msgs := []*wlwire.Msg{key(wlChordCtrl, wlKeyPressed)}
	if shift {
		held |= wlModShift
		msgs = append(msgs, key(wlChordShift, wlKeyPressed))
	}
	msgs = append(msgs, mods(held), key(wlChordV, wlKeyPressed), key(wlChordV, wlKeyReleased))
	if shift {
		msgs = append(msgs, key(wlChordShift, wlKeyReleased))
	}
	msgs = append(msgs, key(wlChordCtrl, wlKeyReleased), mods(0))
	if err := c.write(msgs...); err != nil {
		return err
	}
	return c.roundtrip(ctx)
}

// dataEvent handles the events of data control objects; c.mu is held. It
// reports whether the event was one.
func (c *wlclient) dataEvent(obj, opcode uint32, a *wlwire.Args) bool {
	if s, ok := c.sources[obj]; ok {
		switch opcode {
		case zwlrDataControlSourceSend:
			_ = a.Str() // the type: the text is the same in each
			fd := c.r.TakeFd()
			if fd < 0 {
				return true
			}
			if s.armed {
				select {
				case s.sends <- fd:
					s.armed = false // the first fetch after the chord
					return true
				default:
				}
			}
			unix.Close(fd) // before the chord, or a second fetch: nothing
		case zwlrDataControlSourceCancelled:
			if !s.gone {
				s.gone = true
				close(s.cancelled)
			}
		}
		return true
	}
	if obj != 0 && obj == c.dcDevice {
		switch opcode {
		case zwlrDataControlDeviceDataOffer:
			// A new selection's offer: the daemon reads the clipboard
			// with wl-paste, so every offer is destroyed at once.
			c.drop = append(c.drop, a.Uint())
		case zwlrDataControlDeviceFinished:
			c.dcDevice = 0
		}
		return true
	}
	return false
}
