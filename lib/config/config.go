// Package config is the configuration of the YazSes daemon, yazsesd: one TOML
// file at $XDG_CONFIG_HOME/yazses/config.toml (default
// ~/.config/yazses/config.toml). docs/config.md is the reference for every
// key; DefaultTOML is the same set of keys as a commented file.
//
// Every key is optional: a missing file, a missing table or a missing key
// keeps the default. What the file does say is checked strictly: a syntax
// error, an unknown key, a value of the wrong type and a value out of range
// are all refused, each with the file, the line and the key's full dotted
// name:
//
//	config.toml:12: budget.ask_human_per_hour: must be between 0 and 60, got -1
//
// Parse reports every problem it finds, in line order, as one error; each is
// an *Error (use errors.As for the first).
//
// Paths (decode.model, hotkey.device and the program of each children
// command) may start with "~/" and may use $HOME and the XDG base
// directories ($XDG_DATA_HOME, $XDG_CONFIG_HOME, $XDG_STATE_HOME,
// $XDG_CACHE_HOME, $XDG_RUNTIME_DIR, also as ${NAME}); an unset or relative
// XDG variable takes its default from the XDG base directory specification.
// A Config returned by Default, Parse or Load holds the expanded paths.
//
// The package is pure Go (no cgo), so yazsesd builds with CGO_ENABLED=0.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/yazses/yazses/lib/modelfile"
)

// Config is the whole configuration. Each field is one TOML table.
type Config struct {
	MCP       MCP       `toml:"mcp"`
	Budget    Budget    `toml:"budget"`
	Ask       Ask       `toml:"ask"`
	Decode    Decode    `toml:"decode"`
	VAD       VAD       `toml:"vad"`
	Speak     Speak     `toml:"speak"`
	Capture   Capture   `toml:"capture"`
	Dictation Dictation `toml:"dictation"`
	Hotkey    Hotkey    `toml:"hotkey"`
	Notify    Notify    `toml:"notify"`
	Audit     Audit     `toml:"audit"`
	Children  Children  `toml:"children"`
}

// MCP is what MCP clients (through yaz-mcp) may do.
type MCP struct {
	// AskHuman offers the ask_human tool at all. Off (the default) means the
	// tool is not even listed.
	AskHuman bool `toml:"ask_human"`
}

// Budget is the interruption budget held by yaz-gate.
type Budget struct {
	// AskHumanPerHour is how many questions may be spoken in any sliding
	// hour, 0 to MaxAskHumanPerHour; 0 refuses every call.
	AskHumanPerHour int `toml:"ask_human_per_hour"`
}

// Ask is the timing of one ask_human call.
type Ask struct {
	// MaxTimeoutS caps the timeout a caller may ask for, in seconds.
	MaxTimeoutS int `toml:"max_timeout_s"`
	// DefaultTimeoutS is the timeout of a call that gives none, in seconds;
	// at most MaxTimeoutS.
	DefaultTimeoutS int `toml:"default_timeout_s"`
	// AnswerSilenceMs of silence after speech ends the answer.
	AnswerSilenceMs int `toml:"answer_silence_ms"`
	// MaxAnswerS caps the length of the recorded answer, in seconds.
	MaxAnswerS int `toml:"max_answer_s"`
	// GuardMs is the pause between the end of the spoken question and the
	// start of answer capture, so the question's own sound is not taken for
	// the answer.
	GuardMs int `toml:"guard_ms"`
}

// Decode is the resident speech-to-text decoder (yaz-decode serve).
type Decode struct {
	// Model is the whisper ggml model file (expanded path).
	Model string `toml:"model"`
	// Language is the spoken language code ("en"), or "auto" on a
	// multilingual model.
	Language string `toml:"language"`
	// Threads is the CPU thread count; 0 picks one (up to 4).
	Threads int `toml:"threads"`
	// Prompt is a vocabulary hint for every utterance the daemon decodes.
	Prompt string `toml:"prompt"`
	// BeamSize is 1 for greedy decoding, more for beam search of that width.
	BeamSize int `toml:"beam_size"`
	// Device is where the model runs: "auto", "cpu", "gpu" or "gpu:N"
	// (yaz-decode --device; "gpu" is a hardware GPU, else the CPU with a
	// warning).
	Device string `toml:"device"`
}

