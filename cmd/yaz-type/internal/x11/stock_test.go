package x11_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/yazses/yazses/internal/testx"
	"github.com/yazses/yazses/lib/untrusted"
)

// stockTerminals are the terminals the paste tests open as a user runs
// them: no -xrm resources, no translations of ours.
var stockTerminals = []string{"xterm", "urxvt"}

// startStockTerminal opens terminal (xterm or urxvt) with nothing but a
// title and a shell that writes every byte it receives to a file.
func startStockTerminal(t testing.TB, env []string, terminal string) *recorder {
	t.Helper()
	return testx.StartTerminal(t, env, terminal)
}

// sweepText is n characters of mixed scripts (Greek, Cyrillic, CJK, an
// emoji, a check mark), the first 60 all distinct and none on a key of
// the US map: up to 36 of them fit on the spare keycodes of Xvfb's map
// (18 keycodes, two characters each), 37 do not.
func sweepText(n int) string {
	var pool []rune
	for i := range 25 {
		pool = append(pool, rune(0x3b1+i), rune(0x430+i)) // α а β б ...
	}
	pool = append(pool, []rune("日本語😀✓中文输入法")...)
	r := make([]rune, n)
	for i := range r {
		switch {
		case i < len(pool):
			r[i] = pool[i]
		case i%7 == 0:
			r[i] = ' '
		default:
			r[i] = rune(0x4e00 + i%500) // CJK ideographs: many distinct ones
		}
	}
	return string(r)
}

// A dictation of any length reaches a stock terminal whole, and the call
// succeeds only when it did: lengths around the paste threshold and the
// spare keycodes' room, and a text of 4208 characters over
// paste_over_chars. The clipboard holds what it held before.
func TestStockTerminalsGetEveryLength(t *testing.T) {
	for _, term := range stockTerminals {
		t.Run(term, func(t *testing.T) {
			env := startX(t)
			rec := startStockTerminal(t, env, term)
			rec.Focus(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			const before = "copied before: Ärger ✓"
			setClip(ctx, t, env, before)
			want := ""
			// The daemon's default paste_over_chars, and pasting off.
			for _, over := range []int{3000, 0} {
				typer, err := Open(Auto, Options{Environ: env, PasteOverChars: over})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(typer.Close)
				for _, n := range []int{1, 35, 36, 37, 200, 4208} {
					text := sweepText(n)
					if got := utf8.RuneCountInString(text); got != n {
						t.Fatalf("text of %d has %d characters", n, got)
					}
					used, err := typer.Type(ctx, text)
					if err != nil {
						t.Fatalf("paste over %d, %d characters: Type = %q, %v", over, n, used, err)
					}
					want += text
					rec.WaitFor(t, want)
					t.Logf("paste over %d, %d characters: %s", over, n, used)
				}
			}
			if got := getClip(ctx, t, env); got != before {
				t.Errorf("clipboard after the texts = %q, want %q", got, before)
			}
		})
	}
}

// The clipboard backend alone, into a stock terminal: it pastes with a
// chord the terminal honours, or says that it did not deliver.
func TestClipboardIntoStockTerminals(t *testing.T) {
	for _, term := range stockTerminals {
		t.Run(term, func(t *testing.T) {
			env := startX(t)
			rec := startStockTerminal(t, env, term)
			rec.Focus(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			inj, _ := New(Clipboard, Options{Environ: env})
			t.Cleanup(inj.Close)
			if err := inj.Type(ctx, untrusted.Typed(unicodeText)); err != nil {
				t.Fatalf("Type: %v", err)
			}
			rec.WaitFor(t, unicodeText)
		})
	}
}

// stopped stops the process of a window's recorder (xev) so that it reads
// nothing until resumed: a window that is slow to read its events, as
// any window can be on a busy machine.
func (x *xevRecorder) stop(t *testing.T) (resume func()) {
	t.Helper()
	p := x.pid
	if err := syscall.Kill(p, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume = func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(p, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	return resume
}

// A window that reads its keys late (stopped while they are typed) still
// gets every character: the map it reads then is the one the keys were
// typed with. A timer that restores the spare keycodes 300 ms after the
// last key (or rebinds them for the next piece of the text) cannot know
// that the window has read the map.
func TestX11LateWindowGetsTheText(t *testing.T) {
	env := startX(t)
	x := startXev(t, env)
	x.focus(t)
	inj, _ := New(X11, Options{Environ: env})
	t.Cleanup(inj.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resume := x.stop(t)
	if err := inj.Type(ctx, untrusted.Typed(unicodeText)); err != nil {
		t.Fatalf("Type: %v", err)
	}
	// The next text (ASCII, no binding) comes after whatever the last one
	// left to do with the map.
	if err := inj.Type(ctx, untrusted.Typed(" ok")); err != nil {
		t.Fatalf("Type: %v", err)
	}
	resume()
	x.waitFor(t, unicodeText+" ok")
}

// A text with more characters to bind than the spare keycodes hold,
// typed into a window that reads its keys late: either it arrives whole,
// or the backend says it cannot type it (so that another route does) and
// nothing of it arrives. Rebinding keycodes part-way through the text
// gave the late window the later characters in place of the earlier.
func TestX11NeverRebindsWithinText(t *testing.T) {
	env := startX(t)
	x := startXev(t, env)
	x.focus(t)
	inj, _ := New(X11, Options{Environ: env})
	t.Cleanup(inj.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	text := distinctText(60)
	resume := x.stop(t)
	err := inj.Type(ctx, untrusted.Typed(text))
	if err != nil && !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Type = %v, want nil or ErrUnavailable", err)
	}
	if err := inj.Type(ctx, untrusted.Typed("end")); err != nil {
		t.Fatalf("Type: %v", err)
	}
	resume()
	if err == nil {
		x.waitFor(t, text+"end")
	} else {
		x.waitFor(t, "end")
	}
}

// A clipboard that holds no text (an image, here) is left as it was: the
// clipboard backend does not paste through it (it cannot put the image
// back) and says so; nothing is pasted.
func TestClipboardLeavesAnImageAlone(t *testing.T) {
	env := startX(t)
	rec := startRecorder(t, env)
	rec.Focus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	img := "\x89PNG\r\n\x1a\nnot really an image"
	testx.SetClipAs(ctx, t, env, "image/png", img)
	readImg := func() string { return testx.ClipAs(ctx, env, "image/png") }
	inj, _ := New(Clipboard, Options{Environ: env})
	t.Cleanup(inj.Close)
	err := inj.Type(ctx, untrusted.Typed("private words"))
	if err == nil || !errors.Is(err, ErrUnavailable) {
		t.Errorf("Type = %v, want ErrUnavailable (the clipboard holds no text)", err)
	}
	if got := readImg(); got != img {
		t.Errorf("clipboard image after Type = %q, want it left as it was", got)
	}
	// Nothing was pasted: a key typed now is the first thing to arrive.
	x11, _ := New(X11, Options{Environ: env})
	t.Cleanup(x11.Close)
	if err := x11.Type(ctx, untrusted.Typed("end")); err != nil {
		t.Fatal(err)
	}
	rec.WaitFor(t, "end")
}
