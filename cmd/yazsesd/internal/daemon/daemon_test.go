package daemon

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/yazses/yazses/lib/config"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestApplyReplacements(t *testing.T) {
	reps := []config.Replacement{{From: "yaz says", To: "YazSes"}, {From: "full stop", To: "."}, {From: "um", To: ""}}
	tests := []struct{ in, want string }{
		{"yaz says hello", "YazSes hello"},
		{"hello yaz says", "hello YazSes"},
		{"yaz sayss", "yaz sayss"},         // part of a longer word
		{"ayaz says", "ayaz says"},         // part of a longer word
		{"um, full stop um", ", . "},       // several, in order
		{"umbrella drum", "umbrella drum"}, // never inside words
		{"Grüße yaz says", "Grüße YazSes"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := applyReplacements(tt.in, reps); got != tt.want {
			t.Errorf("applyReplacements(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCleanText(t *testing.T) {
	for in, want := range map[string]string{
		" hello\nworld\r\n": "hello world",
		"a\tb\x00c":         "a bc", // NUL is dropped, as every rule of package untrusted does
		"Grüße ✓":           "Grüße ✓",
	} {
		if got := cleanText(in); got != want {
			t.Errorf("cleanText(%q) = %q, want %q", in, got, want)
		}
	}
}
