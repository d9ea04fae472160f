package inject_test

import (
	"context"
	"errors"
	"log/slog"

	"github.com/yazses/yazses/cmd/yaz-type/internal/inject"
)

// The daemon opens one Typer from config dictation.inject and types each
// transcript with it.
func ExampleTyper() {
	typer, err := inject.Open("auto", inject.Options{Log: slog.Default()})
	if err != nil {
		return // no graphical session: keep transcripts for `yazsesd ctl last`
	}
	used, err := typer.Type(context.Background(), "transcript text")
	switch {
	case err == nil:
		slog.Info("typed", "backend", used) // never the text
	case errors.Is(err, inject.ErrNoTarget):
		// nothing typed: keep the text, notify "no_target"
	default:
		// every backend failed: keep the text
	}
}
