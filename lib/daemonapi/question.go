package daemonapi

import "github.com/yazses/yazses/lib/untrusted"

// MaxQuestionRunes caps a question, counted after CheckQuestion has
// removed control and invisible characters (untrusted.MaxQuestionRunes).
const MaxQuestionRunes = untrusted.MaxQuestionRunes

// Errors of CheckQuestion. Their text never holds the question.
var (
	// ErrQuestionInvalid: the question is not valid UTF-8, or holds U+FFFD.
	ErrQuestionInvalid = untrusted.ErrQuestionInvalid
	// ErrQuestionEmpty: nothing visible is left once cleaned.
	ErrQuestionEmpty = untrusted.ErrQuestionEmpty
	// ErrQuestionTooLong: more than MaxQuestionRunes once cleaned.
	ErrQuestionTooLong = untrusted.ErrQuestionTooLong
)

// CheckQuestion cleans an ask_human question and checks it by the rule of
// untrusted.CheckQuestion (what is removed, what is refused), so the
// daemon, where the question enters it, and yaz-mcp, before it dials,
// accept exactly the same questions. It returns the checked question;
// its Text is what is spoken.
func CheckQuestion(q string) (untrusted.Question, error) { return untrusted.CheckQuestion(q) }
