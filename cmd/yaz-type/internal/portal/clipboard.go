package portal

import (
	"context"
	"errors"
	"fmt"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/tool"
)

// clipboard is the desktop's clipboard, for the paste.
type clipboard interface {
	// Put sets the clipboard and the primary selection to text and
	// returns a function that puts back what they held.
	Put(ctx context.Context, text string) (restore func(context.Context) error, err error)
}

// wlClipboard is a Wayland session's clipboard through wl-copy and
// wl-paste (GNOME and KDE Plasma offer both selections to a client).
type wlClipboard struct{ o backend.Options }

var (
	clipTools = tool.Clipboard{
		Save:  []string{"wl-paste", "--no-newline"},
		Set:   []string{"wl-copy"},
		Clear: []string{"wl-copy", "--clear"},
	}
	primaryTools = tool.Clipboard{
		Save:  []string{"wl-paste", "--primary", "--no-newline"},
		Set:   []string{"wl-copy", "--primary"},
		Clear: []string{"wl-copy", "--primary", "--clear"},
	}
)

// Put saves each selection's text, then sets both; the primary selection
// is best effort (a compositor may lack it: the clipboard alone pastes in
// GTK and Qt windows).
func (c wlClipboard) Put(ctx context.Context, text string) (func(context.Context) error, error) {
	env := c.o.Environ
	if backend.Getenv(env, "WAYLAND_DISPLAY") == "" {
		return nil, fmt.Errorf("no WAYLAND_DISPLAY for wl-copy: %w", backend.ErrUnavailable)
	}
	type saved struct {
		tools tool.Clipboard
		prev  []byte
		ok    bool
	}
	var done []saved
	restore := func(ctx context.Context) error {
		var errs []error
		for _, s := range done {
			data := []byte(nil) // no text before: cleared
			if s.ok && len(s.prev) > 0 {
				data = s.prev
			}
			if err := tool.Put(ctx, env, s.tools, data, text); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	for i, tools := range []tool.Clipboard{clipTools, primaryTools} {
		prev, err := tool.Call{Env: env}.Run(ctx, tools.Save[0], tools.Save[1:]...)
		if ctx.Err() != nil {
			return nil, errors.Join(ctx.Err(), restore(context.WithoutCancel(ctx)))
		}
		if err := tool.Put(ctx, env, tools, []byte(text), text); err != nil {
			if i == 0 {
				return nil, fmt.Errorf("clipboard: %w", err)
			}
			c.o.Log.Debug("portal: the primary selection was not set", "err", err)
			continue
		}
		done = append(done, saved{tools, prev, err == nil})
	}
	return restore, nil
}
