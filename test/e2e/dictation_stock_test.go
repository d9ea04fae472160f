package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/yazses/yazses/internal/testx"
)

// stockText is n characters of Greek, Cyrillic and CJK dictation, with
// spaces: more distinct characters than the spare keycodes of a keyboard
// map hold.
func stockText(n int) string {
	r := make([]rune, n)
	for i := range r {
		switch {
		case i%6 == 5:
			r[i] = ' '
		case i < 50:
			r[i] = rune(0x3b1 + i/2 + (i%2)*(0x430-0x3b1)) // α а β б ...
		default:
			r[i] = rune(0x4e00 + i%400)
		}
	}
	return string(r)
}

// TestDictationPastesIntoStockTerminals: a dictation over
// dictation.paste_over_chars (the default 3000: a text of 4208
// characters), and a shorter one with more distinct characters than the
// x11 backend types, reach a stock xterm and urxvt (no resources, no
// paste binding of ours) whole; hold.stop says typed only because they
// did, and the clipboard holds what it held before. Pasted with
// Ctrl+Shift+V, xterm got one ^V and the daemon said typed.
func TestDictationPastesIntoStockTerminals(t *testing.T) {
	t.Parallel()
	for _, term := range []string{"xterm", "urxvt"} {
		for _, n := range []int{200, 4208} {
			t.Run(fmt.Sprintf("%s/%d", term, n), func(t *testing.T) {
				text := stockText(n)
				const before = "copied before: Ärger ✓"
				x := startX(t)
				rec := testx.StartTerminal(t, x.Env, term)
				rec.Focus(t)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				setClip(ctx, t, x.Env, before)
				speech := answerWAV()
				d := startDaemon(t, dictationConfig(speech, true), append(x.DaemonEnv(), "YAZ_FAKE_TEXT="+text)...)
				// The xclip that keeps the old text (started by the daemon)
				// goes once another client takes the clipboard: before the
				// daemon's leak check.
				t.Cleanup(func() {
					setClip(context.Background(), t, x.Env, "after the test")
					d.Await(5*time.Second, func() bool {
						for _, pid := range d.Processes() {
							if pid != d.Cmd.Process.Pid && !slices.Contains(d.childPIDs(), pid) {
								return false
							}
						}
						return true
					})
				})
				c := d.Client()
				d.holdWhileSpeaking(c, wavDuration(t, speech))
				r := d.stopHold(c)
				if r.Outcome != "typed" || r.Backend != "clipboard" || r.Chars != utf8.RuneCountInString(text) {
					t.Errorf("hold.stop = %+v, want typed with clipboard, %d chars", r, n)
				}
				rec.WaitFor(t, text)
				if got := getClip(ctx, x.Env); got != before {
					t.Errorf("clipboard after the paste = %q, want %q restored", got, before)
				}
				if strings.Contains(d.Log.String(), text[:30]) {
					t.Errorf("the daemon's log holds the transcript")
				}
			})
		}
	}
}
