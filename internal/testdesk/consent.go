package testdesk

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ConsentTitle is the title of xdg-desktop-portal-gnome's RemoteDesktop
// consent window.
const ConsentTitle = "Remote Desktop"

// ReactionTime is how long after the consent window took the focus the
// answerer presses its keys, once. Keys that reach the window before its
// toolkit has made it ready are lost, or some of them are (seen at 300
// ms: Alt+I lost and Alt+S taken, so Share was pressed with the switch
// off), and nothing the shell sees tells when it is ready; pressing
// again is not safe (Alt+I toggles). A second was enough in every run
// here; a person is slower still.
const ReactionTime = time.Second

// consentJS installs, once, the shell's answerer of the consent window:
// ReactionTime after a window titled ConsentTitle took the focus, the
// seat's virtual keyboard (Start's) presses what a person would to share:
// Alt+I, the mnemonic of its "Allow Remote _Interaction" switch (off at
// first; "_Share" cannot be pressed while it is), then Alt+S, "_Share";
// or Escape to decline. (Tab, Tab, Space depends on the rows the window
// shows and on where its focus starts: with the "Remember This
// Selection" box and the clipboard's switch it pressed Cancel, or turned
// a switch.) It counts the windows it answered.
const consentJS = `
const Clutter = imports.gi.Clutter;
const GLib = imports.gi.GLib;
if (!global._yazsesConsent) {
  const c = global._yazsesConsent = {answer: 'accept', seen: 0, tries: 0, titles: []};
  const press = (kb, keys) => {
    let t = GLib.get_monotonic_time();
    for (const k of keys) kb.notify_keyval(t++, k, Clutter.KeyState.PRESSED);
    for (const k of keys.slice().reverse()) kb.notify_keyval(t++, k, Clutter.KeyState.RELEASED);
  };
  const look = () => {
    const w = global.display.focus_window;
    if (!w) return;
    const title = w.get_title();
    if (c.titles.length < 50) c.titles.push(String(title));
    if (title !== %[1]q || w._yazsesAnswered) return;
    w._yazsesAnswered = true;
    c.seen++;
    const answer = c.answer;
    GLib.timeout_add(GLib.PRIORITY_DEFAULT, %[2]d, () => {
      c.tries++;
      const kb = global._yazsesKeyboard;
      if (answer === 'accept') {
        press(kb, [Clutter.KEY_Alt_L, Clutter.KEY_i]);
        GLib.timeout_add(GLib.PRIORITY_DEFAULT, %[2]d, () => {
          press(kb, [Clutter.KEY_Alt_L, Clutter.KEY_s]);
          return GLib.SOURCE_REMOVE;
        });
      } else {
        press(kb, [Clutter.KEY_Escape]);
      }
      return GLib.SOURCE_REMOVE;
    });
  };
  global.display.connect('notify::focus-window', look);
}
global._yazsesConsent.answer = %[3]q;
'answerer'
`

// Answer is how the shell answers the consent window.
type Answer string

// Answers.
const (
	// Share shares the keyboard (and the clipboard, when asked for: its
	// switch is on at first). There is no answer that turns the
	// clipboard's switch off: its mnemonic, C, is also Cancel's, and
	// Alt+C only moves the focus between them.
	Share Answer = "accept"
	// Decline presses Escape: the window's Cancel.
	Decline Answer = "decline"
)

// AnswerConsent makes the shell answer every RemoteDesktop consent window
// from now on, as a person would through the keyboard. Nothing of the
// portal or its backend is replaced: the real xdg-desktop-portal-gnome
// shows its window, and the keys go to it through the compositor.
func (d *Desk) AnswerConsent(ctx context.Context, answer Answer) error {
	if _, err := d.Eval(ctx, fmt.Sprintf(consentJS, ConsentTitle, ReactionTime.Milliseconds(), answer)); err != nil {
		return fmt.Errorf("install the consent answerer: %w", err)
	}
	return nil
}

// ConsentWindows is how many consent windows the answerer answered, and
// the titles of the windows that took the focus (for a failure message).
func (d *Desk) ConsentWindows(ctx context.Context) (int, string, error) {
	res, err := d.Eval(ctx, "global._yazsesConsent ? String(global._yazsesConsent.seen) : '0'")
	if err != nil {
		return 0, "", err
	}
	n, err := strconv.Atoi(strings.Trim(res, `"`))
	if err != nil {
		return 0, "", fmt.Errorf("the answerer's count %q: %w", res, err)
	}
	titles, err := d.Eval(ctx, "global._yazsesConsent ? 'tries ' + global._yazsesConsent.tries + ': ' + global._yazsesConsent.titles.join(' | ') : ''")
	if err != nil {
		return 0, "", err
	}
	return n, titles, nil
}

// SetClipboard makes the shell the clipboard's owner with text, as a
// person's copy in some window would.
func (d *Desk) SetClipboard(ctx context.Context, text string) error {
	js := fmt.Sprintf("const St = imports.gi.St; St.Clipboard.get_default().set_text(St.ClipboardType.CLIPBOARD, %s); 'set'", strconv.Quote(text))
	if _, err := d.Eval(ctx, js); err != nil {
		return fmt.Errorf("set the clipboard: %w", err)
	}
	return nil
}

// Chord presses the keys named (Clutter.KEY_<name>: "Control_L", "v")
// together on the seat's virtual keyboard and releases them, into the
// window that has the focus.
func (d *Desk) Chord(ctx context.Context, keys ...string) error {
	js := "const Clutter = imports.gi.Clutter; const GLib = imports.gi.GLib; const kb = global._yazsesKeyboard; let t = GLib.get_monotonic_time();"
	for _, k := range keys {
		js += fmt.Sprintf("kb.notify_keyval(t++, Clutter.KEY_%s, Clutter.KeyState.PRESSED);", k)
	}
	for i := len(keys) - 1; i >= 0; i-- {
		js += fmt.Sprintf("kb.notify_keyval(t++, Clutter.KEY_%s, Clutter.KeyState.RELEASED);", keys[i])
	}
	if _, err := d.Eval(ctx, js+"'pressed'"); err != nil {
		return fmt.Errorf("press %v: %w", keys, err)
	}
	return nil
}
