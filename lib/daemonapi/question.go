package daemonapi

import (
	"strings"
	"time"

	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/untrusted"
)

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

// AskLabel is what the person hears before every question (docs/design.md,
// invariant 7): an honest label, never a client-supplied name.
const AskLabel = "An MCP client asks: "

// AnswerMinSpeech is the shortest answer the daemon takes: a span of
// speech shorter than this is not an answer.
const AnswerMinSpeech = 250 * time.Millisecond

// AskTiming is what the time a question needs is reckoned from: the
// speaking rate (speak.rate, words a minute) and the pauses of [ask].
type AskTiming struct {
	RateWPM         int
	GuardMs         int
	AnswerSilenceMs int
}

// AskTimingOf is the AskTiming of a configuration.
func AskTimingOf(cfg config.Config) AskTiming {
	return AskTiming{RateWPM: cfg.Speak.Rate, GuardMs: cfg.Ask.GuardMs, AnswerSilenceMs: cfg.Ask.AnswerSilenceMs}
}

// Need is the least time a question needs from the moment it would be
// spoken to the end of the shortest answer: AskLabel and the question
// spoken at RateWPM, the guard pause, and AnswerMinSpeech of speech with
// the AnswerSilenceMs pause that ends it. The spoken length is known only
// once the speech is made, so it is reckoned from the words (runs of
// letters between spaces) at the configured rate, which errs short: a
// question that surely cannot be spoken and answered in the time left is
// never started, one that may be is.
func (t AskTiming) Need(question string) time.Duration {
	rate := max(t.RateWPM, config.MinRate)
	words := len(strings.Fields(AskLabel + question))
	return time.Duration(words)*time.Minute/time.Duration(rate) +
		time.Duration(t.GuardMs)*time.Millisecond + AnswerMinSpeech +
		time.Duration(t.AnswerSilenceMs)*time.Millisecond
}

// TimeoutTooShort is the format of the daemon's InvalidParams message for
// a timeout_s under MinTimeoutS (its one %d); yaz-mcp reads the minimum
// back from it with fmt.Sscanf.
const TimeoutTooShort = "timeout_s must be 0 (the default) or at least %d seconds"

// MinTimeoutS is the shortest timeout_s that ask_human accepts (0, the
// configured default, aside): Need of a one-word question, in whole
// seconds rounded up. A shorter one could never hear an answer: the
// daemon and yaz-mcp refuse it as an invalid argument.
func (t AskTiming) MinTimeoutS() int {
	need := t.Need("Yes?")
	return int((need + time.Second - 1) / time.Second)
}
