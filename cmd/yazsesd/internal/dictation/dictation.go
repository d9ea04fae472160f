// Package dictation is the daemon's policy for a push-to-talk hold
// around the hold itself (package hold): the settings a hold starts with,
// the refusal of a hold while the decoder is down for good, and what a
// finished hold comes to for the person: its text shaped (the
// [[dictation.replace]] rules, the transcript rule of package untrusted),
// typed into the focused window or kept for `yazsesd ctl last`, the
// result's outcome and cause, its one audit event and notification, and
// the restart of a decoder that did not answer within the hold's bound.
//
// Nothing here holds state but the refusal notes' clock (NoteLimit); the
// daemon wires it (its hold.* methods, the hotkey, the watch stream).
//
// Privacy: no log line, audit event or result carries the text; they say
// kinds, reasons, counts and durations.
package dictation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/yazses/yazses/cmd/yazsesd/internal/child"
	"github.com/yazses/yazses/cmd/yazsesd/internal/detect"
	"github.com/yazses/yazses/cmd/yazsesd/internal/health"
	"github.com/yazses/yazses/cmd/yazsesd/internal/hold"
	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/cmd/yazsesd/internal/vadlink"
	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/typewire"
	"github.com/yazses/yazses/lib/untrusted"
	"github.com/yazses/yazses/lib/vadspan"
)

// Settings are a hold's settings from the configuration: its hold.Params
// (all but Speculate, which depends on the detector the hold gets) and
// its detector's. A toggled hold (hold.toggle, a toggle hotkey) ends by
// itself after dictation.auto_stop_ms of silence when that is set;
// dictation.eager_pause_ms decodes in pieces, each ending at a pause that
// long; dictation.live types each piece decided while the key is held
// (with eager_pause_ms 0, at config.LivePauseMs pauses).
func Settings(cfg config.Config, toggled bool) (hold.Params, vadspan.Params) {
	maxHold := time.Duration(cfg.Dictation.MaxHoldS) * time.Second
	if maxHold <= 0 { // a configuration not made by config.Load
		maxHold = time.Duration(config.Default().Dictation.MaxHoldS) * time.Second
	}
	pieceMs := cfg.Dictation.PieceMs() // live text implies pieces
	p := hold.Params{MaxHold: maxHold, Pieces: pieceMs > 0, Live: cfg.Dictation.Live}
	if ms := cfg.Dictation.AutoStopMs; toggled && ms > 0 {
		p.AutoStop = time.Duration(ms) * time.Millisecond
	}
	det := TailParams(cfg)
	if p.AutoStop > 0 {
		det.Silences = append(det.Silences, p.AutoStop)
	}
	if p.Pieces {
		det.MinSilence = time.Duration(pieceMs) * time.Millisecond
	}
	return p, det
}

// TailParams are the detector's settings for a hold's tail: [vad]'s
// (vadlink.FromConfig), reporting hold.TailQuiet of silence.
func TailParams(cfg config.Config) vadspan.Params {
	p := vadlink.FromConfig(cfg.VAD)
	p.Silences = []time.Duration{hold.TailQuiet}
	return p
}

// Speculate reports whether a hold on the detector engine decodes at the
// first pause (hold.Params.Speculate). The speculation trusts the
// detector's word that nothing was said after a silence: only the trained
// one's. The energy detector takes the soft end of a word ("Americans"'
// s) for silence, and what the key's release would have kept would be
// cut.
func Speculate(engine string) bool { return engine == detect.Silero }

// ErrDecodeEnded marks a hold's decode whose context ended for the
// decoder's sake (down for good) or the daemon's (stopping), not the
// hold's: the result says the decoder's cause.
var ErrDecodeEnded = errors.New("the decoder is down or the daemon stops")

// ErrShutdown marks a hold's decode that the daemon's stop ended: it was
// not decoded within the time a stop gives it. The result says
// "shutdown", never the decoder's failure.
var ErrShutdown = errors.New("the daemon stopped before the decoding ended")

