package untrusted

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
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
			got := Line(tt.in, tt.max)
			if got != tt.want {
				t.Errorf("Line(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
			if again := Line(got, tt.max); again != got {
				t.Errorf("Line is not idempotent: %q -> %q", got, again)
			}
		})
	}
}

func TestTranscript(t *testing.T) {
	tests := []struct{ in, want string }{
		{" hello\nworld\r\n", "hello world"},
		{"a\tb", "a b"},
		{"Grüße ✓", "Grüße ✓"},
		{"", ""},
		{"  \u3000\u00a0 ", ""},
		{"one  two\u2028three", "one two three"},
		{"nul\x00inside", "nulinside"},
		{"esc\x1b[1m c1\u009bx del\x7f", "esc[1m c1x del"},
		{"bad\xffutf8", "badutf8"},
		// Data for the host, never scrubbed: format characters stay.
		{"RTL \u200fמילה \u202eevil", "RTL \u200fמילה \u202eevil"},
		{"zero\u200bwidth soft\u00adhyphen", "zero\u200bwidth soft\u00adhyphen"},
		{"U+FFFD \ufffd stays", "U+FFFD \ufffd stays"},
	}
	for _, tt := range tests {
		if got := Transcript(tt.in); got != tt.want {
			t.Errorf("Transcript(%+q) = %+q, want %+q", tt.in, got, tt.want)
		}
	}
}

const unicodeText = "Grüße, naïve café — Ελληνικά, 日本語のテキスト, 한국어, עברית, العربية, emoji 😀👍🏽 and ✓"

