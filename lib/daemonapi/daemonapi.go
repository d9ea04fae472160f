// Package daemonapi is the yazsesd socket API: the method names and the
// types of their parameters and results, shared by the daemon, by
// `yazsesd ctl` and by yaz-mcp, plus a typed client.
//
// The transport is package jsonrpc (JSON-RPC 2.0, one object per line) over
// the unix socket of package safesocket. No method changes the budget or the
// ask_human opt-in: those come from the configuration file only.
//
// Parameters are strict (jsonrpc.DecodeParams): member names exactly as the
// json tags below spell them, letter case included ({"QUESTION":…} is
// refused), each at most once, no other members, valid UTF-8 only; a
// method without parameters takes none, {} or []. Anything else is
// InvalidParams (-32602), before the method does anything. An ask_human
// question must also pass CheckQuestion (invisible characters removed and
// not counted, something visible left, at most MaxQuestionRunes, no
// invalid UTF-8 or U+FFFD); the daemon speaks the cleaned text.
//
// Two sockets, in the same 0700 folder: yazsesd.sock serves every method
// (Dial); control.sock serves only ControlMethods (hold.start, hold.stop,
// hold.toggle, hold.cancel and status) on a server of its own, so that no
// number of clients on the main socket, idle or busy, keeps the
// compositor's press or release out (DialControl, which falls back to
// yazsesd.sock when a daemon has no control socket). Any other method
// there is method not found. Each socket serves 256 connections at once;
// one more is told server busy and closed.
//
// The ask_human result is a closed vocabulary (docs/design.md, invariant 8):
//
//	{"result":"answered","answer":"…"}
//	{"result":"no_answer","reason":"silence"|"timeout"|"interrupted"|…}
//	{"result":"deferred","reason":"holding"|"busy"|"timeout"|"cancelled"}
//	{"result":"refused","reason":"disabled"|"budget_exhausted","retry_after_s":N}
//	{"result":"unavailable","reason":"daemon_not_running"|"tts_unavailable"|…}
//
// Reasons are short lowercase words, never free text.
//
// watch is a stream (see package jsonrpc): one WatchEvent per change of
// the live state (idle, listening, decoding, typing, speaking, waiting)
// with the counters a status bar shows. The text decoded so far in a hold
// is in it only when the owner opted in ([dictation] preview = true).
package daemonapi

import (
	"slices"

	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/devices"
)

// Methods of the daemon socket.
const (
	MethodStatus       = "status"
	MethodHoldStart    = "hold.start"
	MethodHoldStop     = "hold.stop"
	MethodHoldToggle   = "hold.toggle"
	MethodHoldCancel   = "hold.cancel"
	MethodAskHuman     = "ask_human"
	MethodBudgetStatus = "budget.status"
	MethodLast         = "last"
	MethodAudit        = "audit"
	// MethodTranscribe decodes an audio file on the daemon's resident
	// decoder (used by yaz-mcp when the daemon runs), in pieces of at
	// most 30 s: dictation holds and answers are served between pieces.
	// One file at a time, four waiting; more are refused CodeBusy.
	MethodTranscribe = "transcribe"
	// MethodTranscribeStream is transcribe with progress (yaz-mcp uses it
	// when its client asked for progress): the same params; a stream
	// (see package jsonrpc) of TranscribeEvent, one with done_ms 0 when
	// the file is opened and one after each piece, then one that carries
	// the result, then a null answer (or transcribe's error). Not for
	// `yazsesd ctl`, which calls methods, not streams.
	MethodTranscribeStream = "transcribe.stream"
	// MethodWatch (watch.go) streams the live state for status bars.
)

// Methods lists every method, in documentation order.
var Methods = []string{
	MethodStatus, MethodHoldStart, MethodHoldStop, MethodHoldToggle, MethodHoldCancel,
	MethodAskHuman, MethodBudgetStatus, MethodLast, MethodAudit, MethodTranscribe, MethodWatch,
}

// ControlMethods are the methods of the control socket (control.sock, see
// DialControl): a press, a release and a look, served on their own so
// that no number of clients on the main socket keeps them out. The main
// socket serves them too.
var ControlMethods = []string{MethodStatus, MethodHoldStart, MethodHoldStop, MethodHoldToggle, MethodHoldCancel}

// IsControl reports whether method is one of ControlMethods.
func IsControl(method string) bool { return slices.Contains(ControlMethods, method) }

// Outcome is the kind of an ask_human result.
type Outcome string

// The ask_human outcomes.
const (
	Answered    Outcome = "answered"
	NoAnswer    Outcome = "no_answer"
	Deferred    Outcome = "deferred"
	Refused     Outcome = "refused"
	Unavailable Outcome = "unavailable"
)

