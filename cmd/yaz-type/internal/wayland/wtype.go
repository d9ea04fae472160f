package wayland

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/sway"
	"github.com/yazses/yazses/cmd/yaz-type/internal/tool"
	"github.com/yazses/yazses/lib/untrusted"
)

// wtype is the Wayland virtual-keyboard backend that runs wtype.
type wtype struct{ o backend.Options }

// NewWtype returns the "wtype" backend.
func NewWtype(o backend.Options) backend.Injector { return &wtype{o: o.WithDefaults()} }

func (w *wtype) Name() string { return backend.Wtype }

func (w *wtype) Focus(ctx context.Context) (backend.Focus, error) {
	t, err := sway.Focus(ctx, tool.Call{Env: w.o.Environ})
	return t.Focus, err
}

func (w *wtype) Type(ctx context.Context, typed untrusted.TypedText) error {
	text := typed.Text()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if err := backend.CheckFocus(ctx, w, w.o.RequireFocus, w.o.Log); err != nil {
		return err
	}
	c := tool.Call{Env: w.o.Environ, Secret: text, Stdin: []byte(text)}
	if _, err := c.Run(ctx, "wtype", wtypeArgs(w.o.WtypeDelay, "-")...); err != nil {
		return fmt.Errorf("wtype: %w", err)
	}
	return nil
}

// wtypeArgs puts the start delay (-s) before the other arguments.
func wtypeArgs(delay time.Duration, args ...string) []string {
	if delay <= 0 {
		return args
	}
	return append([]string{"-s", strconv.FormatInt(delay.Milliseconds(), 10)}, args...)
}
