package untrusted

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxQuestionRunes caps an ask_human question, counted after CheckQuestion has
// removed control and invisible characters.
const MaxQuestionRunes = 500

// Errors of CheckQuestion. Their text never holds the question.
var (
	// ErrQuestionInvalid: the question is not valid UTF-8, or holds U+FFFD,
	// the mark a decoder leaves where it met invalid bytes.
	ErrQuestionInvalid = errors.New("question is not valid UTF-8 text")
	// ErrQuestionEmpty: nothing visible is left once cleaned.
	ErrQuestionEmpty = errors.New("question is empty")
	// ErrQuestionTooLong: more than MaxQuestionRunes once cleaned.
	ErrQuestionTooLong = errors.New("question is too long")
)

// The two joiners kept between visible characters.
const (
	zwnj = '\u200c' // ZERO WIDTH NON-JOINER: Persian, Kurdish, Indic scripts
	zwj  = '\u200d' // ZERO WIDTH JOINER: emoji sequences, Indic conjuncts
)

// A Question is an ask_human question that [CheckQuestion] accepted:
// cleaned, visible, at most MaxQuestionRunes. No other function makes one
// (its field is unexported), so code that takes a Question cannot be
// handed an unchecked string. The zero Question is no checked question:
// its Text is empty.
type Question struct{ text string }

// Text is the cleaned question, which is what is spoken.
func (q Question) Text() string { return q.text }

// CheckQuestion cleans an ask_human question and checks it. It is the one
// way to make a [Question]: the daemon calls it once, where the question
// enters it (its ask_human method), and everything after takes the
// Question. yaz-mcp calls it too (through daemonapi.CheckQuestion) only to
// answer a bad question with invalid_argument before it dials, as its
// error vocabulary requires with no daemon running; both accept exactly
// the same questions:
//
//   - Text that is not valid UTF-8, or holds U+FFFD REPLACEMENT CHARACTER
//     (what a JSON decoder puts where it met invalid bytes), is refused
//     with ErrQuestionInvalid: it is never spoken with the gaps patched.
//   - Invisible format characters (Unicode category Cf: U+200B ZERO WIDTH
//     SPACE, U+2060 WORD JOINER, U+FEFF, the soft hyphen, bidirectional
//     controls, tag characters, …) are removed, except the two joiners
//     real scripts need: U+200C ZERO WIDTH NON-JOINER (Persian, Kurdish,
//     Indic scripts) and U+200D ZERO WIDTH JOINER (emoji sequences, Indic
//     conjuncts). A joiner is kept only between two characters that are
//     letters, digits, punctuation, symbols or combining marks, and a run
//     of joiners becomes one.
//   - Control characters are removed and white space folded as [Line]
//     does; the result is trimmed.
//   - What is left must hold at least one visible character (a letter,
//     digit, punctuation mark or symbol other than the blank Hangul
//     fillers and the blank Braille pattern), else ErrQuestionEmpty; a
//     question of only spaces, zero-width characters or combining marks
//     is empty.
//   - It may be at most MaxQuestionRunes runes, counting every character
//     that is left (spaces, combining marks and kept joiners too, so
//     nothing inflates what is spoken), else ErrQuestionTooLong. Removed
//     characters count nothing.
//
// It returns the cleaned question, which is what is spoken.
func CheckQuestion(q string) (Question, error) {
	s, err := cleanQuestion(q)
	if err != nil {
		return Question{}, err
	}
	return Question{text: s}, nil
}

// cleanQuestion is CheckQuestion's rule on plain strings.
func cleanQuestion(q string) (string, error) {
	if !utf8.ValidString(q) || strings.ContainsRune(q, utf8.RuneError) {
		return "", ErrQuestionInvalid
	}
	q = strings.Map(func(r rune) rune {
		if stripFormat(r) {
			return -1
		}
		return r
	}, q)
	q = Line(q, 0)
	if strings.ContainsRune(q, zwj) || strings.ContainsRune(q, zwnj) {
		q = Line(dropLooseJoiners(q), 0)
	}
	n, visible := 0, false
	for _, r := range q {
		n++
		visible = visible || isVisible(r)
	}
	switch {
	case !visible:
		return "", ErrQuestionEmpty
	case n > MaxQuestionRunes:
		return "", ErrQuestionTooLong
	}
	return q, nil
}

// dropLooseJoiners keeps a joiner only between two joinable characters,
// one per run.
func dropLooseJoiners(q string) string {
	rs := []rune(q)
	out := make([]rune, 0, len(rs))
	for i, r := range rs {
		if r == zwj || r == zwnj {
			prevOK := len(out) > 0 && joinable(out[len(out)-1])
			nextOK := i+1 < len(rs) && joinable(rs[i+1])
			if !prevOK || !nextOK {
				continue
			}
		}
		out = append(out, r)
	}
	return string(out)
}

// stripFormat reports the invisible format characters Question removes:
// category Cf but the two joiners.
func stripFormat(r rune) bool {
	return r != zwj && r != zwnj && unicode.Is(unicode.Cf, r)
}

// isVisible reports a character that shows on its own: a letter, digit,
// punctuation mark or symbol, but not one of the blank fillers.
func isVisible(r rune) bool {
	switch r {
	case '\u115f', '\u1160', '\u3164', '\uffa0', // Hangul fillers
		'\u2800': // BRAILLE PATTERN BLANK
		return false
	}
	return unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S)
}

// isMark reports a combining mark (it shows on the character before it).
func isMark(r rune) bool { return unicode.Is(unicode.M, r) }

// joinable reports a character a joiner may stand next to.
func joinable(r rune) bool { return isVisible(r) || isMark(r) }
