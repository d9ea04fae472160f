package hold

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestSaidSoFar: the context of the next piece is the pieces so far joined
// with one space, at most saidContext bytes of their end, starting at a
// word, and valid UTF-8 when there is no space to cut at.
func TestSaidSoFar(t *testing.T) {
	long := strings.TrimSpace(strings.Repeat("ask not what your country can do for you ", 20))
	for _, tc := range []struct {
		name  string
		texts []string
		want  func(string) bool
	}{
		{"none", nil, func(s string) bool { return s == "" }},
		{"joined", []string{"And so my fellow Americans,", "ask not"}, func(s string) bool { return s == "And so my fellow Americans, ask not" }},
		{"the end of a long text, from a word", []string{long, "the end."}, func(s string) bool {
			return len(s) <= saidContext && len(s) > saidContext-10 && strings.HasSuffix(long+" the end.", " "+s)
		}},
		{"no space: still UTF-8", []string{strings.Repeat("語", 100)}, func(s string) bool {
			return utf8.ValidString(s) && len(s) <= saidContext && len(s) >= saidContext-3
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := saidSoFar(tc.texts); !tc.want(got) {
				t.Errorf("saidSoFar = %q (%d bytes)", got, len(got))
			}
		})
	}
}
