package question

import "testing"

// A question's slot moves forward only: proven silent is kept only while
// nothing said audio may have been heard; audible is final. Nothing
// reserved stays so (settle does nothing).
func TestSlotState(t *testing.T) {
	for _, tc := range []struct {
		name       string
		steps      func(s *slot)
		want       slotState
		wantReason string
	}{
		{"reserved, nothing known: charged by settle", func(s *slot) {}, slotReserved, ""},
		{"speaker never started", func(s *slot) { s.silent("tts_unavailable") }, slotSilent, "tts_unavailable"},
		{"first proof wins", func(s *slot) { s.silent("busy"); s.silent("holding") }, slotSilent, "busy"},
		{"started", func(s *slot) { s.audible() }, slotAudible, ""},
		{"started, then failed unheard", func(s *slot) { s.audible(); s.silent("tts_unavailable") }, slotAudible, ""},
		{"audible after silent: charged", func(s *slot) { s.silent("cancelled"); s.audible() }, slotAudible, ""},
	} {
		s := slot{tok: "t", state: slotReserved}
		tc.steps(&s)
		if s.state != tc.want || s.reason != tc.wantReason {
			t.Errorf("%s: state %d reason %q, want %d %q", tc.name, s.state, s.reason, tc.want, tc.wantReason)
		}
	}
	var none slot
	none.audible()
	none.silent("busy")
	if none.state != slotNone {
		t.Errorf("a slot never reserved moved to %d", none.state)
	}
}
