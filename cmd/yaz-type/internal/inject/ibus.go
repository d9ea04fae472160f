package inject

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
//
// It is the one route with a preedit (backend.Preediter): tentative text
// shown in the field, underlined and not part of its text. The first
// preedit makes the engine global and keeps it so (an ibus.Session)
// until the next text, which takes the preedit's place as its commit,
// or until a preedit of "" takes it away; Close ends a session left
// open. The serving goroutine alone calls Type and Preedit, one at a
// time; mu keeps Close (at the process's end) out of them.
type ibusBackend struct {
	r *ibus.Route
	// preedit: GNOME, whose shell is IBus's input method. Elsewhere (KWin's
	// "IBus Wayland") each preedit's session is two more changes of the
	// global engine, which IBus's own Wayland input method aborts at when
	// they come closer than it answers (see ibus.EngineSettle).
	preedit bool

	mu   sync.Mutex
	sess *ibus.Session // the preedit's session; nil: none shown
}

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
	return &ibusBackend{r: ibus.New(ibus.Options{Environ: opts.Environ, Log: opts.Log, Settle: settle}), preedit: gnome(opts.Environ)}
}

func (b *ibusBackend) Name() string { return IBus }

func (b *ibusBackend) Focus(ctx context.Context) (Focus, error) { return b.r.Focus(ctx) }

func (b *ibusBackend) Type(ctx context.Context, typed untrusted.TypedText) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.sess; s != nil {
		b.sess = nil
		if err := s.Type(ctx, typed); err != nil {
			return err
		}
	} else if err := b.r.Type(ctx, typed); err != nil {
		return err
	}
	if b.r.LastDelivery() != ibus.Confirmed {
		return fmt.Errorf("ibus: %w", backend.ErrUnconfirmed)
	}
	return nil
}

// Preedits reports whether the route shows a preedit here (GNOME).
func (b *ibusBackend) Preedits() bool { return b.preedit }

// Preedit shows typed as the focused field's preedit, replacing the one
// shown; "" takes it away and gives the previous engine back. A field
// that cannot take one (no field focused, a password field) is an error
// of ibus.Route.Begin, and nothing is shown.
func (b *ibusBackend) Preedit(ctx context.Context, typed untrusted.TypedText) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	text := typed.Text()
	if text == "" {
		return b.endLocked(ctx)
	}
	if b.sess == nil {
		s, err := b.r.Begin(ctx)
		if err != nil {
			return err
		}
		b.sess = s
	}
	if err := b.sess.Preedit(ctx, text); err != nil {
		return errors.Join(err, b.endLocked(ctx))
	}
	return nil
}

// endLocked takes the preedit away and ends its session, if one is open.
func (b *ibusBackend) endLocked(ctx context.Context) error {
	s := b.sess
	if s == nil {
		return nil
	}
	b.sess = nil
	return errors.Join(s.Preedit(ctx, ""), s.Close(ctx))
}

// Close ends a preedit's session left open (bounded: ibus.RestoreWait).
func (b *ibusBackend) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), ibus.RestoreWait)
	defer cancel()
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.endLocked(ctx); err != nil {
		b.r.Log().Debug("ibus: ending the preedit's session", "err", err)
	}
}
