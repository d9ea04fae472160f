package serve

import (
	"context"
	"errors"
	"testing"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/cmd/yaz-type/internal/inject"
	"github.com/yazses/yazses/lib/typewire"
)

type okTyper struct{}

func (okTyper) Type(context.Context, string) (string, error) { return "portal", nil }
func (okTyper) Preedit(context.Context, string) (string, error) {
	return "portal", backend.ErrNoPreedit
}

// A route that cannot open at start (the desktop's portal not up yet at
// login) answers unavailable and says why, and is opened again at the next
// text: the first text after the portal is up is typed.
func TestRouteOpensAgainUntilItCan(t *testing.T) {
	up := false
	opens := 0
	r := NewRoute(func() (Typer, func() typewire.Status, error) {
		opens++
		if !up {
			return nil, nil, errors.New("no RemoteDesktop portal offers a keyboard")
		}
		return okTyper{}, func() typewire.Status {
			return typewire.Status{Route: "portal", Backends: []string{"portal"}}
		}, nil
	})
	if rd := r.Ready(); len(rd.Backends) != 0 || rd.Error != "no RemoteDesktop portal offers a keyboard" {
		t.Fatalf("Ready = %+v, want no backends and why", rd)
	}
	if _, err := r.Type(context.Background(), "x"); !errors.Is(err, inject.ErrUnavailable) || inject.Outcome("", err, 1).Cause != typewire.CauseNoRoute {
		t.Fatalf("Type before the portal = %v, want unavailable", err)
	}
	up = true
	if used, err := r.Type(context.Background(), "x"); err != nil || used != "portal" {
		t.Fatalf("Type once the portal is up = %q, %v", used, err)
	}
	if st := r.Status(); st.Route != "portal" {
		t.Errorf("Status = %+v, want the portal route", st)
	}
	r.Type(context.Background(), "y")
	if opens != 3 {
		t.Errorf("opened %d times, want 3: at start, each text until one opened, then never again", opens)
	}
}
