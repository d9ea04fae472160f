package inject

import (
	"context"
	"fmt"
	"time"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/ibus"
	"github.com/yazses/yazses/lib/untrusted"
)

// ibusBackend is the IBus route (package ibus) as a typing backend: one
// commit per text into the focused field, through the input-method
// framework the desktop runs (GNOME runs IBus itself), with no dialog and
// no keymap. What it may claim: typed where the field's surrounding text
// shows the commit; otherwise the commit was taken for the focused input
// context and whether a field had it cannot be seen (ErrUnconfirmed,
// outcome committed); a password or PIN field is refused.
type ibusBackend struct{ r *ibus.Route }

// ibusRunning is auto's probe: an IBus daemon answers at env's address
// (bounded).
func ibusRunning(ctx context.Context, env []string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return ibus.New(ibus.Options{Environ: env}).Running(ctx)
}

func newIBus(opts Options) *ibusBackend {
	settle := ibus.EngineSettle
	if gnome(opts.Environ) {
		settle = 0 // the shell is IBus's input method there (see ibus.Options.Settle)
	}
	return &ibusBackend{ibus.New(ibus.Options{Environ: opts.Environ, Log: opts.Log, Settle: settle})}
}

func (b *ibusBackend) Name() string { return IBus }

func (b *ibusBackend) Focus(ctx context.Context) (Focus, error) { return b.r.Focus(ctx) }

func (b *ibusBackend) Type(ctx context.Context, typed untrusted.TypedText) error {
	if err := b.r.Type(ctx, typed); err != nil {
		return err
	}
	if b.r.LastDelivery() != ibus.Confirmed {
		return fmt.Errorf("ibus: %w", backend.ErrUnconfirmed)
	}
	return nil
}