// Causes a hold's result names (daemonapi.HoldResult.Cause) besides the
// decoder's own (contract 2), the typing's ("typing_…") and those of the
// decoder's state (Failure). docs/design.md lists them all.
const (
	CauseCaptureFailed  = "capture_failed"  // typed, kept or empty: audio was lost
	CauseVADTimeout     = "vad_timeout"     // typed, kept or empty: all was decoded
	CauseVADFailed      = "vad_failed"      // typed, kept or empty: all was decoded
	CauseDecoderTimeout = "decoder_timeout" // failed: no answer within hold.DecodeBound
	CauseDecoderFailed  = "decoder_failed"  // failed: it ended before answering
	CauseDecodeError    = "decode_error"    // failed: it answered an error
	CauseShutdown       = "shutdown"        // failed: the daemon stopped first
)

// Decoder is the resident decoder as a finished hold sees it.
type Decoder interface {
	Status() supervise.Status
	// Restart restarts it (a decoder that did not answer in time).
	Restart()
}

// Typer types text into the focused window (the daemon's injector).
type Typer interface {
	// Type types text and returns the backend used; an outcome other
	// than typed is a *typewire.Error (errors.Is typewire.ErrNoTarget: no
	// window had focus, nothing was typed).
	Type(ctx context.Context, text string) (backend string, err error)
}

// Reporter is told what a finished hold comes to.
type Reporter interface {
	// Audit writes the hold's audit event.
	Audit(audit.Event)
	// Notify shows a desktop notification of a kind (notify.ByKind).
	Notify(kind string)
	// Typing: the text is being typed now (the watch stream's state).
	Typing()
	// Pieces: the state of the hold's live pieces (the watch stream's).
	Pieces(daemonapi.WatchPieces)
}

// Env is what Finish works with.
type Env struct {
	Typer   Typer // nil: no way to type here; the text is kept
	Decoder Decoder
	Replace []config.Replacement // dictation.replace
	// Separator is typed after the text (dictation.separator), unless the
	// text ends with whitespace; the text kept for `ctl last` is without it.
	Separator string
	// Live is what the live typing of the hold's pieces came to
	// (dictation.live: Live.Close); nil without live text.
	Live *LiveReport
	// PostProcess is dictation.post_process: the text goes through it
	// after Replace, before it is typed and kept.
	PostProcess PostProcess
	Report      Reporter
	Log         *slog.Logger
}

// Finish turns a hold that ended with or without a text (not cancelled,
// not dropped by a shutdown) into its result: it types the text (ctx
// bounds the typing), audits one event and notifies what the person must
// know. text is the text kept for `yazsesd ctl last`: "" when there is
// none.
func Finish(ctx context.Context, env Env, r hold.Result) (res daemonapi.HoldResult, text string) {
	if env.Log == nil {
		env.Log = slog.New(slog.DiscardHandler)
	}
	res = daemonapi.HoldResult{Hold: daemonapi.HoldIdle}
	ev := audit.Event{Duration: r.Audio}
	if r.CaptureFailed {
		// Audio is missing from what is decoded: the outcome says how
		// much, and the audit event too (but where the typing says more).
		res.Cause = CauseCaptureFailed
		res.Reason = fmt.Sprintf("the microphone's capture child died or stalled during this hold and is restarted: %.1f s of audio was lost; what was heard was decoded", r.CaptureLost.Seconds())
		ev.Reason = CauseCaptureFailed
		env.Log.Warn("a dictation lost audio: the capture child died or stalled", "lost_ms", r.CaptureLost.Milliseconds(), "audio_ms", r.Audio.Milliseconds())
	}
	if lv := env.Live; lv != nil && len(lv.Texts) > 0 && (r.Outcome == hold.TooShort || r.Outcome == hold.Empty) {
		// Pieces went out while the key was held: they are the text,
		// whatever the end of the hold came to.
		return finishLive(ctx, env, r, res, ev)
	}
	switch r.Outcome {
	case hold.TooShort:
		res.Outcome = "too_short"
	case hold.Empty:
		res.Outcome = "empty" // without a decoder turn
	}
	if res.Outcome != "" {
		ev.Kind = "dictation." + res.Outcome
		env.Report.Audit(ev)
		return res, ""
	}
	// A detector that failed or went silent during the hold said nothing
	// of the rest: all of it is decoded, and the outcome says so (unless
	// audio was lost, which matters more).
	switch {
	case r.CaptureFailed:
	case r.DetectorSilent:
		res.Cause, res.Reason = CauseVADTimeout, "the voice detector did not answer during this hold: all of its audio was decoded, and the detector is restarted"
	case r.DetectorFailed:
		res.Cause, res.Reason = CauseVADFailed, "the voice detector failed during this hold: all of its audio was decoded"
	}
	if lv := env.Live; lv != nil && len(lv.Texts) > 0 {
		return finishLive(ctx, env, r, res, ev)
	}
	if r.Outcome == hold.Failed {
		ev.Reason = ""
		lost(env, &res, &ev, r)
		return res, ""
	}
	text = env.PostProcess.Apply(ctx, env.Log, Text(r.Text, env.Replace))
	if text == "" {
		res.Outcome = "empty"
		ev.Kind = "dictation.empty"
		env.Report.Audit(ev)
		return res, ""
	}
	res.Chars = utf8.RuneCountInString(text)
	ev.Count = res.Chars
	res.Outcome = "kept"
	if env.Typer != nil {
		env.Report.Typing()
		backend, err := env.Typer.Type(ctx, Separated(text, env.Separator))
		typingOutcome(env, &res, &ev, backend, err)
	} else {
		ev.Reason = "no_backend"
		env.Report.Notify("no_route")
	}
	ev.Kind = "dictation." + res.Outcome
	env.Report.Audit(ev)
	return res, text
}

