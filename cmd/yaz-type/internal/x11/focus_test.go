package x11_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yaz-type/internal/backend"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/untrusted"
)

// A focus that moves to another window while a text is typed stops the
// typing: nothing of the text reaches the newly focused window, the
// error says how many characters arrived, and exactly those are in the
// first window. (Before the focus was proven with the server held before
// each batch, 9-247 characters went to the second window in 5 of 6 runs.)
// Swept over the moment of the move and the length of the text.
func TestX11FocusMovesWhileTyping(t *testing.T) {
	for _, c := range []struct {
		chars  int // the text's length in characters
		moveAt int // bytes arrived in the first window when the focus moves
	}{
		{2990, 300},
		{2990, 1500},
		{100_000, 10_000},
	} {
		t.Run(fmt.Sprintf("%d/at%d", c.chars, c.moveAt), func(t *testing.T) {
			env := startX(t)
			first := startRecorder(t, env)
			second := startRecorder(t, env)
			first.Focus(t)
			before := probeX(t, env)
			text := string([]rune(strings.Repeat("abc dé✓ ", c.chars/8+1))[:c.chars])
			inj, err := New(X11, Options{Environ: env})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(inj.Close)
			g := watchGrowth(t, first.File)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res := make(chan error, 1)
			go func() { res <- inj.Type(ctx, untrusted.Typed(text)) }()
			if g.wait(int64(c.moveAt), time.Minute).IsZero() {
				t.Fatal("the text did not begin to arrive")
			}
			second.Focus(t)
			err = testwait.Recv(t, res, "Type after the focus moved")
			arrived := c.chars
			var partial *backend.PartialError
			switch {
			case err == nil && c.chars <= 3000:
				// The server had taken the whole text before the move (the
				// terminal writes its file behind it): all of it is in the
				// first window, as below.
			case errors.As(err, &partial) && errors.Is(err, ErrInterrupted) && partial.Cause == "focus_moved":
				arrived = partial.Arrived
				if arrived <= 0 || arrived >= c.chars {
					t.Fatalf("Arrived = %d, want part of %d", arrived, c.chars)
				}
			default:
				t.Fatalf("Type = %v, want a partial error (focus_moved)", err)
			}
			// Every key of the text is ahead of the marker in each window.
			if got := second.Settled(t); got != "" {
				t.Errorf("the newly focused window received %d bytes of the text: %.40q…", len(got), got)
			}
			want := string([]rune(text)[:arrived])
			if got := first.Settled(t); got != want {
				t.Errorf("the first window received %d bytes, want the %d characters that arrived (%d bytes)", len(got), arrived, len(want))
			}
			before.checkClean(t, env, 0, inj)
		})
	}
}
