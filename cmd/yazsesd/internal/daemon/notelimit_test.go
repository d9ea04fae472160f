package daemon

import (
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/notify"
)

// TestRefusalNotesLimited: a refused hold.start notifies at most once per
// cause in refusalNoteEvery, so holding or hammering the key does not
// flood; another cause, or the next window, notifies again.
func TestRefusalNotesLimited(t *testing.T) {
	var l noteLimit
	t0 := time.Unix(1000, 0)
	steps := []struct {
		cause string
		at    time.Duration
		want  bool
	}{
		{"model_missing", 0, true},
		{"model_missing", 100 * time.Millisecond, false},
		{"model_missing", refusalNoteEvery - time.Millisecond, false},
		{"model_invalid", time.Second, true}, // another cause
		{"model_missing", refusalNoteEvery, true},
		{"model_missing", refusalNoteEvery + time.Second, false},
		{"model_missing", 2*refusalNoteEvery + time.Second, true},
	}
	for _, s := range steps {
		if got := l.allow(s.cause, t0.Add(s.at)); got != s.want {
			t.Errorf("allow(%s) at %v = %v, want %v", s.cause, s.at, got, s.want)
		}
	}
}

// TestRefusedKinds: every cause of a decoder down for good has a
// notification that says it, and any other cause the general one.
func TestRefusedKinds(t *testing.T) {
	for cause, want := range map[string]notify.Message{
		"model_missing":        notify.RefusedModelMissing,
		"model_invalid":        notify.RefusedModelInvalid,
		"language_unsupported": notify.RefusedLanguage,
		"decoder_down":         notify.RefusedDecoderDown,
		"crash_loop":           notify.RefusedDecoderDown,
	} {
		m, ok := notify.ByKind(refusedKind(cause))
		if !ok || m != want {
			t.Errorf("cause %s: kind %q gives %q, want %q", cause, refusedKind(cause), m.Body(), want.Body())
		}
	}
}