// typingOutcome fills in the result and audit event of a text typed with
// backend, which came to err (nil: typed).
func typingOutcome(env Env, res *daemonapi.HoldResult, ev *audit.Event, backend string, err error) {
	var te *typewire.Error
	errors.As(err, &te)
	switch {
	case err == nil:
		res.Outcome, res.Backend = "typed", backend
	case errors.Is(err, typewire.ErrPasted):
		// Pasted, and whether the window took it cannot be seen:
		// never "typed"; the text is in last.
		res.Outcome, res.Backend = "pasted", backend
	case errors.Is(err, typewire.ErrCommitted):
		// Committed through the input method, and whether a field
		// took it cannot be seen: never "typed"; the text is in last.
		res.Outcome, res.Backend = "committed", backend
	case errors.Is(err, typewire.ErrRefused):
		// A password field had the focus: nothing was typed.
		ev.Reason = "refused"
		env.Log.Info("the focused field is a password field: nothing was typed; the text is kept for `yazsesd ctl last`", "chars", res.Chars)
		env.Report.Notify("refused_field")
	case errors.Is(err, typewire.ErrNoTarget):
		ev.Reason = "no_target"
		env.Log.Info("no focused window: nothing was typed; the text is kept for `yazsesd ctl last`", "chars", res.Chars)
		env.Report.Notify("no_target")
	case errors.Is(err, typewire.ErrPartial) && te != nil:
		// Part of it arrived, in the window that had the focus, and
		// nothing after went elsewhere: the whole text is in last.
		res.Outcome, res.Backend, res.Arrived, res.Cause = "partial", backend, te.Event.Arrived, te.Event.Cause
		res.Reason = fmt.Sprintf("typing stopped after %d of %d characters (%s): the whole text is kept for `yazsesd ctl last`", te.Event.Arrived, res.Chars, te.Event.Cause)
		ev.Reason = "partial"
		env.Log.Warn("typing stopped part-way: the text is kept for `yazsesd ctl last`", "cause", te.Event.Cause, "arrived", te.Event.Arrived, "chars", res.Chars, "backend", backend)
		env.Report.Notify("typing_failed")
	case te != nil && te.Event.Cause == typewire.CauseNoRoute:
		// Nothing can type in this session (yet): as with no backend.
		ev.Reason = "no_backend"
		env.Log.Warn("nothing can type here: the text is kept for `yazsesd ctl last`", "backend", backend)
		env.Report.Notify("no_route")
	default:
		ev.Reason = "inject_failed"
		cause := typewire.CauseError
		if te != nil && te.Event.Cause != "" {
			cause = te.Event.Cause
		}
		res.Cause = "typing_" + cause
		env.Log.Warn("typing failed: the text is kept for `yazsesd ctl last`", "cause", cause, "backend", backend)
		env.Report.Notify("typing_failed")
	}
	if audit.ValidWord(backend) {
		ev.Backend = backend
	}
}