func TestTyped(t *testing.T) {
	tests := []struct{ in, want string }{
		{"hello", "hello"},
		{"", ""},
		{"a\nb", "a b"},
		{"a\r\nb", "a b"},
		{"a\rb", "a b"},
		{"a\n\nb", "a  b"},
		{"a\tb\vc\fd", "a b c d"},
		{"a\u2028b\u2029c\u0085d", "a b c d"},
		{"bell\a esc\x1b[31m del\x7f nul\x00", "bell esc[31m del nul"},
		{"c1\u009bx", "c1x"},
		{"bad\xffutf8", "badutf8"},
		{"  keep  spaces  ", "  keep  spaces  "},
		{unicodeText, unicodeText},
		{"emoji 😀 and RTL \u200fמילה", "emoji 😀 and RTL \u200fמילה"},
	}
	for _, tt := range tests {
		if got := Typed(tt.in).Text(); got != tt.want {
			t.Errorf("Typed(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestControlsAgree: every rule treats a control character the same way.
// One that breaks a line becomes a space; any other is dropped, never
// turned into a space (the daemon's old transcript rule turned NUL into a
// space while the speech and typing rules dropped it).
func TestControlsAgree(t *testing.T) {
	question := func(s string) string {
		q, err := question(s)
		if err != nil {
			t.Fatalf("Question(%+q): %v", s, err)
		}
		return q
	}
	rules := map[string]func(string) string{
		"Line":       func(s string) string { return Line(s, 0) },
		"Transcript": Transcript,
		"Typed":      func(s string) string { return Typed(s).Text() },
		"Question":   question,
	}
	for r := rune(0); r <= 0x9f; r++ {
		if r >= 0x20 && r < 0x7f || r >= 0xa0 {
			continue
		}
		in := "a" + string(r) + "b"
		want := "ab"
		if isBreak(r) {
			want = "a b"
		}
		for name, rule := range rules {
			if got := rule(in); got != want {
				t.Errorf("%s(%+q) = %+q, want %+q", name, in, got, want)
			}
		}
	}
}

// stripped is s without what any rule may remove or turn into a space:
// what is left must survive every rule unchanged (words are never
// rewritten).
func stripped(s string, drop func(rune) bool) string {
	return strings.Map(func(r rune) rune {
		if r == utf8.RuneError || isSpace(r) || isControl(r) || drop(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
}

func never(rune) bool { return false }

var seeds = []string{
	"", "hello", "a\nb", "a\r\nb\r", "\u202e\x00x", "\xff", " a  b ", "\t\u3000\u00a0",
	"a\x00b", "a\u0085b\u2028c", "\ufffd", unicodeText, "می\u200cخواهی؟", "a\u200d\u200db",
}

func FuzzLine(f *testing.F) {
	for _, s := range seeds {
		f.Add(s, 5)
		f.Add(s, 0)
	}
	f.Fuzz(func(t *testing.T, in string, max int) {
		got := Line(in, max)
		if !utf8.ValidString(got) {
			t.Fatalf("Line(%+q) = %+q: invalid UTF-8", in, got)
		}
		if max > 0 && utf8.RuneCountInString(got) > max {
			t.Fatalf("Line(%+q, %d) = %+q: too long", in, max, got)
		}
		for _, r := range got {
			if isLineStripped(r) || (isSpace(r) && r != ' ') {
				t.Fatalf("Line(%+q) = %+q: kept %U", in, got, r)
			}
		}
		if strings.HasPrefix(got, " ") || strings.HasSuffix(got, " ") || strings.Contains(got, "  ") {
			t.Fatalf("Line(%+q) = %+q: spaces not folded and trimmed", in, got)
		}
		if again := Line(got, max); again != got {
			t.Fatalf("Line(%+q) = %+q, again %+q", in, got, again)
		}
		if max <= 0 && stripped(got, isBidi) != stripped(in, isBidi) {
			t.Fatalf("Line(%+q) = %+q: rewrote the text", in, got)
		}
	})
}

func FuzzTranscript(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := Transcript(in)
		if !utf8.ValidString(got) {
			t.Fatalf("Transcript(%+q) = %+q: invalid UTF-8", in, got)
		}
		for _, r := range got {
			if isControl(r) || (isSpace(r) && r != ' ') {
				t.Fatalf("Transcript(%+q) = %+q: kept %U", in, got, r)
			}
		}
		if strings.HasPrefix(got, " ") || strings.HasSuffix(got, " ") || strings.Contains(got, "  ") {
			t.Fatalf("Transcript(%+q) = %+q: spaces not folded and trimmed", in, got)
		}
		if again := Transcript(got); again != got {
			t.Fatalf("Transcript(%+q) = %+q, again %+q", in, got, again)
		}
		if stripped(got, never) != stripped(in, never) {
			t.Fatalf("Transcript(%+q) = %+q: rewrote the text", in, got)
		}
	})
}

func FuzzTyped(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := Typed(in).Text()
		if !utf8.ValidString(got) {
			t.Fatalf("Typed(%+q) = %+q: invalid UTF-8", in, got)
		}
		for _, r := range got {
			if isControl(r) || isBreak(r) {
				t.Fatalf("Typed(%+q) = %+q: kept %U", in, got, r)
			}
		}
		if again := Typed(got).Text(); again != got {
			t.Fatalf("Typed(%+q) = %+q, again %+q", in, got, again)
		}
		if stripped(got, never) != stripped(in, never) {
			t.Fatalf("Typed(%+q) = %+q: rewrote the text", in, got)
		}
		// No folding: every space of the input that is not a break stays.
		if strings.Count(got, " ") < strings.Count(strings.ToValidUTF8(in, ""), " ") {
			t.Fatalf("Typed(%+q) = %+q: lost spaces", in, got)
		}
	})
}

// FuzzRulesAgree: the rules are layers of one policy, not rivals.
// Typing then cleaning a transcript is cleaning it; speaking a transcript
// is speaking its source; an accepted question is already a clean Line.
func FuzzRulesAgree(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if a, b := Transcript(Typed(in).Text()), Transcript(in); a != b {
			t.Fatalf("Transcript(Typed(%+q)) = %+q, Transcript = %+q", in, a, b)
		}
		if a, b := Line(Transcript(in), 0), Line(in, 0); a != b {
			t.Fatalf("Line(Transcript(%+q)) = %+q, Line = %+q", in, a, b)
		}
		if q, err := question(in); err == nil && Line(q, 0) != q {
			t.Fatalf("Question(%+q) = %+q is not a clean Line (%+q)", in, q, Line(q, 0))
		}
	})
}

// TestSpaceIsUnicodeSpace: the white space the rules fold is exactly
// unicode.IsSpace, the set strings.Fields splits on.
func TestSpaceIsUnicodeSpace(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if isSpace(r) != unicode.IsSpace(r) {
			t.Fatalf("isSpace(%U) = %v, unicode.IsSpace = %v", r, isSpace(r), unicode.IsSpace(r))
		}
	}
}