// VAD is the voice-activity detector: what decides whether audio holds
// speech. The decoder child gets it (yaz-decode --vad, --vad-model,
// --vad-threshold) for its "was anything said?" check; the daemon decides
// with it too (a yaz-decode vad-stream child, children.vad).
type VAD struct {
	// Engine is VADAuto (Silero VAD when Model exists, else the energy
	// detector), VADSilero (Model must be usable) or VADEnergy.
	Engine string `toml:"engine"`
	// Model is the Silero VAD ggml model file (expanded path).
	Model string `toml:"model"`
	// Threshold is the speech probability, MinVADThreshold to
	// MaxVADThreshold, at which Silero counts 32 ms of audio as speech;
	// higher starts less often in noise, lower catches softer speech.
	Threshold float64 `toml:"threshold"`
}

// Speak is the text-to-speech child (yaz-speak --serve).
type Speak struct {
	// Voice is an espeak-ng voice name ("en-us", "en-us+f3").
	Voice string `toml:"voice"`
	// Rate is the speed in words per minute, MinRate to MaxRate.
	Rate int `toml:"rate"`
	// Device is the voice's playback device: an ID as yaz-capture
	// --list-devices lists playback devices; "" is the backend's default
	// device.
	Device string `toml:"device"`
}

// Capture is the microphone child (yaz-capture).
type Capture struct {
	// Device is a capture device ID as yaz-capture lists devices; "" is
	// the backend's default device.
	Device string `toml:"device"`
	// Backend is one of CaptureBackends.
	Backend string `toml:"backend"`
	// Mode is CaptureOnDemand (the microphone opens only for a hold or an
	// answer) or CaptureAlways (it stays open, feeding the pre-roll ring).
	Mode string `toml:"mode"`
	// PreRollMs of audio from before hold.start are kept when Mode is
	// CaptureAlways.
	PreRollMs int `toml:"pre_roll_ms"`
}

// Dictation is push-to-talk typing.
type Dictation struct {
	// Prompt is a vocabulary hint for dictation only; when set it replaces
	// decode.prompt for dictation holds (never for ask_human answers).
	Prompt string `toml:"prompt"`
	// Inject is one of InjectBackends; "auto" picks from the session.
	Inject string `toml:"inject"`
	// PasteOverChars: longer texts are pasted through the clipboard
	// (restored after) instead of typed; 0 never pastes.
	PasteOverChars int `toml:"paste_over_chars"`
	// MinUtteranceMs: shorter holds produce nothing.
	MinUtteranceMs int `toml:"min_utterance_ms"`
	// TailMs is the most audio still recorded after hold.stop: the tail
	// ends when the voice detector hears the speaker stop.
	TailMs int `toml:"tail_ms"`
	// AutoStopMs, when not 0, ends a toggled hold by itself after this
	// much silence (as the voice detector hears it), as if released.
	AutoStopMs int `toml:"auto_stop_ms"`
	// EagerPauseMs, when not 0, decodes a hold in pieces while it goes
	// on: each pause of this length ends a piece.
	EagerPauseMs int `toml:"eager_pause_ms"`
	// Live types each piece decided while the key is held at once into
	// the focused window, append-only (never taken back); with
	// EagerPauseMs 0 the pieces end at LivePauseMs.
	Live bool `toml:"live"`
	// MaxHoldS ends a hold by itself after this many seconds, as if
	// released: what was said is decoded and typed.
	MaxHoldS int `toml:"max_hold_s"`
	// Preview puts the text decoded so far in a hold into the live state
	// (the watch method): the owner's opt-in, off by default.
	Preview bool `toml:"preview"`
	// Replace is applied to each dictated transcript, in order.
	Replace []Replacement `toml:"replace"`
	// Separator is typed after each dictation's text (unless the text
	// ends with whitespace), so that the next dictation into the same
	// field does not run into it: spaces only ("" for none).
	Separator string `toml:"separator"`
	// Cues plays a short generated tone through the speaker child when a
	// hold starts listening and when it stops (dictation.cues): the
	// owner's opt-in, off by default.
	Cues bool `toml:"cues"`
	// PostProcess, when not empty, is a command (an argv, run without a
	// shell) that each dictation's text goes through: the text on its
	// stdin, the text to type from its stdout. Empty: none.
	PostProcess []string `toml:"post_process"`
	// PostProcessTimeoutMs bounds one run of PostProcess; past it the
	// command's process group is killed and the text typed as it was.
	PostProcessTimeoutMs int `toml:"post_process_timeout_ms"`
}