// Reasons of ask_human results.
const (
	// refused: nothing was spoken and nothing was charged, also when a
	// reload turned questions off or lowered the cap while the question
	// waited
	ReasonDisabled        = "disabled"         // opt-in off, or ask_human_per_hour = 0
	ReasonBudgetExhausted = "budget_exhausted" // retry_after_s says when a slot frees

	// deferred: nothing was spoken and nothing was charged
	ReasonHolding = "holding" // the person was dictating until the timeout
	ReasonBusy    = "busy"    // other questions were ahead until the timeout
	// ReasonTimeout with deferred: too little of the timeout was left to
	// speak the question and hear an answer (AskTiming.Need), so it was
	// not started; with no_answer: the timeout passed after it was spoken.
	// ReasonCancelled with deferred: the caller went away before anything
	// was spoken; with no_answer: after the question was spoken.

	// no_answer: the question was spoken (its slot is spent)
	ReasonSilence     = "silence"      // nothing was said
	ReasonTimeout     = "timeout"      // the caller's timeout passed
	ReasonInterrupted = "interrupted"  // the person started a hold (barge-in)
	ReasonCancelled   = "cancelled"    // see above
	ReasonSpeakFailed = "speak_failed" // playback broke off after it started
	ReasonDecodeFail  = "decode_failed"
	// ReasonCaptureFailed: the question was spoken, but the microphone
	// never delivered a sample (it did not open: the sound server is
	// gone, the device is missing). Not silence.
	ReasonCaptureFailed = "capture_failed"

	// unavailable: nothing audible happened
	ReasonDaemonNotRunning = "daemon_not_running"
	ReasonTTSUnavailable   = "tts_unavailable" // no speaker, or it failed before any audio
	ReasonGateUnavailable  = "gate_unavailable"
	// ReasonAuditUnavailable: the audit log could not record the question,
	// so it was not asked (nothing spoken, nothing charged).
	ReasonAuditUnavailable = "audit_unavailable"
	ReasonShuttingDown     = "shutting_down"
	// ReasonStateUnavailable: the daemon cannot write its crash marker in
	// the state folder (full, or not writable), so a crash would go
	// unnoticed and hand out a fresh budget: no question is asked until
	// it can (status shows state_failing). Nothing spoken, nothing
	// charged.
	ReasonStateUnavailable = "state_unavailable"
)

// AskParams are the parameters of ask_human.
type AskParams struct {
	// Question is untrusted text, checked with CheckQuestion: control and
	// invisible format characters are removed (but for joiners between
	// visible characters), and a question that is then empty, longer than
	// MaxQuestionRunes, or not valid UTF-8 is refused as invalid params.
	Question string `json:"question"`
	// TimeoutS is the longest wait in seconds; 0 takes the configured
	// default, more than the configured maximum is cut to it, and one
	// above 0 under AskTiming.MinTimeoutS is invalid params
	// (TimeoutTooShort).
	TimeoutS int `json:"timeout_s,omitempty"`
}

// AskResult is the result of ask_human.
type AskResult struct {
	Result      Outcome `json:"result"`
	Answer      string  `json:"answer,omitempty"`
	Reason      string  `json:"reason,omitempty"`
	RetryAfterS int     `json:"retry_after_s,omitempty"`
}

// BudgetStatus is the result of budget.status and part of status.
type BudgetStatus struct {
	PerHour   int `json:"per_hour"`
	Used      int `json:"used"`
	NextFreeS int `json:"next_free_s"`
	// FailClosed is true when the gate counts the whole hour as spent
	// because something ended uncleanly: FailClosedReason says what.
	FailClosed bool `json:"fail_closed"`
	// FailClosedReason is FailClosedGate or FailClosedDaemon while
	// FailClosed is true.
	FailClosedReason string `json:"fail_closed_reason,omitempty"`
	// Available is false when the gate is down (restarting).
	Available bool `json:"available"`
}

// Why the budget is fail closed.
const (
	// FailClosedGate: yaz-gate crashed and was restarted spent.
	FailClosedGate = "gate_restarted"
	// FailClosedDaemon: the previous yazsesd of this user ended without
	// a clean stop during this boot (killed, crashed, out of memory), so
	// this one started its gate spent.
	FailClosedDaemon = "daemon_restarted"
)

