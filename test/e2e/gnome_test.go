package e2e

import (
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
