package tts

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sanitize makes untrusted text safe to speak or show, and nothing more:
//
//   - control characters are removed: C0 (U+0000–U+001F), DEL (U+007F), C1
//     (U+0080–U+009F), and the bidirectional controls that can make text
//     read differently from how it is stored (U+061C, U+200E, U+200F,
//     U+202A–U+202E, U+2066–U+2069);
//   - line breaks and tabs (LF, CR, TAB, VT, FF, NEL, U+2028, U+2029) and any
//     other Unicode white space become spaces, and each run of white space
//     becomes one space;
//   - invalid UTF-8 bytes are dropped;
//   - the result is trimmed and cut to at most max runes (max <= 0: no cap).
//
// Words are never rewritten: the result is the input minus what is listed
// above.
func Sanitize(text string, max int) string {
	var b strings.Builder
	b.Grow(len(text))
	n := 0         // runes written
	space := false // a space is pending
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			continue // invalid byte
		case isFolded(r):
			space = n > 0
			continue
		case isStripped(r):
			continue
		}
		if max > 0 && n+btoi(space)+1 > max {
			break
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// isFolded reports runes that become (part of) a single space.
func isFolded(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', 0x85, 0x2028, 0x2029:
		return true
	}
	return unicode.IsSpace(r)
}

// isStripped reports runes that are removed outright.
func isStripped(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