// ChildStatus is one supervised child in status.
type ChildStatus struct {
	Name     string `json:"name"`
	State    string `json:"state"` // starting, running, backoff, stopped, crashloop, exited, idle
	PID      int    `json:"pid,omitempty"`
	Restarts int    `json:"restarts"`
	LastExit string `json:"last_exit,omitempty"`
	// Version is what the child's program prints for --version ("" until
	// known, or when it prints none).
	Version string `json:"version,omitempty"`
	// Cause and Reason: why the child cannot run, as it said itself
	// (a word such as "model_missing", and a sentence that names the
	// file and the fix), or as the supervisor saw it ("crash_loop").
	Cause  string `json:"cause,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// DeviceStatus is where the decoder runs the model: decode.device, and the
// device the running decoder said it loaded on (its readiness line:
// package devices).
type DeviceStatus struct {
	Setting string `json:"setting"` // decode.device: auto, cpu, gpu or gpu:N (restart-only: the running value)
	// Device is nil until the decoder is ready, and from a decoder that
	// names none.
	Device *devices.Info `json:"device,omitempty"`
	// Notes: a GPU backend installed that the decoder could not use, one
	// line each ("CUDA: libcuda.so.1: cannot open shared object file ...").
	Notes []string `json:"notes,omitempty"`
	// Warning: the device is not what Setting meant, in one line ("gpu"
	// with no hardware GPU decodes on the CPU; "gpu:N" of a software
	// device is slower than the CPU); "" when it is.
	Warning string `json:"warning,omitempty"`
}

// TypingStatus is how dictated text is typed.
type TypingStatus struct {
	Inject   string   `json:"inject"`          // dictation.inject as configured ("auto", "xdotool", …)
	Backends []string `json:"backends"`        // what it resolves to, tried in order; none: text is kept for last
	Error    string   `json:"error,omitempty"` // why there is none
	// Route is the backend tried first, and Why says why: auto's reason
	// ("the compositor has no virtual keyboard …"), or that
	// dictation.inject names it.
	Route string `json:"route,omitempty"`
	Why   string `json:"why,omitempty"`
	// For the portal route: Session is its session's state ("ready",
	// "asking", "refused", "ended", "gone", "unavailable"), Consent
	// whether the desktop keeps the person's consent, in words, and
	// Cause why the session is not ready.
	Session string `json:"session,omitempty"`
	Consent string `json:"consent,omitempty"`
	Cause   string `json:"cause,omitempty"`
}

// HotkeyStatus is the daemon's own push-to-talk key.
type HotkeyStatus struct {
	Enabled bool `json:"enabled"` // hotkey.enabled
	// Source is hotkey.source: "evdev" (the daemon reads the keyboards)
	// or "portal" (the desktop's GlobalShortcuts portal).
	Source    string `json:"source,omitempty"`
	Listening bool   `json:"listening"`       // the key source runs
	Key       string `json:"key"`             // hotkey.key
	Mode      string `json:"mode"`            // hotkey.mode
	Error     string `json:"error,omitempty"` // why it stopped or did not start
	// Waiting is what a listening key source waits for before the key
	// works (hotkey.source = "portal": the desktop's portal to appear on
	// the session bus, one with GlobalShortcuts); "" when the key works.
	Waiting string `json:"waiting,omitempty"`
}

// Status is the result of status.
type Status struct {
	Version     string        `json:"version"`
	PID         int           `json:"pid"`
	UptimeS     int64         `json:"uptime_s"`
	Config      string        `json:"config"`
	AskHuman    bool          `json:"ask_human"`    // the opt-in
	CaptureMode string        `json:"capture_mode"` // on-demand or always
	Hold        string        `json:"hold"`         // idle or holding
	Asking      bool          `json:"asking"`       // a question is being spoken or answered
	Waiting     int           `json:"waiting"`      // questions waiting for their turn: for the hold to end (WatchEvent.Waiting) or behind another question
	Children    []ChildStatus `json:"children"`
	Budget      BudgetStatus  `json:"budget"`

	// Health is one line on what works: "ready", or each child that is
	// down or restarting and why (the systemd status line says the same).
	Health string `json:"health"`
	// Model is the whisper model file (decode.model); Language its
	// decode.language.
	Model    string `json:"model"`
	Language string `json:"language"`
	// DecodeDevice is where the decoder runs the model.
	DecodeDevice DeviceStatus `json:"decode_device"`
	// CaptureBackend and CaptureDevice are capture.backend and
	// capture.device ("" is the backend's default device).
	CaptureBackend string       `json:"capture_backend"`
	CaptureDevice  string       `json:"capture_device"`
	Typing         TypingStatus `json:"typing"`
	Hotkey         HotkeyStatus `json:"hotkey"`
	// AuditFailing: the last audit write failed (a full disk, a folder
	// that is gone). ask_human is unavailable (audit_unavailable) until a
	// write succeeds again; dictation goes on.
	AuditFailing bool `json:"audit_failing"`
	// StateFailing says why the crash marker cannot be written in the
	// state folder ("" when it is written): ask_human is unavailable
	// (state_unavailable) until it can be; dictation goes on.
	StateFailing string `json:"state_failing,omitempty"`
}

// HoldResult is the result of the hold methods.
type HoldResult struct {
	// Hold is the state after the call: "holding" or "idle".
	Hold string `json:"hold"`
	// Outcome of a hold that ended (stop, or toggle to idle): "typed",
	// "pasted" (the portal route put it on the clipboard and pressed the
	// paste keys; whether the window took it cannot be seen: see last),
	// "committed" (the input method took it for the focused field, and
	// whether a field had it cannot be seen: see last), "partial" (see
	// Arrived), "kept" (no text target, no backend, or
	// typing failed, Cause "typing_…" says why: see last), "empty" (nothing
	// was said), "too_short", "cancelled", "failed". Empty while holding.
	Outcome string `json:"outcome,omitempty"`
	Chars   int    `json:"chars,omitempty"` // characters typed or kept
	// Arrived, for "partial" (typing stopped part-way: the focus moved,
	// the window went away), is how many of Chars arrived, in the window
	// that had the focus; nothing after them went anywhere, and the whole
	// text is in last.
	Arrived int    `json:"arrived,omitempty"`
	Backend string `json:"backend,omitempty"` // injection backend used
	// Cause and Reason say why a hold "failed" (hold.start too, refused
	// while the decoder is down for good): a word ("model_missing",
	// "decoder_failed", …) and a sentence for a person, the decoder's
	// own when it said one ("decode: model not found: … — fetch one with
	// yaz-fetch-model base.en"), "decoder_timeout" (no answer within the
	// hold's bound), "shutdown" (the daemon stopped before the hold could
	// be decoded). On a hold "typed", "kept" or "empty" they say what it
	// survived: "capture_failed" (the capture child died or stalled and
	// is restarted; the reason says how much audio was lost, the rest was
	// decoded), "vad_timeout" (the voice detector did not answer; it is
	// restarted) or "vad_failed"; all of its audio was decoded. The
	// closed list is in docs/design.md, "Desktop dictation".
	Cause  string `json:"cause,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Hold states.
const (
	HoldIdle    = "idle"
	HoldHolding = "holding"
)

// Last is the result of last: the most recent dictation transcript.
type Last struct {
	Text    string `json:"text"`
	AtMs    int64  `json:"at_ms,omitempty"` // Unix milliseconds; 0 if none yet
	Outcome string `json:"outcome,omitempty"`
}

// AuditParams are the parameters of audit.
type AuditParams struct {
	Max int `json:"max,omitempty"` // newest events to return; 0 means 100
}

// AuditResult is the result of audit.
type AuditResult struct {
	Events []audit.Event `json:"events"`
}

// TranscribeParams are the parameters of transcribe.
type TranscribeParams struct {
	Path string `json:"path"` // an absolute path to a regular file
}

// Segment is one timed piece of a transcript.
type Segment struct {
	StartMs int64  `json:"start_ms"`
	EndMs   int64  `json:"end_ms"`
	Text    string `json:"text"`
}

// TranscribeResult is the result of transcribe.
type TranscribeResult struct {
	Text     string    `json:"text"`
	Segments []Segment `json:"segments"`
	AudioMs  int64     `json:"audio_ms"`
	DecodeMs int64     `json:"decode_ms"`
	// Warning, when not empty, is a fixed sentence about the file that
	// did not stop its transcription: WarningCutShort.
	Warning string `json:"warning,omitempty"`
}

// WarningCutShort is TranscribeResult.Warning for a file whose header
// declares more audio than it holds (an interrupted download): the audio
// it holds is transcribed, as whisper-cli does, and the caller is told.
const WarningCutShort = "the file is cut short: its header declares more audio than it holds (an interrupted download?); the audio it holds was transcribed"

// TranscribeEvent is an event of transcribe.stream: progress as
// milliseconds of the file's audio decoded (DoneMs) of its length
// (TotalMs, 0 when the file does not say it), rising, at the file's
// opening (0) and after each piece of at most 30 s: honest, so there is
// none within a piece. The last event carries the Result instead (DoneMs
// is then the whole file).
type TranscribeEvent struct {
	DoneMs  int64             `json:"done_ms"`
	TotalMs int64             `json:"total_ms,omitempty"`
	Result  *TranscribeResult `json:"result,omitempty"`
}

// Error codes the daemon returns besides the JSON-RPC standard ones. The
// message of each is a fixed sentence.
const (
	// CodeBadFile: transcribe could not read the file as audio.
	CodeBadFile = -32010
	// CodeUnavailable: the part needed (decoder, microphone) is down.
	CodeUnavailable = -32011
	// CodeBusy: transcribe refused a file because as many are already
	// decoding or waiting as the daemon takes; try again later.
	CodeBusy = -32012
)