// finishLive ends a hold whose pieces were handed to the live typing
// (env.Live): the rest is typed after them, with the separator, unless
// the typing stopped; the outcome counts what arrived of the whole text,
// which is kept for `ctl last`.
func finishLive(ctx context.Context, env Env, r hold.Result, res daemonapi.HoldResult, ev audit.Event) (daemonapi.HoldResult, string) {
	lv := env.Live
	rest := ""
	if r.Outcome == hold.Decoded {
		rest = Text(r.Rest, env.Replace)
	}
	text := liveText(lv.Texts, rest)
	res.Chars = utf8.RuneCountInString(text)
	ev.Count = res.Chars
	if r.Outcome == hold.Failed {
		// The pieces typed stay; the rest could not be decoded.
		ev.Reason = ""
		lost(env, &res, &ev, r)
		res.Arrived = min(lv.Arrived, res.Chars)
		return res, text
	}
	arrived, backend, stop, unseen := lv.Arrived, lv.Backend, lv.Stop, lv.Unseen
	if stop == nil && rest != "" {
		env.Report.Typing()
		b, err := typeRest(ctx, env, Separated(rest, env.Separator))
		if b != "" {
			backend = b
		}
		var te *typewire.Error
		switch {
		case err == nil || errors.Is(err, typewire.ErrPasted) || errors.Is(err, typewire.ErrCommitted):
			arrived += utf8.RuneCountInString(rest)
			if err != nil {
				unseen = err
			}
		case errors.Is(err, typewire.ErrPartial) && errors.As(err, &te):
			arrived += min(max(te.Event.Arrived, 0), utf8.RuneCountInString(rest))
			stop = err
		default:
			stop = err
		}
	}
	arrived = min(arrived, res.Chars)
	res.Outcome = "kept"
	switch {
	case stop == nil && unseen == nil:
		res.Outcome, res.Backend = "typed", backend
		if audit.ValidWord(backend) {
			ev.Backend = backend
		}
	case stop == nil:
		typingOutcome(env, &res, &ev, backend, unseen)
	case errors.Is(stop, errNoTyper):
		ev.Reason = "no_backend"
		env.Report.Notify("no_route")
	case arrived == 0:
		// Nothing of the hold arrived: as for a text typed at the end.
		typingOutcome(env, &res, &ev, backend, stop)
	default:
		// Part of the hold arrived in the window that took its first
		// piece; nothing after went anywhere.
		cause := typewire.CauseError
		var te *typewire.Error
		switch {
		case errors.Is(stop, typewire.ErrNoTarget), errors.Is(stop, typewire.ErrRefused):
			cause = typewire.CauseFocusMoved // the focus left the window
		case errors.As(stop, &te) && te.Event.Cause != "":
			cause = te.Event.Cause
		}
		res.Outcome, res.Backend, res.Arrived, res.Cause = "partial", backend, arrived, cause
		res.Reason = fmt.Sprintf("live text stopped after %d of %d characters (%s): nothing more was typed, and the whole text is kept for `yazsesd ctl last`", arrived, res.Chars, cause)
		ev.Reason = "partial"
		env.Log.Warn("live text stopped part-way: the text is kept for `yazsesd ctl last`", "cause", cause, "arrived", arrived, "chars", res.Chars, "backend", backend)
		env.Report.Notify("typing_failed")
		if audit.ValidWord(backend) {
			ev.Backend = backend
		}
	}
	ev.Kind = "dictation." + res.Outcome
	env.Report.Audit(ev)
	return res, text
}

// typeRest types the rest of a live hold; without a Typer nothing.
func typeRest(ctx context.Context, env Env, text string) (string, error) {
	if env.Typer == nil {
		return "", errNoTyper
	}
	return env.Typer.Type(typewire.WithTarget(ctx, &typewire.Target{Want: env.Live.Window}), text)
}

