package tts

import (
	"testing"
	"unicode/utf8"
)

func TestSanitize(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"plain", "hello world", 0, "hello world"},
		{"empty", "", 0, ""},
		{"only space", " \t\r\n ", 0, ""},
		{"trim", "  hi  ", 0, "hi"},
		{"newlines fold", "one\ntwo\r\nthree", 0, "one two three"},
		{"tabs and runs fold", "a\t\tb   c\v\fd", 0, "a b c d"},
		{"unicode separators", "a\u2028b\u2029c\u0085d", 0, "a b c d"},
		{"nbsp folds", "a\u00a0b", 0, "a b"},
		{"c0 stripped", "he\x00l\x01l\x1bo\x07", 0, "hello"},
		{"ansi escape loses ESC only", "\x1b[31mred", 0, "[31mred"},
		{"del stripped", "a\x7fb", 0, "ab"},
		{"c1 stripped", "a\u0080b\u009bc\u009fd", 0, "abcd"},
		{"bidi overrides stripped", "a\u202ab\u202bc\u202cd\u202de\u202ef", 0, "abcdef"},
		{"bidi isolates stripped", "a\u2066b\u2067c\u2068d\u2069e", 0, "abcde"},
		{"bidi marks stripped", "a\u200eb\u200fc\u061cd", 0, "abcd"},
		{"trojan source", "access\u202e\u2066 // admin\u2069\u2066", 0, "access // admin"},
		{"stripped between spaces keeps one space", "a \x01 b", 0, "a b"},
		{"invalid utf8 dropped", "a\xffb\xc3", 0, "ab"},
		{"non-latin kept", "Grüße, 世界! مرحبا", 0, "Grüße, 世界! مرحبا"},
		{"emoji kept", "ok 👍", 0, "ok 👍"},
		{"leading dash kept", "-v --help", 0, "-v --help"},
		{"markup kept", "<speak>[[h@l'oU]]</speak>", 0, "<speak>[[h@l'oU]]</speak>"},
		{"cap runes", "Grüße", 3, "Grü"},
		{"cap exact", "abc", 3, "abc"},
		{"cap never ends in space", "ab cd", 3, "ab"},
		{"cap counts after stripping", "\x01\x02abcdef", 4, "abcd"},
		{"negative max no cap", "abcdef", -1, "abcdef"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Sanitize(tt.in, tt.max)
			if got != tt.want {
				t.Errorf("Sanitize(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
			if tt.max > 0 && utf8.RuneCountInString(got) > tt.max {
				t.Errorf("Sanitize(%q, %d) has %d runes", tt.in, tt.max, utf8.RuneCountInString(got))
			}
			if again := Sanitize(got, tt.max); again != got {
				t.Errorf("Sanitize is not idempotent: %q -> %q", got, again)
			}
		})
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"hello", "a\nb", "\u202e\x00x", "\xff"} {
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, in string, max int) {
		got := Sanitize(in, max)
		if !utf8.ValidString(got) {
			t.Fatalf("Sanitize(%q) = %q: invalid UTF-8", in, got)
		}
		if max > 0 && utf8.RuneCountInString(got) > max {
			t.Fatalf("Sanitize(%q, %d) = %q: too long", in, max, got)
		}
		for _, r := range got {
			if isStripped(r) || (isFolded(r) && r != ' ') {
				t.Fatalf("Sanitize(%q) = %q: kept %U", in, got, r)
			}
		}
		if got != "" && (got[0] == ' ' || got[len(got)-1] == ' ') {
			t.Fatalf("Sanitize(%q) = %q: not trimmed", in, got)
		}
	})
}
