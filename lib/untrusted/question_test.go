package untrusted

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuestion(t *testing.T) {
	a500 := strings.Repeat("a", MaxQuestionRunes)
	tests := []struct {
		name string
		in   string
		want string
		err  error
	}{
		{"plain", "Is it on?", "Is it on?", nil},
		{"controls stripped, spaces folded", "  Is\tit\x00 \u202eon?\r\n", "Is it on?", nil},

		{"empty", "", "", ErrQuestionEmpty},
		{"spaces only", " \t\n\u3000", "", ErrQuestionEmpty},
		{"zero width space only", "\u200b", "", ErrQuestionEmpty},
		{"every invisible format character", "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e\u2061\u206a\U000E0041", "", ErrQuestionEmpty},
		{"joiners and spaces", "\u200d \u200c \u200d", "", ErrQuestionEmpty},
		{"combining marks only", "\u0301\u0301\u20dd", "", ErrQuestionEmpty},
		{"hangul fillers", "\u3164\u115f\u1160\uffa0", "", ErrQuestionEmpty},
		{"braille blank", "\u2800\u2800", "", ErrQuestionEmpty},
		{"variation selector only", "\ufe0f", "", ErrQuestionEmpty},

		{"invalid utf8", "Is \xff it?", "", ErrQuestionInvalid},
		{"truncated rune", "Is it\xe2\x80", "", ErrQuestionInvalid},
		{"replacement character", "Is \ufffd it?", "", ErrQuestionInvalid},

		{"zero width space inside", "Is it\u200b on?", "Is it on?", nil},
		{"zero width space between spaces", "a \u200b b", "a b", nil},
		{"byte order mark", "\ufeffHello?", "Hello?", nil},
		{"soft hyphen", "deploy\u00adment?", "deployment?", nil},
		{"tag characters", "ok\U000E0041\U000E007F?", "ok?", nil},
		{"word joiner", "a\u2060b", "ab", nil},
		{"persian zwnj kept", "می\u200cخواهی؟", "می\u200cخواهی؟", nil},
		{"emoji zwj sequence kept", "Ship \U0001F468\u200d\U0001F469\u200d\U0001F467?", "Ship \U0001F468\u200d\U0001F469\u200d\U0001F467?", nil},
		{"devanagari zwj kept", "क्\u200dष", "क्\u200dष", nil},
		{"joiner at the edges dropped", "\u200dhello\u200c", "hello", nil},
		{"joiner next to a space dropped", "a \u200db\u200c c", "a b c", nil},
		{"joiner run collapsed", "a\u200d\u200d\u200db", "a\u200db", nil},
		{"variation selector kept", "\u263a\ufe0f?", "\u263a\ufe0f?", nil},
		{"combining accent kept", "cafe\u0301?", "cafe\u0301?", nil},

		{"at the cap", a500, a500, nil},
		{"over the cap", a500 + "a", "", ErrQuestionTooLong},
		{"invisible padding does not count", strings.Repeat("a\u200b", MaxQuestionRunes), a500, nil},
		{"stacked marks count", "a" + strings.Repeat("\u0301", MaxQuestionRunes), "", ErrQuestionTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := question(tt.in)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("Question(%+q) error = %v, want %v", tt.in, err, tt.err)
			}
			if got != tt.want {
				t.Errorf("Question(%+q) = %+q, want %+q", tt.in, got, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "Is") {
				t.Errorf("Question error %q carries the question's text", err)
			}
		})
	}
}

// FuzzQuestion: an accepted question is valid UTF-8, 1 to
// MaxQuestionRunes runes, holds a visible character, no control or
// invisible format character except a joiner between two visible
// characters, and checking it again changes nothing.
func FuzzQuestion(f *testing.F) {
	for _, s := range []string{"Is it on?", "\u200b", "a\u200d\u200db", "می\u200cخواهی", "\xff", " a \u200c "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		q, err := question(in)
		if err != nil {
			if q != "" {
				t.Fatalf("Question(%+q) = %+q with error %v", in, q, err)
			}
			return
		}
		if !utf8.ValidString(q) || q == "" || utf8.RuneCountInString(q) > MaxQuestionRunes {
			t.Fatalf("Question(%+q) accepted %+q", in, q)
		}
		visible := false
		rs := []rune(q)
		for i, r := range rs {
			visible = visible || isVisible(r)
			if r == zwj || r == zwnj {
				if i == 0 || i == len(rs)-1 || !isVisible(rs[i-1]) && !isMark(rs[i-1]) || !isVisible(rs[i+1]) && !isMark(rs[i+1]) {
					t.Fatalf("Question(%+q) = %+q keeps a joiner at %d without visible neighbours", in, q, i)
				}
				continue
			}
			if stripFormat(r) || r < 0x20 || r == 0x7f || r == utf8.RuneError {
				t.Fatalf("Question(%+q) = %+q keeps %U", in, q, r)
			}
		}
		if !visible {
			t.Fatalf("Question(%+q) = %+q has nothing visible", in, q)
		}
		if again, err := question(q); err != nil || again != q {
			t.Fatalf("Question(%+q) = %+q, %v; want it unchanged", q, again, err)
		}
	})
}

// question is CheckQuestion's text, for the tables.
func question(s string) (string, error) {
	q, err := CheckQuestion(s)
	return q.Text(), err
}
