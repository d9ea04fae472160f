package wayland

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/sway"
	"github.com/yazses/yazses/internal/wlwire"
	"github.com/yazses/yazses/lib/untrusted"
)

// wlBatch is how many characters go out between two round trips: the
// typing never runs more than this far ahead of the compositor.
const wlBatch = 128

// The keys are paced: the first wlBurst characters of a text go out as
// fast as the compositor takes them, the rest at wlRate characters a
// second. A round trip proves that the compositor took the keys, not that
// the focused client read them: the compositor queues them on the
// client's socket, and a client that falls behind (foot, rendering a
// headless output on a loaded machine) is disconnected by the compositor
// once that queue is full (foot went after 2,406 of 20,000 characters sent
// unpaced). Wayland gives no receipt from the focused client; wlBurst keys
// are about 100 KiB of events, under a socket's buffer, and wlRate is
// well below what foot, GTK and Qt read under load.
const (
	wlBurst = 1024
	wlRate  = 2000
)

// wlAfterBatch, when set (by tests), runs after each batch of keys has
// been written and before its round trip.
var wlAfterBatch func(sent int)

// Route is what the Wayland backends of one Typer share and hold: one
// client of the compositor of its Options.Environ, with one virtual
// keyboard, kept between texts (so the seat's own keyboard and its keymap
// are never touched) and dialled again after an error; Close closes it,
// which destroys the virtual keyboard.
type Route struct {
	o  backend.Options
	mu sync.Mutex // serializes typing and pasting; guards c
	c  *wlclient  // nil: none yet, closed, or failed
}

// NewRoute returns the Wayland route of o's compositor; it holds nothing
// yet.
func NewRoute(o backend.Options) *Route { return &Route{o: o.WithDefaults()} }

// Wayland returns the "wayland" backend (zwp_virtual_keyboard_v1).
func (r *Route) Wayland() backend.Injector { return &wayland{o: r.o, r: r} }

// Clipboard returns the Wayland "clipboard" backend.
func (r *Route) Clipboard() backend.Injector { return &clipboard{o: r.o, r: r} }

// client returns the open client, dialling one (and creating its virtual
// keyboard) when there is none or the last one failed. r.mu is held.
func (r *Route) client(ctx context.Context) (*wlclient, error) {
	if r.c != nil {
		if r.c.failed() == nil {
			return r.c, nil
		}
		r.drop()
	}
	c, err := dialWl(ctx, r.o.Environ)
	if err != nil {
		return nil, err
	}
	if err := c.bindKeyboard(ctx); err != nil {
		c.close()
		if errors.Is(err, backend.ErrUnavailable) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", backend.ErrUnavailable, err)
	}
	r.c = c
	return c, nil
}

// drop closes the client; r.mu is held.
func (r *Route) drop() {
	if r.c != nil {
		r.c.close()
		r.c = nil
	}
}

// Close closes the client, which destroys its virtual keyboard. The
// client stays between texts: a program that typed calls Close before it
// exits. A later text dials again.
func (r *Route) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drop()
}

// Offers reports whether the compositor offers the virtual keyboard;
// known is false when it could not be asked (not running yet). A
// compositor that offers it keeps the client, ready for the first text.
// Every exchange is bounded (5 s).
func (r *Route) Offers(ctx context.Context) (offers, known bool) {
	ctx, cancel := context.WithTimeout(ctx, wlIOTimeout)
	defer cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := r.client(ctx)
	switch {
	case err == nil:
		return true, true
	case errors.Is(err, errWlNoVirtualKeyboard):
		return false, true
	}
	return false, false
}

// wayland is the in-process Wayland backend (zwp_virtual_keyboard_v1).
type wayland struct {
	o backend.Options
	r *Route
}

func (w *wayland) Name() string { return backend.Wayland }

func (w *wayland) Focus(ctx context.Context) (backend.Focus, error) {
	if _, err := wlSocket(w.o.Environ); err != nil {
		return backend.FocusUnknown, err
	}
	sock := backend.Getenv(w.o.Environ, "SWAYSOCK")
	if sock == "" {
		return backend.FocusUnknown, nil
	}
	tree, err := sway.Tree(ctx, sock)
	if err != nil {
		// sway's socket is named but does not answer: do not guess.
		return backend.FocusUnknown, nil
	}
	return sway.FromTree(tree).Focus, nil
}

