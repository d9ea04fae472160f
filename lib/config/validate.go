package config

import (
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/yazses/yazses/lib/keyname"
)

// problem is one bad value, found after decoding.
type problem struct{ key, msg string }

// Limits of the values the checks accept.
const (
	maxTimeoutS       = 3600
	maxPromptRunes    = 1000
	maxThreads        = 64
	maxBeamSize       = 8 // whisper.cpp's WHISPER_MAX_DECODERS
	minAuditBytes     = 4096
	maxAuditBytes     = 1 << 30
	maxAuditKeep      = 100
	maxNotifyPerMin   = 60
	maxPreRollMs      = 2000
	maxTailMs         = 2000
	minAutoStopMs     = 300
	maxAutoStopMs     = 60000
	minEagerPauseMs   = 200
	maxEagerPauseMs   = 5000
	maxPasteOverChars = 1_000_000
	maxSeparator      = 4
	maxGuardMs        = 5000
	maxMinUtterMs     = 5000
	maxAnswerSilentMs = 10000
	minAnswerSilentMs = 200
	maxAnswerS        = 300
	// Bounds of dictation.post_process_timeout_ms: long enough for a
	// small local model's clean-up of a sentence, short enough that a
	// hung filter never holds a dictation for more than half a minute.
	minPostProcessMs = 100
	maxPostProcessMs = 30000
)

// Bounds of dictation.max_hold_s: a hold's audio (pre-roll, hold, tail)
// stays under yaz-decode serve's 5-minute cap on one utterance.
const (
	minMaxHoldS = 5
	maxMaxHoldS = 240
)