// LivePauseMs is the pause that ends a piece of live text
// (Dictation.Live) when Dictation.EagerPauseMs is 0: live text needs
// pieces, and 300 ms suits most speakers.
const LivePauseMs = 300

// PieceMs is the pause, in milliseconds, that ends a piece of a hold: 0
// for none (one decode at the release).
func (d Dictation) PieceMs() int {
	if d.EagerPauseMs == 0 && d.Live {
		return LivePauseMs
	}
	return d.EagerPauseMs
}

// Replacement replaces one exact word or phrase in dictated text.
type Replacement struct {
	From string `toml:"from"`
	To   string `toml:"to"`
}

// Hotkey is the push-to-talk key inside the daemon.
type Hotkey struct {
	// Enabled starts the daemon's own key source: the evdev listener
	// (it needs read access to /dev/input), or with Source "portal" the
	// desktop's GlobalShortcuts portal. Off by default: compositor
	// bindings that run `yazsesd ctl hold …` need neither.
	Enabled bool `toml:"enabled"`
	// Source is HotkeySourceEvdev or HotkeySourcePortal.
	Source string `toml:"source"`
	// Key is a Linux input key name such as "KEY_RIGHTCTRL".
	Key string `toml:"key"`
	// Mode is HotkeyHold (talk while held) or HotkeyToggle (press to start,
	// press again to stop).
	Mode string `toml:"mode"`
	// Device is an input event device (expanded path); "" watches every
	// keyboard.
	Device string `toml:"device"`
}

// Notify is desktop notifications.
type Notify struct {
	Enabled bool `toml:"enabled"`
	// PerMinute caps how many notifications are shown in any minute.
	PerMinute int `toml:"per_minute"`
}

// Audit is the content-free audit log at $XDG_STATE_HOME/yazses/audit.jsonl.
type Audit struct {
	// MaxBytes is the size at which the log is rotated.
	MaxBytes int64 `toml:"max_bytes"`
	// Keep is how many rotated files are kept (audit.jsonl.1 …); 0 keeps
	// none.
	Keep int `toml:"keep"`
}

// Children are the commands yazsesd starts, each an argv. A program name
// without a slash is looked up next to yazsesd first, then in PATH (see
// ResolveCommand).
type Children struct {
	Capture []string `toml:"capture"`
	Decode  []string `toml:"decode"`
	Speak   []string `toml:"speak"`
	Gate    []string `toml:"gate"`
	// VAD is the daemon's voice detector when vad.engine selects Silero
	// VAD: frames in, a speech probability per 32 ms window out
	// (yaz-decode vad-stream, package vadwire).
	VAD []string `toml:"vad"`
	// Type types the dictated text into the focused window (yaz-type
	// --serve, package typewire).
	Type []string `toml:"type"`
}

// Allowed values.
const (
	CaptureOnDemand = "on-demand"
	CaptureAlways   = "always"
	HotkeyHold      = "hold"
	HotkeyToggle    = "toggle"

	HotkeySourceEvdev  = "evdev"
	HotkeySourcePortal = "portal"
	VADAuto            = "auto"
	VADSilero          = "silero"
	VADEnergy          = "energy"

	// MaxAskHumanPerHour is the highest budget.ask_human_per_hour.
	MaxAskHumanPerHour = 60
	// MinRate and MaxRate bound speak.rate (espeak-ng's own range, as in
	// package tts).
	MinRate = 80
	MaxRate = 450
	// MinVADThreshold and MaxVADThreshold bound vad.threshold (those of
	// yaz-decode --vad-threshold).
	MinVADThreshold = 0.01
	MaxVADThreshold = 0.99
)

