package dictation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/yazses/yazses/cmd/yazsesd/internal/child"
	"github.com/yazses/yazses/cmd/yazsesd/internal/detect"
	"github.com/yazses/yazses/cmd/yazsesd/internal/hold"
	"github.com/yazses/yazses/cmd/yazsesd/internal/notify"
	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/typewire"
	"github.com/yazses/yazses/lib/vadspan"
)

func TestApplyReplacements(t *testing.T) {
	reps := []config.Replacement{{From: "yaz says", To: "YazSes"}, {From: "full stop", To: "."}, {From: "um", To: ""}}
	tests := []struct{ in, want string }{
		{"yaz says hello", "YazSes hello"},
		{"hello yaz says", "hello YazSes"},
		{"yaz sayss", "yaz sayss"},         // part of a longer word
		{"ayaz says", "ayaz says"},         // part of a longer word
		{"um, full stop um", ", . "},       // several, in order
		{"umbrella drum", "umbrella drum"}, // never inside words
		{"Grüße yaz says", "Grüße YazSes"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := applyReplacements(tt.in, reps); got != tt.want {
			t.Errorf("applyReplacements(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTextRule(t *testing.T) {
	for in, want := range map[string]string{
		" hello\nworld\r\n": "hello world",
		"a\tb\x00c":         "a bc", // NUL is dropped, as every rule of package untrusted does
		"Grüße ✓":           "Grüße ✓",
	} {
		if got := Text(in, nil); got != want {
			t.Errorf("Text(%q, nil) = %q, want %q", in, got, want)
		}
	}
}

// TestRefusalNotesLimited: a refused hold.start notifies at most once per
// cause in RefusalNoteEvery, so holding or hammering the key does not
// flood; another cause, or the next window, notifies again.
func TestRefusalNotesLimited(t *testing.T) {
	var l NoteLimit
	t0 := time.Unix(1000, 0)
	steps := []struct {
		cause string
		at    time.Duration
		want  bool
	}{
		{"model_missing", 0, true},
		{"model_missing", 100 * time.Millisecond, false},
		{"model_missing", RefusalNoteEvery - time.Millisecond, false},
		{"model_invalid", time.Second, true}, // another cause
		{"model_missing", RefusalNoteEvery, true},
		{"model_missing", RefusalNoteEvery + time.Second, false},
		{"model_missing", 2*RefusalNoteEvery + time.Second, true},
	}
	for _, s := range steps {
		if got := l.Allow(s.cause, t0.Add(s.at)); got != s.want {
			t.Errorf("allow(%s) at %v = %v, want %v", s.cause, s.at, got, s.want)
		}
	}
}

// TestRefusedKinds: every cause of a decoder down for good has a
// notification that says it, and any other cause the general one.
func TestRefusedKinds(t *testing.T) {
	for cause, want := range map[string]notify.Message{
		"model_missing":        notify.RefusedModelMissing,
		"model_invalid":        notify.RefusedModelInvalid,
		"language_unsupported": notify.RefusedLanguage,
		"decoder_down":         notify.RefusedDecoderDown,
		"crash_loop":           notify.RefusedDecoderDown,
	} {
		m, ok := notify.ByKind(RefusedKind(cause))
		if !ok || m != want {
			t.Errorf("cause %s: kind %q gives %q, want %q", cause, RefusedKind(cause), m.Body(), want.Body())
		}
	}
}

// record is a Reporter, Typer and Decoder that records what it is told.
type record struct {
	events   []audit.Event
	notes    []string
	typing   int
	typed    []string
	typeErr  error
	backend  string
	state    supervise.Status
	restarts int
}

func (r *record) Audit(e audit.Event)          { r.events = append(r.events, e) }
func (r *record) Notify(kind string)           { r.notes = append(r.notes, kind) }
func (r *record) Typing()                      { r.typing++ }
func (r *record) Pieces(daemonapi.WatchPieces) {}
func (r *record) Type(_ context.Context, text string) (string, error) {
	r.typed = append(r.typed, text)
	return r.backend, r.typeErr
}
func (r *record) Status() supervise.Status { return r.state }
func (r *record) Restart()                 { r.restarts++ }

// TestFinish: every way a hold ends with or without a text, and what it
// comes to: the result the caller gets, the text kept for `last`, what
// was typed, the one audit event, the notifications, and whether a hung
// decoder is restarted. No event or result carries the text.
func TestFinish(t *testing.T) {
	running := supervise.Status{State: supervise.StateRunning}
	missing := supervise.Status{State: supervise.StateExited, Cause: "model_missing", Reason: "model not found: /m/ggml-base.en.bin"}
	const second = time.Second
	cases := []struct {
		name      string
		r         hold.Result
		noTyper   bool
		typeErr   error
		state     supervise.Status
		want      daemonapi.HoldResult
		kept      string
		typed     []string
		event     audit.Event
		notes     []string
		restarts  int
		typingSet bool
	}{
		{name: "too short", r: hold.Result{Outcome: hold.TooShort, Audio: 300 * time.Millisecond},
			want: daemonapi.HoldResult{Hold: "idle", Outcome: "too_short"}, event: audit.Event{Kind: "dictation.too_short", Duration: 300 * time.Millisecond}},
		{name: "nothing said", r: hold.Result{Outcome: hold.Empty, Audio: second},
			want: daemonapi.HoldResult{Hold: "idle", Outcome: "empty"}, event: audit.Event{Kind: "dictation.empty", Duration: second}},
		{name: "typed", r: hold.Result{Outcome: hold.Decoded, Text: "  yaz says hello\n", Audio: second},
			want: daemonapi.HoldResult{Hold: "idle", Outcome: "typed", Chars: 12, Backend: "x11"}, kept: "YazSes hello", typed: []string{"YazSes hello"},
			event: audit.Event{Kind: "dictation.typed", Duration: second, Count: 12, Backend: "x11"}, typingSet: true},
		{name: "decoded to nothing", r: hold.Result{Outcome: hold.Decoded, Text: " \n\x00", Audio: second},
			want: daemonapi.HoldResult{Hold: "idle", Outcome: "empty"}, event: audit.Event{Kind: "dictation.empty", Duration: second}},
		{name: "no focused window", r: hold.Result{Outcome: hold.Decoded, Text: "hello", Audio: second}, typeErr: typewire.Event{Outcome: typewire.OutcomeNoTarget, Chars: 5}.Err(),
			want: daemonapi.HoldResult{Hold: "idle", Outcome: "kept", Chars: 5}, kept: "hello", typed: []string{"hello"},
			event: audit.Event{Kind: "dictation.kept", Duration: second, Count: 5, Reason: "no_target", Backend: "x11"}, notes: []string{"no_target"}, typingSet: true},
		{name: "typing failed", r: hold.Result{Outcome: hold.Decoded, Text: "hello", Audio: second}, typeErr: errors.New("x11: broken pipe"),
			want: daemonapi.HoldResult{Hold: "idle", Outcome: "kept", Chars: 5, Cause: "typing_error"}, kept: "hello", typed: []string{"hello"},
			event: audit.Event{Kind: "dictation.kept", Duration: second, Count: 5, Reason: "inject_failed", Backend: "x11"}, notes: []string{"typing_failed"}, typingSet: true},
		{name: "nothing can type yet", r: hold.Result{Outcome: hold.Decoded, Text: "hello", Audio: second},
			typeErr: typewire.Event{Outcome: typewire.OutcomeFailed, Cause: typewire.CauseNoRoute, Chars: 5}.Err(),
			want:    daemonapi.HoldResult{Hold: "idle", Outcome: "kept", Chars: 5}, kept: "hello", typed: []string{"hello"},
			event: audit.Event{Kind: "dictation.kept", Duration: second, Count: 5, Reason: "no_backend", Backend: "x11"}, notes: []string{"no_route"}, typingSet: true},
		{name: "committed through the input method", r: hold.Result{Outcome: hold.Decoded, Text: "hello", Audio: second},
			typeErr: typewire.Event{Outcome: typewire.OutcomeCommitted, Chars: 5}.Err(),
			want:    daemonapi.HoldResult{Hold: "idle", Outcome: "committed", Chars: 5, Backend: "x11"}, kept: "hello", typed: []string{"hello"},
			event: audit.Event{Kind: "dictation.committed", Duration: second, Count: 5, Backend: "x11"}, typingSet: true},
		{name: "password field", r: hold.Result{Outcome: hold.Decoded, Text: "hello", Audio: second},
			typeErr: typewire.Event{Outcome: typewire.OutcomeRefused, Chars: 5}.Err(),
			want:    daemonapi.HoldResult{Hold: "idle", Outcome: "kept", Chars: 5}, kept: "hello", typed: []string{"hello"},
			event: audit.Event{Kind: "dictation.kept", Duration: second, Count: 5, Reason: "refused", Backend: "x11"}, notes: []string{"refused_field"}, typingSet: true},
		{name: "typing child hung", r: hold.Result{Outcome: hold.Decoded, Text: "hello", Audio: second},
			typeErr: typewire.Event{Outcome: typewire.OutcomeFailed, Cause: typewire.CauseTimeout, Chars: 5}.Err(),
			want:    daemonapi.HoldResult{Hold: "idle", Outcome: "kept", Chars: 5, Cause: "typing_timeout"}, kept: "hello", typed: []string{"hello"},
			event: audit.Event{Kind: "dictation.kept", Duration: second, Count: 5, Reason: "inject_failed", Backend: "x11"}, notes: []string{"typing_failed"}, typingSet: true},
		{name: "focus moved", r: hold.Result{Outcome: hold.Decoded, Text: "hello world", Audio: second},
			typeErr: typewire.Event{Outcome: typewire.OutcomePartial, Cause: typewire.CauseFocusMoved, Chars: 11, Arrived: 4}.Err(),
			want: daemonapi.HoldResult{Hold: "idle", Outcome: "partial", Chars: 11, Arrived: 4, Backend: "x11", Cause: "focus_moved",
				Reason: "typing stopped after 4 of 11 characters (focus_moved): the whole text is kept for `yazsesd ctl last`"},
			kept: "hello world", typed: []string{"hello world"},
			event: audit.Event{Kind: "dictation.partial", Duration: second, Count: 11, Reason: "partial", Backend: "x11"}, notes: []string{"typing_failed"}, typingSet: true},
		{name: "no way to type", r: hold.Result{Outcome: hold.Decoded, Text: "hello", Audio: second}, noTyper: true,
			want: daemonapi.HoldResult{Hold: "idle", Outcome: "kept", Chars: 5}, kept: "hello",
			event: audit.Event{Kind: "dictation.kept", Duration: second, Count: 5, Reason: "no_backend"}, notes: []string{"no_route"}},
		{name: "pasted", r: hold.Result{Outcome: hold.Decoded, Text: "hello", Audio: second}, typeErr: typewire.Event{Outcome: typewire.OutcomePasted, Chars: 5}.Err(),
			want: daemonapi.HoldResult{Hold: "idle", Outcome: "pasted", Chars: 5, Backend: "x11"}, kept: "hello", typed: []string{"hello"},
			event: audit.Event{Kind: "dictation.pasted", Duration: second, Count: 5, Backend: "x11"}, typingSet: true},
		{name: "detector silent", r: hold.Result{Outcome: hold.Decoded, Text: "hello", DetectorSilent: true, Audio: second},
			want: daemonapi.HoldResult{Hold: "idle", Outcome: "typed", Chars: 5, Backend: "x11", Cause: "vad_timeout",
				Reason: "the voice detector did not answer during this hold: all of its audio was decoded, and the detector is restarted"},
			kept: "hello", typed: []string{"hello"}, event: audit.Event{Kind: "dictation.typed", Duration: second, Count: 5, Backend: "x11"}, typingSet: true},
		{name: "detector failed", r: hold.Result{Outcome: hold.Decoded, Text: "hello", DetectorFailed: true, Audio: second},
			want: daemonapi.HoldResult{Hold: "idle", Outcome: "typed", Chars: 5, Backend: "x11", Cause: "vad_failed",
				Reason: "the voice detector failed during this hold: all of its audio was decoded"},
			kept: "hello", typed: []string{"hello"}, event: audit.Event{Kind: "dictation.typed", Duration: second, Count: 5, Backend: "x11"}, typingSet: true},
		{name: "decoder hung", r: hold.Result{Outcome: hold.Failed, Hung: true, Bound: 64 * second, Audio: second}, state: running,
			want: daemonapi.HoldResult{Hold: "idle", Outcome: "failed", Cause: "decoder_timeout",
				Reason: "decode: the decoder did not answer within 64 s; it is restarted, and this utterance is lost: say it again"},
			event: audit.Event{Kind: "dictation.lost", Reason: "decoder_timeout", Duration: second}, notes: []string{"lost"}, restarts: 1},
		{name: "decoder not up in time", r: hold.Result{Outcome: hold.Failed, Hung: true, Bound: 64 * second, Audio: second},
			state: supervise.Status{State: supervise.StateBackoff},
			want: daemonapi.HoldResult{Hold: "idle", Outcome: "failed", Cause: "decoder_timeout",
				Reason: "decode: the decoder was not up within 64 s (backoff); this utterance is lost: say it again"},
			event: audit.Event{Kind: "dictation.lost", Reason: "decoder_timeout", Duration: second}, notes: []string{"lost"}},
		{name: "decoder died", r: hold.Result{Outcome: hold.Failed, Err: child.ErrLost, Audio: second}, state: running,
			want: daemonapi.HoldResult{Hold: "idle", Outcome: "failed", Cause: "decoder_failed",
				Reason: "decode: the decoder ended before answering; it is restarted"},
			event: audit.Event{Kind: "dictation.lost", Reason: "decoder_failed", Duration: second}, notes: []string{"lost"}},
		{name: "decoder down for good", r: hold.Result{Outcome: hold.Failed, Err: fmt.Errorf("%w: context canceled", ErrDecodeEnded), Audio: second}, state: missing,
			want:  daemonapi.HoldResult{Hold: "idle", Outcome: "failed", Cause: "model_missing", Reason: "decode: model not found: /m/ggml-base.en.bin"},
			event: audit.Event{Kind: "dictation.lost", Reason: "decoder_failed", Duration: second}, notes: []string{"lost"}},
		{name: "capture failed", r: hold.Result{Outcome: hold.Decoded, Text: "hello", CaptureFailed: true, CaptureLost: 1140 * time.Millisecond, Audio: second},
			want: daemonapi.HoldResult{Hold: "idle", Outcome: "typed", Chars: 5, Backend: "x11", Cause: "capture_failed",
				Reason: "the microphone's capture child died or stalled during this hold and is restarted: 1.1 s of audio was lost; what was heard was decoded"},
			kept: "hello", typed: []string{"hello"}, event: audit.Event{Kind: "dictation.typed", Duration: second, Count: 5, Backend: "x11", Reason: "capture_failed"}, typingSet: true},
		{name: "capture failed before a word", r: hold.Result{Outcome: hold.Empty, CaptureFailed: true, CaptureLost: 2 * second, Audio: second},
			want: daemonapi.HoldResult{Hold: "idle", Outcome: "empty", Cause: "capture_failed",
				Reason: "the microphone's capture child died or stalled during this hold and is restarted: 2.0 s of audio was lost; what was heard was decoded"},
			event: audit.Event{Kind: "dictation.empty", Duration: second, Reason: "capture_failed"}},
		{name: "capture failed, and no focused window", r: hold.Result{Outcome: hold.Decoded, Text: "hello", CaptureFailed: true, CaptureLost: second, Audio: second},
			typeErr: typewire.Event{Outcome: typewire.OutcomeNoTarget, Chars: 5}.Err(),
			want: daemonapi.HoldResult{Hold: "idle", Outcome: "kept", Chars: 5, Cause: "capture_failed",
				Reason: "the microphone's capture child died or stalled during this hold and is restarted: 1.0 s of audio was lost; what was heard was decoded"},
			kept: "hello", typed: []string{"hello"},
			event: audit.Event{Kind: "dictation.kept", Duration: second, Count: 5, Reason: "no_target", Backend: "x11"}, notes: []string{"no_target"}, typingSet: true},
		{name: "the daemon stopped before it was decoded", r: hold.Result{Outcome: hold.Failed, Err: fmt.Errorf("%w: context deadline exceeded", ErrShutdown), Audio: second}, state: running,
			want: daemonapi.HoldResult{Hold: "idle", Outcome: "failed", Cause: "shutdown",
				Reason: "yazsesd stopped before this utterance was decoded: it is lost; say it again once yazsesd runs"},
			event: audit.Event{Kind: "dictation.lost", Reason: "shutdown", Duration: second}, notes: []string{"lost"}},
		{name: "decoder error", r: hold.Result{Outcome: hold.Failed, Err: errors.New("decoder: bad audio"), Audio: second}, state: running,
			want: daemonapi.HoldResult{Hold: "idle", Outcome: "failed", Cause: "decode_error",
				Reason: "decode: the decoder could not decode this utterance; see its log lines"},
			event: audit.Event{Kind: "dictation.lost", Reason: "decode_error", Duration: second}, notes: []string{"lost"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := &record{typeErr: c.typeErr, backend: "x11", state: c.state}
			env := Env{Decoder: rec, Replace: []config.Replacement{{From: "yaz says", To: "YazSes"}}, Report: rec}
			if !c.noTyper {
				env.Typer = rec
			}
			res, kept := Finish(context.Background(), env, c.r)
			if diff := cmp.Diff(c.want, res); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if kept != c.kept {
				t.Errorf("kept %q, want %q", kept, c.kept)
			}
			if diff := cmp.Diff(c.typed, rec.typed); diff != "" {
				t.Errorf("typed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]audit.Event{c.event}, rec.events); diff != "" {
				t.Errorf("audit events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.notes, rec.notes); diff != "" {
				t.Errorf("notifications (-want +got):\n%s", diff)
			}
			if rec.restarts != c.restarts {
				t.Errorf("%d decoder restarts, want %d", rec.restarts, c.restarts)
			}
			if (rec.typing > 0) != c.typingSet {
				t.Errorf("Typing() called %d times, want called %v", rec.typing, c.typingSet)
			}
		})
	}
}

// TestSettings: a hold's settings from the configuration: its limit (the
// default when a hand-made configuration has none), the auto stop of a
// toggled hold only, eager pieces and their pause as the detector's
// MinSilence, and the silences the detector reports (the tail's, then the
// auto stop's), over [vad]'s threshold.
func TestSettings(t *testing.T) {
	base := config.Default()
	base.VAD.Threshold = 0.42
	base.Dictation.AutoStopMs = 2000
	tail := []time.Duration{hold.TailQuiet}
	defMax := time.Duration(config.Default().Dictation.MaxHoldS) * time.Second
	for _, c := range []struct {
		name       string
		edit       func(*config.Config)
		toggled    bool
		want       hold.Params
		silences   []time.Duration
		minSilence time.Duration
	}{
		{name: "held", want: hold.Params{MaxHold: defMax}, silences: tail, minSilence: vadspan.DefaultParams().MinSilence},
		{name: "toggled", toggled: true, want: hold.Params{MaxHold: defMax, AutoStop: 2 * time.Second},
			silences: []time.Duration{hold.TailQuiet, 2 * time.Second}, minSilence: vadspan.DefaultParams().MinSilence},
		{name: "toggled, no auto stop", toggled: true, edit: func(c *config.Config) { c.Dictation.AutoStopMs = 0 },
			want: hold.Params{MaxHold: defMax}, silences: tail, minSilence: vadspan.DefaultParams().MinSilence},
		{name: "eager", edit: func(c *config.Config) { c.Dictation.EagerPauseMs = 300 },
			want: hold.Params{MaxHold: defMax, Pieces: true}, silences: tail, minSilence: 300 * time.Millisecond},
		{name: "a limit of its own", edit: func(c *config.Config) { c.Dictation.MaxHoldS = 10 },
			want: hold.Params{MaxHold: 10 * time.Second}, silences: tail, minSilence: vadspan.DefaultParams().MinSilence},
		{name: "no limit (hand-made)", edit: func(c *config.Config) { c.Dictation.MaxHoldS = 0 },
			want: hold.Params{MaxHold: defMax}, silences: tail, minSilence: vadspan.DefaultParams().MinSilence},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			if c.edit != nil {
				c.edit(&cfg)
			}
			p, det := Settings(cfg, c.toggled)
			if diff := cmp.Diff(c.want, p, cmpopts.IgnoreFields(hold.Params{}, "Ending")); diff != "" {
				t.Errorf("hold.Params (-want +got):\n%s", diff)
			}
			if det.Threshold != 0.42 || det.MinSilence != c.minSilence || !slices.Equal(det.Silences, c.silences) {
				t.Errorf("detector settings %+v, want threshold 0.42, MinSilence %v, Silences %v", det, c.minSilence, c.silences)
			}
		})
	}
	if !Speculate(detect.Silero) || Speculate(detect.Energy) {
		t.Error("Speculate: want the trained detector only")
	}
}

// TestFailure: the decoder's own cause and reason while it is down for
// good (a crash loop without a cause is decoder_down), else the kind.
func TestFailure(t *testing.T) {
	for _, c := range []struct {
		st            supervise.Status
		kind          string
		cause, reason string
	}{
		{supervise.Status{State: supervise.StateExited, Cause: "model_invalid", Reason: "not a ggml model file"}, "decoder_down", "model_invalid", "decode: not a ggml model file"},
		{supervise.Status{State: supervise.StateCrashLoop, LastExit: "signal: killed"}, "decoder_down", "decoder_down", "decode: kept failing (last: signal: killed) and is left down; see its log lines"},
		{supervise.Status{State: supervise.StateRunning}, "decoder_failed", "decoder_failed", "decode: the decoder ended before answering; it is restarted"},
		{supervise.Status{State: supervise.StateBackoff}, "decode_error", "decode_error", "decode: the decoder could not decode this utterance; see its log lines"},
	} {
		cause, reason := Failure(c.st, c.kind)
		if cause != c.cause || reason != c.reason {
			t.Errorf("Failure(%s, %s) = %q, %q; want %q, %q", c.st.State, c.kind, cause, reason, c.cause, c.reason)
		}
	}
}

// TestSeparated: the separator goes after a text, never after one that
// ends with whitespace, never into an empty one.
func TestSeparated(t *testing.T) {
	for _, c := range []struct{ text, sep, want string }{
		{"country.", " ", "country. "},
		{"日本語", " ", "日本語 "},
		{"ends with a tab\t", " ", "ends with a tab\t"},
		{"no separator", "", "no separator"},
		{"", " ", ""},
		{"two", "  ", "two  "},
	} {
		if got := Separated(c.text, c.sep); got != c.want {
			t.Errorf("Separated(%q, %q) = %q, want %q", c.text, c.sep, got, c.want)
		}
	}
}

// TestFinishSeparates: a typed dictation goes out with the separator
// after it, so the next one does not run into it; what is kept for
// `ctl last`, the result's chars and the audit count are the text alone.
func TestFinishSeparates(t *testing.T) {
	rec := &record{backend: "x11"}
	env := Env{Typer: rec, Decoder: rec, Report: rec, Separator: " "}
	for _, said := range []string{"in that country.", "And so"} {
		res, kept := Finish(context.Background(), env, hold.Result{Outcome: hold.Decoded, Text: said, Audio: time.Second})
		if res.Outcome != "typed" || kept != said || res.Chars != len(said) {
			t.Errorf("Finish(%q) = %+v, kept %q; want typed, %d chars, kept as said", said, res, kept, len(said))
		}
	}
	if got, want := strings.Join(rec.typed, ""), "in that country. And so "; got != want {
		t.Errorf("two dictations typed %q, want %q", got, want)
	}
	for _, ev := range rec.events {
		if ev.Count != len("in that country.") && ev.Count != len("And so") {
			t.Errorf("audit count %d counts the separator", ev.Count)
		}
	}
}
