package serve

import (
	"context"
	"fmt"
	"sync"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/lib/typewire"
)

// Opener opens the session's typer: the typer, what it says of its route
// now, and why there is none.
type Opener func() (Typer, func() typewire.Status, error)

// Route is the typer of the session: opened at start and, while no route
// could type, opened again at each text. A desktop's portal that was not
// up yet when the daemon started (a user service at login) is taken up by
// the first text after it is.
type Route struct {
	open Opener

	mu     sync.Mutex
	t      Typer
	status func() typewire.Status
	err    error
}

// NewRoute opens the route once.
func NewRoute(open Opener) *Route {
	r := &Route{open: open}
	r.mu.Lock()
	r.try()
	r.mu.Unlock()
	return r
}

// try opens the route; r.mu is held.
func (r *Route) try() {
	r.t, r.status, r.err = r.open()
}

// Type types with the route, opening it first while there is none.
func (r *Route) Type(ctx context.Context, text string) (string, error) {
	r.mu.Lock()
	if r.t == nil {
		r.try()
	}
	t, err := r.t, r.err
	r.mu.Unlock()
	if t == nil {
		return "", fmt.Errorf("%w: %v", backend.ErrNoRoute, err)
	}
	return t.Type(ctx, text)
}

// Preedit shows text as the focused field's tentative text with the
// route; with none, ErrNoPreedit (a preedit opens no route).
func (r *Route) Preedit(ctx context.Context, text string) (string, error) {
	r.mu.Lock()
	t := r.t
	r.mu.Unlock()
	if t == nil {
		return "", backend.ErrNoPreedit
	}
	return t.Preedit(ctx, text)
}

// Status is the route's state now, or why there is none.
func (r *Route) Status() typewire.Status {
	r.mu.Lock()
	status, err := r.status, r.err
	r.mu.Unlock()
	if status == nil {
		st := typewire.Status{Backends: []string{}}
		if err != nil {
			st.Error = err.Error()
		}
		return st
	}
	return status()
}

// Ready is the readiness line: the route's state at start.
func (r *Route) Ready() typewire.Ready {
	st := r.Status()
	return typewire.Ready{Backends: st.Backends, Route: st.Route, Why: st.Why, Error: st.Error, Preedit: st.Preedit}
}
