package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/yazses/yazses/internal/testdesk"
	"github.com/yazses/yazses/lib/daemonapi"
)

// gnomeSample has what keys cannot type on a US layout: umlauts, a dash,
// Greek, CJK, an emoji and the AltGr characters of a German one.
const gnomeSample = "Grüße aus Köln — ψυχή, 日本語, 😀 and AltGr: € @ ~ naïve"

// TestDictationOnGNOME: a whole dictation through the real daemon on the
// real GNOME Shell 48 (internal/testdesk): the daemon started as a
// program of the session (its Wayland display and IBus), a GTK 4 field
// focused, a hold played into the microphone, the fake decoder's exact
// words; auto chooses IBus (mutter has no virtual keyboard), the text
// arrives in the field exactly, with no dialog, and hold.stop says typed
// because the field showed it arrive.
func TestDictationOnGNOME(t *testing.T) {
	desk := testdesk.Start(t)
	bus := desk.IBus(t)
	field := desk.Field(t, testdesk.FieldOptions{GTK: 4})
	speech := answerWAV()
	d := startDaemon(t, dictationConfig(speech, true),
		"DISPLAY=", "WAYLAND_DISPLAY="+desk.WaylandSocket, "IBUS_ADDRESS="+bus, "XDG_CURRENT_DESKTOP=GNOME",
		"YAZ_FAKE_TEXT="+gnomeSample)
	d.WaitFor(30*time.Second, "the typing child to run", func() bool { return d.Child("type").State == "running" })
	if st := d.Status(); st.Typing.Route != "ibus" {
		t.Fatalf("status typing = %+v, want the ibus route", st.Typing)
	}
	c := d.Client()
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	r := d.stopHold(c)
	want := daemonapi.HoldResult{Hold: daemonapi.HoldIdle, Outcome: "typed", Chars: utf8.RuneCountInString(gnomeSample), Backend: "ibus"}
	if r != want {
		t.Errorf("hold.stop = %+v, want %+v\n%s", r, want, d.LogTail(30))
	}
	field.WaitText(t, gnomeSample)
}

// TestLiveTextPreeditOnGNOME: live text on the real GNOME Shell 48
// through IBus, the route with a preedit: while the key is held, a guess
// at the piece being spoken shows in the GTK 4 field as its preedit
// (underlined, not its text) before the piece is committed, and each
// piece replaces it; at the end no preedit is left, and the field's text
// is exactly `ctl last` and the separator (nothing of a guess stayed).
// jfk.wav replayed into the microphone, the real Silero child deciding
// the pieces, the fake decoder's words ("piece of" and the audio's
// length: a guess says a length no piece has).
func TestLiveTextPreeditOnGNOME(t *testing.T) {
	desk := testdesk.Start(t)
	bus := desk.IBus(t)
	field := desk.Field(t, testdesk.FieldOptions{GTK: 4})
	d := liveDaemonEnv(t, []string{"DISPLAY=", "WAYLAND_DISPLAY=" + desk.WaylandSocket, "IBUS_ADDRESS=" + bus, "XDG_CURRENT_DESKTOP=GNOME"})
	d.WaitFor(30*time.Second, "the typing child to run", func() bool { return d.Child("type").State == "running" })
	if st := d.Status(); st.Typing.Route != "ibus" {
		t.Fatalf("status typing = %+v, want the ibus route", st.Typing)
	}
	c := d.Client()
	defer c.Close()
	holdOpen(t, c)
	// A guess shows before the first piece is in the field's text.
	guess := field.Wait(t, "a guess shown as the preedit while the key is held", func(ev testdesk.Event) bool {
		if ev.Ev == "text" && ev.Text != "" {
			t.Fatalf("the field's text became %q before any preedit showed", ev.Text)
		}
		return ev.Ev == "preedit" && ev.Text != ""
	})
	if !regexp.MustCompile(`^piece of [0-9]+$`).MatchString(guess.Text) {
		t.Errorf("preedit %q, want a guess in the fake decoder's words", guess.Text)
	}
	shown := guess.Text // the preedit the field shows, as its events say
	first := field.Wait(t, "the first piece committed while the key is held", func(ev testdesk.Event) bool {
		if ev.Ev == "preedit" {
			shown = ev.Text
		}
		return ev.Ev == "text" && ev.Text != ""
	})
	if !regexp.MustCompile(`^piece of [0-9]+ $`).MatchString(first.Text) {
		t.Errorf("the field's text became %q, want one piece and its space", first.Text)
	}
	d.waitReplayed(wavDuration(t, world.jfk))
	r := d.stopHold(c)
	last := d.lastByCtl()
	want := last.Text + " "
	field.Wait(t, "the field's text to be ctl last and the separator, no preedit left", func(ev testdesk.Event) bool {
		if ev.Ev == "preedit" {
			shown = ev.Text
		}
		return field.Text() == want && shown == ""
	})
	if r.Outcome != "typed" && r.Outcome != "committed" || r.Backend != "ibus" || r.Chars != utf8.RuneCountInString(last.Text) {
		t.Errorf("hold.stop = %+v, want typed (or committed) through ibus, %d characters", r, utf8.RuneCountInString(last.Text))
	}
	if !strings.HasPrefix(field.Text(), first.Text) {
		t.Errorf("the field holds %q; it held %q while the key was down: something was taken back", field.Text(), first.Text)
	}
	noControl(t, field.Text())
	t.Logf("guess %q; while held %q; in the end %q", guess.Text, first.Text, field.Text())
}
