// Package untrusted is the one place for the rules applied to text YazSes
// did not write: an ask_human question from an MCP client ([CheckQuestion]),
// the decoder's transcript of a dictation or of an answer ([Transcript]),
// the text an injection backend types ([Typed]), and the text spoken by
// yaz-speak or shown in a desktop notification ([Line]). Every package that
// handles such text calls these functions; none has rules of its own. The
// package is pure Go with no dependencies outside the standard library.
//
// Rules every function shares:
//
//   - Control characters (C0 U+0000–U+001F, DEL U+007F, C1 U+0080–U+009F)
//     are removed. The ones that break or space a line (TAB, LF, VT, FF, CR,
//     NEL) and the Unicode line and paragraph separators (U+2028, U+2029)
//     become a space instead: nothing YazSes types or speaks presses Enter.
//     Any other control character is dropped without a trace, never turned
//     into a space: "a\x00b" is "ab" under every rule. (Until this package,
//     the daemon's transcript rule turned every control character into a
//     space while the speech and typing rules dropped it; a transcript
//     typed by the daemon and the same text spoken or typed by yaz-speak
//     or yaz-type differed. Dropping is what docs/design.md, invariant 9, says:
//     control characters are removed.)
//   - Invalid UTF-8 bytes are dropped ([CheckQuestion] refuses them instead).
//   - Words are never rewritten: the result is the input minus what the
//     rule lists, with spaces where it says so.
//
// Each rule is checked by a Go fuzz test whose seed corpus runs with the
// package's tests, and by FuzzRulesAgree: Transcript(Typed(s).Text()) is
// Transcript(s), Line(Transcript(s)) is Line(s), and an accepted question
// is a fixed point of Line.
package untrusted

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line makes text one line that is safe to speak or show: what yaz-speak
// speaks (lib/tts) and what a desktop notification shows (yazsesd's notify package).
//
//   - control characters are removed as the package says, and so are the
//     bidirectional controls that can make text read differently from how
//     it is stored (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069);
//   - line breaks, tabs and every other Unicode white space (unicode.IsSpace:
//     NBSP, U+3000, …) become spaces, and each run of them one space;
//   - the result is trimmed and cut to at most max runes (max <= 0: no
//     cap), never ending in a space.
func Line(text string, max int) string { return fold(text, max, isLineStripped) }

// Transcript makes a transcript from the decoder fit to hand on as data:
// the text of a dictation (typed, and kept for `yazsesd ctl last`) and the
// answer ask_human returns to the MCP host. Control characters are removed
// as the package says, white space is folded to single spaces and the
// result is trimmed. Nothing else is removed: a transcript is untrusted
// data for the host, never scrubbed (docs/design.md, invariant 9), so
// bidirectional and other format characters stay.
func Transcript(text string) string { return fold(text, 0, isControl) }

// A TypedText is text that [Typed] cleaned, which is what a typing
// backend types. No other function makes one (its field is unexported),
// so a backend that takes a TypedText cannot be handed a text that was
// not cleaned, and has no cause to clean it again. The zero TypedText is
// the empty text: nothing to type.
type TypedText struct{ text string }

// Text is the cleaned text, which is what is typed.
func (t TypedText) Text() string { return t.text }

// Typed makes text safe to type into a window (cmd/yaz-type/internal/inject): CR LF, CR,
// LF, TAB, VT, FF, NEL and U+2028, U+2029 each become one space; other
// control characters and invalid UTF-8 bytes are removed. Nothing else
// changes: spaces are neither folded nor trimmed, so the caller's text is
// typed as given. It is the one way to make a [TypedText]: the daemon's
// Typer calls it once, where a text enters typing, and every backend
// takes the TypedText.
func Typed(text string) TypedText { return TypedText{text: cleanTyped(text)} }

// cleanTyped is Typed's rule on plain strings.
func cleanTyped(text string) string {
	var b strings.Builder
	b.Grow(len(text))
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
		case r == '\r':
			if i < len(text) && text[i] == '\n' {
				i++
			}
			b.WriteByte(' ')
		case isBreak(r):
			b.WriteByte(' ')
		case isControl(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// fold writes text with the runes strip reports removed, white space
// folded to single spaces, trimmed and cut to max runes (max <= 0: no cap).
func fold(text string, max int, strip func(rune) bool) string {
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
		case isSpace(r):
			space = n > 0
			continue
		case strip(r):
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

// isBreak reports the control characters and separators that break or
// space a line: they become a space under every rule.
func isBreak(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

// isSpace reports runes that become (part of) a single space when white
// space is folded.
func isSpace(r rune) bool { return isBreak(r) || unicode.IsSpace(r) }

// isControl reports C0, DEL and C1.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f }

// isBidi reports the bidirectional controls Line removes.
func isBidi(r rune) bool {
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

func isLineStripped(r rune) bool { return isControl(r) || isBidi(r) }