func (w *wayland) Type(ctx context.Context, typed untrusted.TypedText) error {
	text := typed.Text()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if err := backend.CheckFocus(ctx, w, w.o.RequireFocus, w.o.Log); err != nil {
		return err
	}
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	c, err := w.r.client(ctx)
	if err != nil {
		return fmt.Errorf("wayland: %w", err)
	}
	sent, err := c.typeText(ctx, text)
	if err == nil {
		return nil
	}
	if ctx.Err() == nil {
		// A client that failed is dialled again for the next text.
		w.r.drop()
	}
	if sent {
		// Keys went out: part of the text may be in the window, so no
		// other backend types it again.
		return fmt.Errorf("wayland: %w: %w", backend.ErrInterrupted, err)
	}
	return fmt.Errorf("wayland: %w", err)
}

// typeText types text piece by piece: each piece's keymap, a round trip
// that proves the compositor has it (it sends it to the focused client
// before any key that follows), then the keys, a round trip after every
// wlBatch characters and at the end. sent reports whether any key went
// out. Every key is released in the request after its press, so nothing
// stays pressed whatever happens.
func (c *wlclient) typeText(ctx context.Context, text string) (sent bool, err error) {
	typed := 0
	start := time.Now()
	for _, p := range wlPlan(text) {
		if err := c.setKeymap(ctx, p.keymap); err != nil {
			return sent, err
		}
		for i := 0; i < len(p.text); i += wlBatch {
			if err := pace(ctx, start, typed); err != nil {
				return sent, err
			}
			end := min(i+wlBatch, len(p.text))
			var buf []byte
			for _, r := range p.text[i:end] {
				t := wlTime()
				buf = append(buf, wlwire.NewMsg(c.keyboard, zwpVirtualKeyboardKey).Uint(t).Uint(p.code[r]).Uint(wlKeyPressed).Bytes()...)
				buf = append(buf, wlwire.NewMsg(c.keyboard, zwpVirtualKeyboardKey).Uint(t).Uint(p.code[r]).Uint(wlKeyReleased).Bytes()...)
			}
			if err := c.failed(); err != nil {
				return sent, err
			}
			sent = true
			if err := c.writeRaw(buf, -1); err != nil {
				return sent, fmt.Errorf("key: %w", err)
			}
			typed += end - i
			if wlAfterBatch != nil {
				wlAfterBatch(typed)
			}
			if err := c.roundtrip(ctx); err != nil {
				return sent, fmt.Errorf("key: %w", err)
			}
		}
	}
	return sent, nil
}

// pace waits until typed characters are within the pace of a text whose
// typing began at start (see wlBurst), or ctx ends.
func pace(ctx context.Context, start time.Time, typed int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if typed < wlBurst {
		return nil
	}
	due := start.Add(time.Duration(typed-wlBurst) * time.Second / wlRate)
	t := time.NewTimer(time.Until(due))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// setKeymap hands a keymap over in a sealed memfd, clears the modifiers
// and waits until the compositor has both.
func (c *wlclient) setKeymap(ctx context.Context, keymap string) error {
	fd, size, err := wlwire.KeymapFile(keymap)
	if err != nil {
		return fmt.Errorf("keymap: %w", err)
	}
	defer unix.Close(fd)
	km := wlwire.NewMsg(c.keyboard, zwpVirtualKeyboardKeymap).Uint(wlwire.KeymapFormatXKBV1).Uint(size)
	km.FD = fd
	mods := wlwire.NewMsg(c.keyboard, zwpVirtualKeyboardModifiers).Uint(0).Uint(0).Uint(0).Uint(0)
	if err := c.write(km, mods); err != nil {
		return fmt.Errorf("keymap: %w", err)
	}
	if err := c.roundtrip(ctx); err != nil {
		return fmt.Errorf("keymap: %w", err)
	}
	return nil
}

// wlTime is a key's timestamp: CLOCK_MONOTONIC in milliseconds, the clock
// of real input devices.
func wlTime() uint32 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint32(ts.Sec*1000 + ts.Nsec/1e6)
}
