package inject

import (
	"context"
	"fmt"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/lib/untrusted"
)

// clipboard is the "clipboard" backend: the session's own, picked at
// each call (WAYLAND_DISPLAY set: Wayland's, else DISPLAY set: X11's).
type clipboard struct {
	o      Options
	wl, xc Injector
}

func newClipboard(o Options, rs *routes) *clipboard {
	return &clipboard{o: o, wl: rs.wl.Clipboard(), xc: rs.x.Clipboard()}
}

func (c *clipboard) Name() string { return Clipboard }

// session is the session's clipboard backend.
func (c *clipboard) session() (Injector, error) {
	switch {
	case backend.Getenv(c.o.Environ, "WAYLAND_DISPLAY") != "":
		return c.wl, nil
	case backend.Getenv(c.o.Environ, "DISPLAY") != "":
		return c.xc, nil
	}
	return nil, fmt.Errorf("no WAYLAND_DISPLAY or DISPLAY: %w", ErrUnavailable)
}

func (c *clipboard) Focus(ctx context.Context) (Focus, error) {
	inj, err := c.session()
	if err != nil {
		return FocusUnknown, err
	}
	return inj.Focus(ctx)
}

func (c *clipboard) Type(ctx context.Context, text untrusted.TypedText) error {
	inj, err := c.session()
	if err != nil {
		return fmt.Errorf("clipboard: %w", err)
	}
	return inj.Type(ctx, text)
}
