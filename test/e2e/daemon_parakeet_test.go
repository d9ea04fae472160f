package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// TestDaemonParakeetDictation: the real yazsesd with the real yaz-decode
// --serve on the generated Parakeet model, set through decode.model as a
// whisper model is: 3 s of jfk.wav played into the microphone during a
// hold are decoded by Parakeet and typed into the focused X window, exactly
// the text `last` keeps; a `transcribe` of jfk.wav over the socket gives
// the segments yaz-decode prints for the file itself.
func TestDaemonParakeetDictation(t *testing.T) {
	t.Parallel()
	model, _ := parakeet(t)
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	speech := speechWAV(t, 3*time.Second)
	d := startDaemon(t, dictationConfig(speech, false).With("decode.model", q(model)), x.DaemonEnv()...)
	c := d.Client()
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	r := d.stopHold(c)
	if r.Outcome != "typed" || r.Backend != "x11" {
		t.Fatalf("hold.stop = %+v, want typed in-process (x11)\n%s", r, d.LogTail(20))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, err := c.Last(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(l.Text) == "" || l.Outcome != "typed" || r.Chars != utf8.RuneCountInString(l.Text) {
		t.Fatalf("last = %+v after hold.stop %+v, want the non-empty typed transcript", l, r)
	}
	rec.WaitFor(t, l.Text)
	if got := rec.Settled(t); got != l.Text {
		t.Errorf("window received %q, want %q (last) and nothing after it", got, l.Text)
	}
	// Parakeet did the work: the decoder's log says which engine it loaded.
	engine := ""
	for _, m := range d.LogRecords() {
		if m["child"] == "decode" && m["msg"] == "model loaded" {
			engine, _ = m["engine"].(string)
		}
	}
	if engine != "parakeet" {
		t.Errorf("the decoder loaded engine %q, want parakeet\n%s", engine, d.LogTail(20))
	}
	if strings.Contains(d.Log.String(), l.Text) {
		t.Error("the daemon's log holds the transcript")
	}

	tr, err := c.Transcribe(ctx, world.jfk)
	if err != nil {
		t.Fatalf("transcribe: %v\n%s", err, d.LogTail(20))
	}
	var got []jsonSegment
	for _, s := range tr.Segments {
		got = append(got, jsonSegment{StartMs: s.StartMs, EndMs: s.EndMs, Text: s.Text})
	}
	stdout, stderr, code := command(t, ctx, nil, "yaz-decode", "-m", model, "-t", "1", "-o", "json", world.jfk)
	if code != 0 {
		t.Fatalf("yaz-decode: exit %d\n%s", code, tail(stderr, 10))
	}
	var doc jsonDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Segments) == 0 {
		t.Fatal("no segments for jfk.wav: the comparison proves nothing")
	}
	if diff := cmp.Diff(doc.Segments, got); diff != "" {
		t.Errorf("the daemon's transcribe differs from yaz-decode on the file (-yaz-decode +daemon):\n%s", diff)
	}
}