var (
	// languageRE is a whisper language code ("en", "yue").
	languageRE = regexp.MustCompile(`^[a-z]{2,3}$`)
	// deviceRE is a yaz-decode --device value (cmd/yaz-decode/internal/asr.ParseDevice, which
	// this package cannot link: it is cgo).
	deviceRE = regexp.MustCompile(`^(auto|cpu|gpu|gpu:[0-9]{1,3})$`)
	// voiceRE is the shape of espeak-ng voice names (as package tts checks).
	voiceRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.+/-]*$`)
	// keyRE is a Linux input event code name.
	keyRE = regexp.MustCompile(`^(KEY|BTN)_[A-Z0-9_]+$`)
)

// validate checks every value of a decoded Config.
func validate(c Config) []problem {
	var ps []problem
	bad := func(key, format string, args ...any) {
		ps = append(ps, problem{key, fmt.Sprintf(format, args...)})
	}
	between := func(key string, v, lo, hi int64) {
		if v < lo || v > hi {
			bad(key, "must be between %d and %d, got %d", lo, hi, v)
		}
	}
	oneOf := func(key, v string, allowed []string) {
		if !slices.Contains(allowed, v) {
			bad(key, "must be %s, got %q", quoteList(allowed), v)
		}
	}
	prompt := func(key, v string) {
		if !utf8.ValidString(v) {
			bad(key, "must be valid UTF-8")
		} else if n := utf8.RuneCountInString(v); n > maxPromptRunes {
			bad(key, "must be at most %d characters, got %d", maxPromptRunes, n)
		}
	}

	between("budget.ask_human_per_hour", int64(c.Budget.AskHumanPerHour), 0, MaxAskHumanPerHour)

	between("ask.max_timeout_s", int64(c.Ask.MaxTimeoutS), 1, maxTimeoutS)
	if c.Ask.DefaultTimeoutS < 1 || c.Ask.MaxTimeoutS >= 1 && c.Ask.DefaultTimeoutS > c.Ask.MaxTimeoutS {
		bad("ask.default_timeout_s", "must be between 1 and ask.max_timeout_s (%d), got %d", c.Ask.MaxTimeoutS, c.Ask.DefaultTimeoutS)
	}
	between("ask.answer_silence_ms", int64(c.Ask.AnswerSilenceMs), minAnswerSilentMs, maxAnswerSilentMs)
	between("ask.max_answer_s", int64(c.Ask.MaxAnswerS), 1, maxAnswerS)
	between("ask.guard_ms", int64(c.Ask.GuardMs), 0, maxGuardMs)

	if c.Decode.Model == "" {
		bad("decode.model", "must not be empty")
	}
	if c.Decode.Language != "auto" && !languageRE.MatchString(c.Decode.Language) {
		bad("decode.language", `must be a language code such as "en", or "auto", got %q`, c.Decode.Language)
	}
	between("decode.threads", int64(c.Decode.Threads), 0, maxThreads)
	prompt("decode.prompt", c.Decode.Prompt)
	between("decode.beam_size", int64(c.Decode.BeamSize), 1, maxBeamSize)
	if !deviceRE.MatchString(c.Decode.Device) {
		bad("decode.device", `must be "auto", "cpu", "gpu" or "gpu:N" (N from yaz-decode --list-devices), got %q`, c.Decode.Device)
	}

	oneOf("vad.engine", c.VAD.Engine, []string{VADAuto, VADSilero, VADEnergy})
	if c.VAD.Model == "" {
		bad("vad.model", "must not be empty")
	}
	if !(c.VAD.Threshold >= MinVADThreshold && c.VAD.Threshold <= MaxVADThreshold) {
		bad("vad.threshold", "must be between %g and %g, got %g", MinVADThreshold, MaxVADThreshold, c.VAD.Threshold)
	}

	if len(c.Speak.Voice) > 100 || !voiceRE.MatchString(c.Speak.Voice) {
		bad("speak.voice", `must be an espeak-ng voice name such as "en-us", got %q`, c.Speak.Voice)
	}
	between("speak.rate", int64(c.Speak.Rate), MinRate, MaxRate)
	if strings.ContainsFunc(c.Speak.Device, isControl) {
		bad("speak.device", "must not contain control characters")
	}

	if strings.ContainsFunc(c.Capture.Device, isControl) {
		bad("capture.device", "must not contain control characters")
	}
	oneOf("capture.backend", c.Capture.Backend, CaptureBackends)
	oneOf("capture.mode", c.Capture.Mode, []string{CaptureOnDemand, CaptureAlways})
	between("capture.pre_roll_ms", int64(c.Capture.PreRollMs), 0, maxPreRollMs)

	prompt("dictation.prompt", c.Dictation.Prompt)
	oneOf("dictation.inject", c.Dictation.Inject, InjectBackends)
	between("dictation.paste_over_chars", int64(c.Dictation.PasteOverChars), 0, maxPasteOverChars)
	if s := c.Dictation.Separator; strings.Trim(s, " ") != "" || len(s) > maxSeparator {
		bad("dictation.separator", "must be at most %d spaces (\"\" for none; never a line break: nothing types an Enter), got %q", maxSeparator, s)
	}
	between("dictation.min_utterance_ms", int64(c.Dictation.MinUtteranceMs), 0, maxMinUtterMs)
	between("dictation.tail_ms", int64(c.Dictation.TailMs), 0, maxTailMs)
	if v := c.Dictation.AutoStopMs; v != 0 && (v < minAutoStopMs || v > maxAutoStopMs) {
		bad("dictation.auto_stop_ms", "must be 0 (off) or between %d and %d, got %d", minAutoStopMs, maxAutoStopMs, v)
	}
	if v := c.Dictation.EagerPauseMs; v != 0 && (v < minEagerPauseMs || v > maxEagerPauseMs) {
		bad("dictation.eager_pause_ms", "must be 0 (off) or between %d and %d, got %d", minEagerPauseMs, maxEagerPauseMs, v)
	}
	between("dictation.max_hold_s", int64(c.Dictation.MaxHoldS), minMaxHoldS, maxMaxHoldS)
	for i, r := range c.Dictation.Replace {
		key := indexKey("dictation.replace", i)
		if strings.TrimSpace(r.From) == "" {
			bad(key+".from", "must not be empty")
		}
		if !utf8.ValidString(r.From) || !utf8.ValidString(r.To) || strings.ContainsFunc(r.From+r.To, isControl) {
			bad(key, "must be valid UTF-8 without control characters")
		}
	}
	if pp := c.Dictation.PostProcess; len(pp) > 0 {
		if pp[0] == "" {
			bad("dictation.post_process", "must name a program: a non-empty array of strings, or [] for none")
		}
		for i, a := range pp {
			if strings.ContainsRune(a, 0) {
				bad(indexKey("dictation.post_process", i), "must not contain a NUL character")
			}
		}
	}
	if len(c.Dictation.PostProcess) > 0 && liveOn(c.Dictation) {
		bad("dictation.post_process", "is not combined with dictation.live (live pieces are typed before the whole text exists, so no command could see it): set one of the two")
	}
	between("dictation.post_process_timeout_ms", int64(c.Dictation.PostProcessTimeoutMs), minPostProcessMs, maxPostProcessMs)

	if !keyRE.MatchString(c.Hotkey.Key) {
		bad("hotkey.key", `must be a Linux input key name such as "KEY_RIGHTCTRL", got %q`, c.Hotkey.Key)
	} else if _, err := keyname.Code(c.Hotkey.Key); err != nil {
		bad("hotkey.key", `unknown key %q: use a name from linux/input-event-codes.h such as "KEY_RIGHTCTRL" or "KEY_F13"`, c.Hotkey.Key)
	}
	oneOf("hotkey.mode", c.Hotkey.Mode, []string{HotkeyHold, HotkeyToggle})
	oneOf("hotkey.source", c.Hotkey.Source, []string{HotkeySourceEvdev, HotkeySourcePortal})
	if c.Hotkey.Device != "" && !filepath.IsAbs(c.Hotkey.Device) {
		bad("hotkey.device", "must be an absolute path such as /dev/input/event3, or empty")
	}

	between("notify.per_minute", int64(c.Notify.PerMinute), 1, maxNotifyPerMin)

	between("audit.max_bytes", c.Audit.MaxBytes, minAuditBytes, maxAuditBytes)
	between("audit.keep", int64(c.Audit.Keep), 0, maxAuditKeep)

	for _, ch := range c.Children.list() {
		argv := *ch.argv
		if len(argv) == 0 || argv[0] == "" {
			bad(ch.key, "must name a program: a non-empty array of strings")
			continue
		}
		for i, a := range argv {
			if strings.ContainsRune(a, 0) {
				bad(indexKey(ch.key, i), "must not contain a NUL character")
			}
		}
	}
	return ps
}

// liveOn reports whether dictation.live (typing pieces while the key is
// held) is set: it is read by the field's name, so that this check holds
// in a tree with or without that key.
func liveOn(d Dictation) bool {
	f := reflect.ValueOf(d).FieldByName("Live")
	return f.IsValid() && !f.IsZero()
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// quoteList writes `"a" or "b"`, or `one of "a", "b", "c"`.
func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = fmt.Sprintf("%q", v)
	}
	if len(q) == 2 {
		return q[0] + " or " + q[1]
	}
	return "one of " + strings.Join(q, ", ")
}