// CaptureBackends are the values of capture.backend (those of package
// audio's Backends).
var CaptureBackends = []string{"auto", "pulseaudio", "alsa", "null"}

// InjectBackends are the values of dictation.inject.
var InjectBackends = []string{"auto", "wayland", "portal", "ibus", "wtype", "x11", "xdotool", "ydotool", "clipboard", "stdout"}

// Default returns the configuration used when the file says nothing, with
// paths expanded for the current environment.
func Default() Config {
	c := rawDefault()
	if p, err := ExpandPath(c.Decode.Model); err == nil {
		c.Decode.Model = p
	}
	c.VAD.Model = modelfile.DefaultVADPath()
	return c
}

// rawDefault is Default before path expansion: the values DefaultTOML shows.
func rawDefault() Config {
	return Config{
		MCP:    MCP{AskHuman: false},
		Budget: Budget{AskHumanPerHour: 3},
		Ask: Ask{
			MaxTimeoutS:     45,
			DefaultTimeoutS: 45,
			AnswerSilenceMs: 1200,
			MaxAnswerS:      30,
			GuardMs:         300,
		},
		Decode: Decode{
			Model:    defaultModel,
			Language: "en",
			Threads:  0,
			Prompt:   "",
			BeamSize: 1,
			Device:   "auto",
		},
		VAD:     VAD{Engine: VADAuto, Model: defaultVADModel, Threshold: 0.5},
		Speak:   Speak{Voice: "en-us", Rate: 170, Device: ""},
		Capture: Capture{Device: "", Backend: "auto", Mode: CaptureOnDemand, PreRollMs: 300},
		Dictation: Dictation{
			Prompt:         "",
			Inject:         "auto",
			PasteOverChars: 3000,
			Separator:      " ",
			MinUtteranceMs: 300,
			TailMs:         200,
			MaxHoldS:       180,
			Preview:        false,
			Live:           false,
			Replace:        nil,
			Cues:           false,
			PostProcess:    []string{},

			PostProcessTimeoutMs: 3000,
		},
		Hotkey: Hotkey{Enabled: false, Source: HotkeySourceEvdev, Key: "KEY_RIGHTCTRL", Mode: HotkeyHold, Device: ""},
		Notify: Notify{Enabled: true, PerMinute: 6},
		Audit:  Audit{MaxBytes: 1 << 20, Keep: 3},
		Children: Children{
			Capture: []string{"yaz-capture"},
			Decode:  []string{"yaz-decode", "serve"},
			Speak:   []string{"yaz-speak", "--serve"},
			Gate:    []string{"yaz-gate"},
			VAD:     []string{"yaz-decode", "vad-stream"},
			Type:    []string{"yaz-type", "--serve"},
		},
	}
}

// Path is the configuration file: $XDG_CONFIG_HOME/yazses/config.toml,
// ~/.config/yazses/config.toml when XDG_CONFIG_HOME is unset or relative.
func Path() string {
	return filepath.Join(xdgDir("XDG_CONFIG_HOME"), "yazses", "config.toml")
}

// Load reads and parses the file at path. A file that does not exist is not
// an error: Load returns Default() (use Exists to tell the two apart). Parse
// errors name the path, the line and the key.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Default(), nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("load config: %w", err)
	}
	return Parse(data, path)
}

// Exists reports whether a configuration file is at path. A file that
// cannot be checked for another reason (permissions) is an error.
func Exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check config: %w", err)
	}
	return true, nil
}

// Error is one problem in a configuration file.
type Error struct {
	File string // as given to Parse
	Line int    // 1-based; 0 when the key is not written in the file
	Key  string // full dotted key ("dictation.replace[0].from"); "" for syntax errors
	Msg  string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Key == "" {
		return loc + ": " + e.Msg
	}
	return loc + ": " + e.Key + ": " + e.Msg
}
