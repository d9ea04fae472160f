package wayland

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/internal/wlwire"
)

// The seat's keymap: what every Wayland compositor hands each client's
// wl_keyboard (mutter and KWin included, which offer no virtual keyboard):
// the person's layouts as an XKB keymap in text format v1. The portal
// route (package portal) reads it to know which characters the
// compositor can type from a keysym.

// wlMaxKeymap bounds the keymap read (a desktop's is 60–100 KiB).
const wlMaxKeymap = 4 << 20

// seatKeymap is one wl_keyboard.keymap event.
type seatKeymap struct {
	format uint32
	fd     int
	size   uint32
}

// errWlNoKeymap: the seat sent no keymap (it has no keyboard).
var errWlNoKeymap = errors.New("the Wayland seat sent no keymap")

// keyboardEvent takes the seat keyboard's keymap event. c.mu is held.
func (c *wlclient) keyboardEvent(obj, opcode uint32, a *wlwire.Args) bool {
	if obj == 0 || obj != c.seatKbd {
		return false
	}
	if opcode == wlwire.KeyboardKeymap {
		format := a.Uint()
		fd := c.r.TakeFd()
		size := a.Uint()
		if fd < 0 {
			return true
		}
		select {
		case c.keymaps <- seatKeymap{format, fd, size}:
		default:
			unix.Close(fd) // a later keymap than the one asked for
		}
	}
	return true
}

// SeatKeymap returns the keymap of the first seat of env's compositor, as
// the compositor hands it to a client's wl_keyboard (format xkb_v1). It
// makes a connection of its own and closes it; every exchange is bounded
// (5 s).
func SeatKeymap(ctx context.Context, env []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, wlIOTimeout)
	defer cancel()
	c, err := dialWl(ctx, env)
	if err != nil {
		return "", err
	}
	defer c.close()
	if c.seat, err = c.bind(wlwire.SeatInterface); err != nil {
		return "", fmt.Errorf("wayland: %w", err)
	}
	kbd := c.newID()
	c.mu.Lock()
	c.seatKbd, c.keymaps = kbd, make(chan seatKeymap, 1)
	c.mu.Unlock()
	if err := c.write(wlwire.NewMsg(c.seat, wlwire.SeatGetKeyboard).Uint(kbd)); err != nil {
		return "", fmt.Errorf("wayland: get_keyboard: %w", err)
	}
	// The compositor sends the keymap on get_keyboard, before it
	// answers the round trip.
	if err := c.roundtrip(ctx); err != nil {
		return "", fmt.Errorf("wayland: get_keyboard: %w", err)
	}
	var km seatKeymap
	select {
	case km = <-c.keymaps:
	default:
		return "", fmt.Errorf("wayland: %w: %w", errWlNoKeymap, backend.ErrUnavailable)
	}
	defer unix.Close(km.fd)
	if km.format != wlwire.KeymapFormatXKBV1 {
		return "", fmt.Errorf("wayland: keymap format %d, not xkb_v1: %w", km.format, backend.ErrUnavailable)
	}
	if km.size == 0 || km.size > wlMaxKeymap {
		return "", fmt.Errorf("wayland: keymap of %d bytes: %w", km.size, backend.ErrUnavailable)
	}
	buf := make([]byte, km.size)
	for off := 0; off < len(buf); {
		n, err := unix.Pread(km.fd, buf[off:], int64(off))
		if err != nil {
			return "", fmt.Errorf("wayland: read the keymap: %w", err)
		}
		if n == 0 {
			break
		}
		off += n
	}
	if i := indexNUL(buf); i >= 0 {
		buf = buf[:i]
	}
	return string(buf), nil
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}