// lost fills in the result of a hold whose decoding failed: its utterance
// is lost, and the cause says why. A decoder that did not answer within
// the hold's bound (hold.DecodeBound) is taken for hung and restarted, as
// the supervisor restarts one that dies; the holds, answers and file
// pieces behind it are served by the new one.
func lost(env Env, res *daemonapi.HoldResult, ev *audit.Event, r hold.Result) {
	res.Outcome = "failed"
	ev.Kind, ev.Reason = "dictation.lost", CauseDecoderFailed
	switch {
	case errors.Is(r.Err, ErrShutdown):
		// The daemon stops, and its stop gave the decoding all the time
		// it could: lost to the stop, not to the decoder.
		ev.Reason = CauseShutdown
		res.Cause, res.Reason = CauseShutdown, "yazsesd stopped before this utterance was decoded: it is lost; say it again once yazsesd runs"
	case r.Hung:
		ev.Reason = CauseDecoderTimeout
		res.Cause = ev.Reason
		secs := int(r.Bound / time.Second)
		if st := env.Decoder.Status().State; st != supervise.StateRunning {
			// Starting or restarting: its supervisor bounds that.
			res.Reason = fmt.Sprintf("decode: the decoder was not up within %d s (%s); this utterance is lost: say it again", secs, st)
			break
		}
		// Up, and silent (stopped, or looping): the restart does what a
		// crash would have done, and whatever waits behind this hold is
		// served by the new decoder.
		env.Decoder.Restart()
		res.Reason = fmt.Sprintf("decode: the decoder did not answer within %d s; it is restarted, and this utterance is lost: say it again", secs)
	case !errors.Is(r.Err, child.ErrLost) && !errors.Is(r.Err, ErrDecodeEnded):
		ev.Reason = CauseDecodeError
		fallthrough
	default:
		res.Cause, res.Reason = Failure(env.Decoder.Status(), ev.Reason)
	}
	env.Log.Error("dictation lost", "reason", ev.Reason, "cause", res.Cause,
		"audio_ms", r.Audio.Milliseconds(), "bound_ms", r.Bound.Milliseconds())
	env.Report.Audit(*ev)
	env.Report.Notify("lost")
}

// Failure says why a hold's decoding failed, or why a hold is refused: the
// decoder's own cause when it is down for one (st), else the kind of
// failure (decoder_failed: it ended before answering; decode_error: it
// answered with an error).
func Failure(st supervise.Status, kind string) (cause, reason string) {
	if st.State.Failed() {
		cause = st.Cause
		if cause == "" {
			cause = "decoder_down"
		}
		return cause, "decode: " + health.Reason(st)
	}
	if kind == CauseDecodeError {
		return kind, "decode: the decoder could not decode this utterance; see its log lines"
	}
	return kind, "decode: the decoder ended before answering; it is restarted"
}

// RefusedKind is the notification of a hold refused for cause.
func RefusedKind(cause string) string {
	switch cause {
	case "model_missing", "model_invalid", "language_unsupported":
		return "refused_" + cause
	}
	return "refused_decoder_down"
}

// RefusalNoteEvery is the least time between two notifications of a
// refused hold.start for one cause.
const RefusalNoteEvery = 30 * time.Second

// NoteLimit lets a notification through at most once per
// RefusalNoteEvery for each cause. Its zero value is ready.
type NoteLimit struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// Allow reports whether a notification for cause may be shown at now, and
// if so counts it.
func (l *NoteLimit) Allow(cause string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.last[cause]; ok && now.Sub(t) < RefusalNoteEvery && !now.Before(t) {
		return false
	}
	if l.last == nil {
		l.last = make(map[string]time.Time)
	}
	l.last[cause] = now
	return true
}

// Separated is text as it is typed: with sep after it, so that the next
// dictation into the same field does not run into it, unless text ends
// with whitespace already.
func Separated(text, sep string) string {
	if sep == "" || text == "" {
		return text
	}
	if r, _ := utf8.DecodeLastRuneInString(text); unicode.IsSpace(r) {
		return text
	}
	return text + sep
}

// Text is what a transcript types: each [[dictation.replace]] rule
// applied, then the transcript rule of package untrusted (a transcript
// never presses Enter).
func Text(raw string, reps []config.Replacement) string {
	return untrusted.Transcript(applyReplacements(strings.TrimSpace(raw), reps))
}

// applyReplacements replaces each exact word or phrase From with To, in
// order; a match must not be part of a longer word.
func applyReplacements(s string, reps []config.Replacement) string {
	for _, r := range reps {
		if r.From == "" {
			continue
		}
		var b strings.Builder
		pos, last := 0, 0
		for {
			i := strings.Index(s[pos:], r.From)
			if i < 0 {
				break
			}
			i += pos
			end := i + len(r.From)
			before, _ := utf8.DecodeLastRuneInString(s[:i])
			after, _ := utf8.DecodeRuneInString(s[end:])
			if (i > 0 && isWordRune(before)) || (end < len(s) && isWordRune(after)) {
				pos = i + 1
				continue
			}
			b.WriteString(s[last:i])
			b.WriteString(r.To)
			last, pos = end, end
		}
		b.WriteString(s[last:])
		s = b.String()
	}
	return s
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }
