package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/lib/modelfile"
)

// fixedEnv pins the variables paths expand from.
func fixedEnv(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "data"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	return home
}

func TestDefault(t *testing.T) {
	home := fixedEnv(t)
	c := Default()
	checks := []struct {
		name      string
		got, want any
	}{
		{"mcp.ask_human", c.MCP.AskHuman, false},
		{"budget.ask_human_per_hour", c.Budget.AskHumanPerHour, 3},
		{"ask.max_timeout_s", c.Ask.MaxTimeoutS, 45},
		{"ask.default_timeout_s", c.Ask.DefaultTimeoutS, 45},
		{"ask.answer_silence_ms", c.Ask.AnswerSilenceMs, 1200},
		{"ask.max_answer_s", c.Ask.MaxAnswerS, 30},
		{"ask.guard_ms", c.Ask.GuardMs, 300},
		{"decode.model", c.Decode.Model, filepath.Join(home, "data", "yazses", "models", "ggml-base.en.bin")},
		{"decode.language", c.Decode.Language, "en"},
		{"decode.threads", c.Decode.Threads, 0},
		{"vad.engine", c.VAD.Engine, VADAuto},
		{"vad.model", c.VAD.Model, filepath.Join(home, "data", "yazses", "models", "ggml-silero-v5.1.2.bin")},
		{"vad.threshold", c.VAD.Threshold, 0.5},
		{"speak.voice", c.Speak.Voice, "en-us"},
		{"speak.rate", c.Speak.Rate, 170},
		{"speak.device", c.Speak.Device, ""},
		{"capture.mode", c.Capture.Mode, CaptureOnDemand},
		{"capture.backend", c.Capture.Backend, "auto"},
		{"capture.pre_roll_ms", c.Capture.PreRollMs, 300},
		{"dictation.inject", c.Dictation.Inject, "auto"},
		{"dictation.max_hold_s", c.Dictation.MaxHoldS, 180},
		{"dictation.paste_over_chars", c.Dictation.PasteOverChars, 3000},
		{"dictation.separator", c.Dictation.Separator, " "},
		{"dictation.preview", c.Dictation.Preview, false},
		{"dictation.live", c.Dictation.Live, false},
		{"hotkey.enabled", c.Hotkey.Enabled, false},
		{"hotkey.key", c.Hotkey.Key, "KEY_RIGHTCTRL"},
		{"hotkey.mode", c.Hotkey.Mode, HotkeyHold},
		{"notify.enabled", c.Notify.Enabled, true},
		{"notify.per_minute", c.Notify.PerMinute, 6},
		{"audit.max_bytes", c.Audit.MaxBytes, int64(1 << 20)},
		{"audit.keep", c.Audit.Keep, 3},
		{"children.capture", c.Children.Capture, []string{"yaz-capture"}},
		{"children.decode", c.Children.Decode, []string{"yaz-decode", "serve"}},
		{"children.speak", c.Children.Speak, []string{"yaz-speak", "--serve"}},
		{"children.gate", c.Children.Gate, []string{"yaz-gate"}},
		{"children.vad", c.Children.VAD, []string{"yaz-decode", "vad-stream"}},
	}
	for _, tc := range checks {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("Default().%s (-want +got):\n%s", tc.name, diff)
		}
	}
	// MCP hosts time a request out at 60 s (NOTES.md): the default wait must
	// stay well under it.
	if c.Ask.DefaultTimeoutS >= 60 || c.Ask.MaxTimeoutS >= 60 {
		t.Errorf("default ask timeouts %d/%d s, want under 60", c.Ask.DefaultTimeoutS, c.Ask.MaxTimeoutS)
	}
	if c.Decode.Model != modelfile.DefaultPath() {
		t.Errorf("Default().Decode.Model = %q, want modelfile.DefaultPath() %q", c.Decode.Model, modelfile.DefaultPath())
	}
	if c.VAD.Model != modelfile.DefaultVADPath() {
		t.Errorf("Default().VAD.Model = %q, want modelfile.DefaultVADPath() %q", c.VAD.Model, modelfile.DefaultVADPath())
	}
	if ps := validate(c); len(ps) > 0 {
		t.Errorf("Default() fails its own checks: %v", ps)
	}
}

func TestDefaultTOMLRoundTrip(t *testing.T) {
	fixedEnv(t)
	c, err := Parse([]byte(DefaultTOML()), "default.toml")
	if err != nil {
		t.Fatalf("Parse(DefaultTOML()): %v", err)
	}
	if diff := cmp.Diff(Default(), c); diff != "" {
		t.Errorf("Parse(DefaultTOML()) differs from Default() (-want +got):\n%s", diff)
	}
}

// A key missing from DefaultTOML would still round-trip (it keeps its
// default), so the keys are compared too.
func TestDefaultTOMLHasEveryKey(t *testing.T) {
	kl := scanKeyLines(DefaultTOML())
	var got []string
	for _, k := range kl.order {
		if strings.Contains(k, ".") {
			got = append(got, k)
		}
	}
	var want []string
	for _, k := range Keys() {
		if k == "dictation.replace" {
			continue // an array of tables: shown as a commented example
		}
		want = append(want, k)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("keys of DefaultTOML (-Keys() +DefaultTOML):\n%s", diff)
	}
	if !strings.Contains(DefaultTOML(), "# [[dictation.replace]]") {
		t.Errorf("DefaultTOML has no commented [[dictation.replace]] example")
	}
	// Every key has a comment line right above it.
	lines := strings.Split(DefaultTOML(), "\n")
	for _, k := range got {
		n := kl.line[k]
		if n < 2 || !strings.HasPrefix(lines[n-2], "#") {
			t.Errorf("DefaultTOML line %d (%s) has no comment above it", n, k)
		}
	}
}

// The commented example in DefaultTOML must work once uncommented.
func TestDefaultTOMLReplaceExample(t *testing.T) {
	fixedEnv(t)
	src := strings.ReplaceAll(DefaultTOML(), "# [[dictation.replace]]\n# from", "[[dictation.replace]]\nfrom")
	src = strings.ReplaceAll(src, "# to = ", "to = ")
	c, err := Parse([]byte(src), "config.toml")
	if err != nil {
		t.Fatalf("Parse(uncommented example): %v", err)
	}
	want := []Replacement{{From: "yaz says", To: "YazSes"}}
	if diff := cmp.Diff(want, c.Dictation.Replace); diff != "" {
		t.Errorf("replacements (-want +got):\n%s", diff)
	}
}

func TestPartialFileKeepsDefaults(t *testing.T) {
	fixedEnv(t)
	src := `
[mcp]
ask_human = true

[budget]
ask_human_per_hour = 1

[decode]
model = "~/models/tiny.bin"

[vad]
engine = "silero"
model = "$XDG_DATA_HOME/vad/silero.bin"
threshold = 0.65

[children]
decode = ["fake-decoder", "--serve", "--x"]
`
	got, err := Parse([]byte(src), "config.toml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := Default()
	want.MCP.AskHuman = true
	want.Budget.AskHumanPerHour = 1
	want.Decode.Model = filepath.Join(os.Getenv("HOME"), "models", "tiny.bin")
	want.VAD = VAD{Engine: VADSilero, Model: filepath.Join(os.Getenv("XDG_DATA_HOME"), "vad", "silero.bin"), Threshold: 0.65}
	want.Children.Decode = []string{"fake-decoder", "--serve", "--x"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse(partial) (-want +got):\n%s", diff)
	}
}

func TestEmptyFileIsDefault(t *testing.T) {
	fixedEnv(t)
	for _, src := range []string{"", "# nothing\n\n", "[mcp]\n[budget]\n"} {
		got, err := Parse([]byte(src), "config.toml")
		if err != nil {
			t.Fatalf("Parse(%q): %v", src, err)
		}
		if diff := cmp.Diff(Default(), got); diff != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", src, diff)
		}
	}
}

func TestReplacementsInOrder(t *testing.T) {
	fixedEnv(t)
	src := `[dictation]
prompt = "YazSes, whisper"

[[dictation.replace]]
from = "yaz says"
to = "YazSes"

[[dictation.replace]]
from = "full stop"
to = "."

[[dictation.replace]]
from = "um"
to = ""
`
	got, err := Parse([]byte(src), "config.toml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := []Replacement{{"yaz says", "YazSes"}, {"full stop", "."}, {"um", ""}}
	if diff := cmp.Diff(want, got.Dictation.Replace); diff != "" {
		t.Errorf("Dictation.Replace (-want +got):\n%s", diff)
	}
	if got.Dictation.Prompt != "YazSes, whisper" {
		t.Errorf("Dictation.Prompt = %q", got.Dictation.Prompt)
	}

	// The inline form is the same array.
	inline := `dictation.replace = [{from = "a", to = "b"}, {from = "c", to = "d"}]`
	got, err = Parse([]byte(inline), "config.toml")
	if err != nil {
		t.Fatalf("Parse(inline): %v", err)
	}
	want = []Replacement{{"a", "b"}, {"c", "d"}}
	if diff := cmp.Diff(want, got.Dictation.Replace); diff != "" {
		t.Errorf("inline Dictation.Replace (-want +got):\n%s", diff)
	}
}

// Each case is one bad file and the exact message it must give: the file,
// the line, the full dotted key and what is wrong.
func TestErrors(t *testing.T) {
	fixedEnv(t)
	tests := []struct {
		name, src, want string
	}{
		// Range and enum checks, one per validated key.
		{"per hour negative", "[mcp]\nask_human = true\n\n[budget]\nask_human_per_hour = -1\n",
			"config.toml:5: budget.ask_human_per_hour: must be between 0 and 60, got -1"},
		{"per hour too high", "[budget]\nask_human_per_hour = 61",
			"config.toml:2: budget.ask_human_per_hour: must be between 0 and 60, got 61"},
		{"max timeout zero", "[ask]\nmax_timeout_s = 0\ndefault_timeout_s = 1",
			"config.toml:2: ask.max_timeout_s: must be between 1 and 3600, got 0"},
		{"default timeout over max", "[ask]\nmax_timeout_s = 30\ndefault_timeout_s = 40",
			"config.toml:3: ask.default_timeout_s: must be between 1 and ask.max_timeout_s (30), got 40"},
		{"default timeout zero", "[ask]\ndefault_timeout_s = 0",
			"config.toml:2: ask.default_timeout_s: must be between 1 and ask.max_timeout_s (45), got 0"},
		{"lowered max names the default's table", "[ask]\nmax_timeout_s = 20",
			"config.toml:1: ask.default_timeout_s: must be between 1 and ask.max_timeout_s (20), got 45"},
		{"answer silence", "[ask]\nanswer_silence_ms = 100",
			"config.toml:2: ask.answer_silence_ms: must be between 200 and 10000, got 100"},
		{"max answer", "[ask]\nmax_answer_s = 0",
			"config.toml:2: ask.max_answer_s: must be between 1 and 300, got 0"},
		{"guard", "[ask]\nguard_ms = -5",
			"config.toml:2: ask.guard_ms: must be between 0 and 5000, got -5"},
		{"empty model", "[decode]\nmodel = \"\"",
			"config.toml:2: decode.model: must not be empty"},
		{"vad engine", "[vad]\nengine = \"webrtc\"",
			`config.toml:2: vad.engine: must be one of "auto", "silero", "energy", got "webrtc"`},
		{"vad empty model", "[vad]\nmodel = \"\"",
			"config.toml:2: vad.model: must not be empty"},
		{"vad model variable", "[vad]\n\nmodel = \"$VADS/x.bin\"",
			"config.toml:3: vad.model: $VADS is not expanded: only $HOME and $XDG_DATA_HOME, $XDG_CONFIG_HOME, $XDG_STATE_HOME, $XDG_CACHE_HOME, $XDG_RUNTIME_DIR are"},
		{"vad threshold high", "[vad]\nthreshold = 1.5",
			"config.toml:2: vad.threshold: must be between 0.01 and 0.99, got 1.5"},
		{"vad threshold integer", "[vad]\nthreshold = 1",
			"config.toml:2: vad.threshold: must be between 0.01 and 0.99, got 1"},
		{"vad threshold zero", "[vad]\nthreshold = 0.0",
			"config.toml:2: vad.threshold: must be between 0.01 and 0.99, got 0"},
		{"vad threshold nan", "[vad]\nthreshold = nan",
			"config.toml:2: vad.threshold: must be between 0.01 and 0.99, got NaN"},
		{"vad threshold string", "[vad]\nthreshold = \"0.5\"",
			"config.toml:2: vad.threshold: must be a number, got a string"},
		{"model variable", "[decode]\nmodel = \"$MODELS/x.bin\"",
			"config.toml:2: decode.model: $MODELS is not expanded: only $HOME and $XDG_DATA_HOME, $XDG_CONFIG_HOME, $XDG_STATE_HOME, $XDG_CACHE_HOME, $XDG_RUNTIME_DIR are"},
		{"model tilde user", "[decode]\nmodel = \"~bob/x.bin\"",
			`config.toml:2: decode.model: only "~/" is expanded, not "~user"`},
		{"language", "[decode]\nlanguage = \"English\"",
			`config.toml:2: decode.language: must be a language code such as "en", or "auto", got "English"`},
		{"threads", "[decode]\nthreads = -1",
			"config.toml:2: decode.threads: must be between 0 and 64, got -1"},
		{"beam size", "[decode]\nbeam_size = 0",
			"config.toml:2: decode.beam_size: must be between 1 and 8, got 0"},
		{"prompt too long", "[decode]\nprompt = \"" + strings.Repeat("ü", 1001) + "\"",
			"config.toml:2: decode.prompt: must be at most 1000 characters, got 1001"},
		{"voice", "[speak]\nvoice = \"-v en\"",
			`config.toml:2: speak.voice: must be an espeak-ng voice name such as "en-us", got "-v en"`},
		{"rate", "[speak]\nrate = 79",
			"config.toml:2: speak.rate: must be between 80 and 450, got 79"},
		{"speak device", "[speak]\ndevice = \"yaz\\u0007\"",
			"config.toml:2: speak.device: must not contain control characters"},
		{"speak device type", "[speak]\ndevice = 3",
			"config.toml:2: speak.device: must be a string, got an integer"},
		{"capture device", "[capture]\ndevice = \"a\\nb\"",
			"config.toml:2: capture.device: must not contain control characters"},
		{"capture backend", "[capture]\nbackend = \"jack\"",
			`config.toml:2: capture.backend: must be one of "auto", "pulseaudio", "alsa", "null", got "jack"`},
		{"capture mode", "[capture]\nmode = \"sometimes\"",
			`config.toml:2: capture.mode: must be "on-demand" or "always", got "sometimes"`},
		{"pre-roll", "[capture]\npre_roll_ms = 5000",
			"config.toml:2: capture.pre_roll_ms: must be between 0 and 2000, got 5000"},
		{"inject", "[dictation]\ninject = \"xdotol\"",
			`config.toml:2: dictation.inject: must be one of "auto", "wayland", "portal", "ibus", "wtype", "x11", "xdotool", "ydotool", "clipboard", "stdout", got "xdotol"`},
		{"separator newline", "[dictation]\nseparator = \"\\n\"",
			`config.toml:2: dictation.separator: must be at most 4 spaces ("" for none; never a line break: nothing types an Enter), got "\n"`},
		{"separator word", "[dictation]\nseparator = \" and \"",
			`config.toml:2: dictation.separator: must be at most 4 spaces ("" for none; never a line break: nothing types an Enter), got " and "`},
		{"paste over chars", "[dictation]\npaste_over_chars = -1",
			"config.toml:2: dictation.paste_over_chars: must be between 0 and 1000000, got -1"},
		{"min utterance", "[dictation]\nmin_utterance_ms = -1",
			"config.toml:2: dictation.min_utterance_ms: must be between 0 and 5000, got -1"},
		{"tail", "[dictation]\ntail_ms = 2001",
			"config.toml:2: dictation.tail_ms: must be between 0 and 2000, got 2001"},
		{"post process empty program", "[dictation]\npost_process = [\"\", \"x\"]",
			"config.toml:2: dictation.post_process: must name a program: a non-empty array of strings, or [] for none"},
		{"post process NUL", "[dictation]\npost_process = [\"tr\", \"a\\u0000\"]",
			"config.toml:2: dictation.post_process[1]: must not contain a NUL character"},
		{"post process timeout low", "[dictation]\npost_process_timeout_ms = 99",
			"config.toml:2: dictation.post_process_timeout_ms: must be between 100 and 30000, got 99"},
		{"post process timeout high", "[dictation]\npost_process_timeout_ms = 30001",
			"config.toml:2: dictation.post_process_timeout_ms: must be between 100 and 30000, got 30001"},
		{"auto stop", "[dictation]\nauto_stop_ms = 100",
			"config.toml:2: dictation.auto_stop_ms: must be 0 (off) or between 300 and 60000, got 100"},
		{"max hold", "[dictation]\nmax_hold_s = 241",
			"config.toml:2: dictation.max_hold_s: must be between 5 and 240, got 241"},
		{"max hold zero", "[dictation]\nmax_hold_s = 0",
			"config.toml:2: dictation.max_hold_s: must be between 5 and 240, got 0"},
		{"dictation prompt", "[dictation]\nprompt = \"" + strings.Repeat("a", 1001) + "\"",
			"config.toml:2: dictation.prompt: must be at most 1000 characters, got 1001"},
		{"replace empty from", "[dictation]\n[[dictation.replace]]\nfrom = \"a\"\nto = \"b\"\n[[dictation.replace]]\nfrom = \" \"\nto = \"x\"",
			"config.toml:6: dictation.replace[1].from: must not be empty"},
		{"replace missing from", "[[dictation.replace]]\nto = \"x\"",
			"config.toml:1: dictation.replace[0].from: must not be empty"},
		{"replace newline", "[[dictation.replace]]\nfrom = \"send\"\nto = \"\\n\"",
			"config.toml:1: dictation.replace[0]: must be valid UTF-8 without control characters"},
		{"hotkey key", "[hotkey]\nkey = \"rightctrl\"",
			`config.toml:2: hotkey.key: must be a Linux input key name such as "KEY_RIGHTCTRL", got "rightctrl"`},
		{"hotkey key unknown", "[mcp]\nask_human = true\n[hotkey]\nenabled = true\nkey = \"KEY_NOPE\"",
			`config.toml:5: hotkey.key: unknown key "KEY_NOPE": use a name from linux/input-event-codes.h such as "KEY_RIGHTCTRL" or "KEY_F13"`},
		{"hotkey mode", "[hotkey]\nmode = \"press\"",
			`config.toml:2: hotkey.mode: must be "hold" or "toggle", got "press"`},
		{"hotkey source", "[hotkey]\nsource = \"gnome\"",
			`config.toml:2: hotkey.source: must be "evdev" or "portal", got "gnome"`},
		{"inject", "[dictation]\ninject = \"remotedesktop\"",
			`config.toml:2: dictation.inject: must be one of "auto", "wayland", "portal", "ibus", "wtype", "x11", "xdotool", "ydotool", "clipboard", "stdout", got "remotedesktop"`},
		{"hotkey device relative", "[hotkey]\ndevice = \"event3\"",
			"config.toml:2: hotkey.device: must be an absolute path such as /dev/input/event3, or empty"},
		{"notify per minute", "[notify]\nper_minute = 0",
			"config.toml:2: notify.per_minute: must be between 1 and 60, got 0"},
		{"audit bytes", "[audit]\nmax_bytes = 100",
			"config.toml:2: audit.max_bytes: must be between 4096 and 1073741824, got 100"},
		{"audit keep", "[audit]\nkeep = -1",
			"config.toml:2: audit.keep: must be between 0 and 100, got -1"},
		{"empty child", "[children]\ngate = []",
			"config.toml:2: children.gate: must name a program: a non-empty array of strings"},
		{"empty child program", "[children]\nspeak = [\"\", \"--serve\"]",
			"config.toml:2: children.speak: must name a program: a non-empty array of strings"},
		{"NUL in child argument", "[children]\ncapture = [\"yaz-capture\", \"a\\u0000b\"]",
			"config.toml:2: children.capture[1]: must not contain a NUL character"},

		// Unknown keys, at every depth, with their line.
		{"unknown key", "[budget]\nask_human_per_hour = 2\nper_hour = 5",
			"config.toml:3: budget.per_hour: unknown key (did you mean budget.ask_human_per_hour?)"},
		{"unknown table", "# comment\n[budgett]\nask_human_per_hour = 1",
			"config.toml:2: budgett: unknown key (did you mean budget?)"},
		{"unknown top-level key", "\n\nverbose = true",
			"config.toml:3: verbose: unknown key"},
		{"unknown dotted key", "mcp.ask_humans = true",
			"config.toml:1: mcp.ask_humans: unknown key (did you mean mcp.ask_human?)"},
		{"unknown quoted key", "[speak]\n\"voice name\" = \"en\"",
			`config.toml:2: speak."voice name": unknown key (did you mean speak.voice?)`},
		{"unknown key in replacement", "[[dictation.replace]]\nfrom = \"a\"\n[[dictation.replace]]\nfrom = \"b\"\nwith = \"c\"",
			"config.toml:5: dictation.replace[1].with: unknown key"},
		{"unknown key in inline table takes the table's line", "\nbudget = { per_hour = 1 }",
			"config.toml:2: budget.per_hour: unknown key (did you mean budget.ask_human_per_hour?)"},
		{"unknown key after multi-line string", "[decode]\nprompt = \"\"\"\nnames = 1\n\"\"\"\nmodle = \"x\"",
			"config.toml:5: decode.modle: unknown key (did you mean decode.model?)"},

		// Wrong types, with their line.
		{"string for int", "[budget]\nask_human_per_hour = \"3\"",
			"config.toml:2: budget.ask_human_per_hour: must be an integer, got a string"},
		{"float for int", "[speak]\nrate = 170.5",
			"config.toml:2: speak.rate: must be an integer, got a float"},
		{"int for bool", "[mcp]\nask_human = 1",
			"config.toml:2: mcp.ask_human: must be true or false, got an integer"},
		{"string for bool", "[notify]\nenabled = \"yes\"",
			"config.toml:2: notify.enabled: must be true or false, got a string"},
		{"int for string", "[decode]\nlanguage = 1",
			"config.toml:2: decode.language: must be a string, got an integer"},
		{"date for string", "[decode]\nmodel = 2024-01-01",
			"config.toml:2: decode.model: must be a string, got a date-time"},
		{"value for table", "budget = 3",
			"config.toml:1: budget: must be a table, got an integer"},
		{"string for argv", "[children]\ndecode = \"yaz-decode --serve\"",
			"config.toml:2: children.decode: must be an array of strings, got a string"},
		{"int in argv", "[children]\ndecode = [\n  \"yaz-decode\",\n  3,\n]",
			"config.toml:2: children.decode[1]: must be a string, got an integer"},
		{"table for replacements", "[dictation.replace]\nfrom = \"a\"",
			"config.toml:1: dictation.replace: must be an array of tables ([[dictation.replace]]), got a table"},
		{"string in replacements", "[dictation]\nreplace = [\"a\"]",
			"config.toml:2: dictation.replace[0]: must be a table, got a string"},

		// Syntax errors keep the library's message and line.
		{"syntax", "[mcp]\nask_human = tru\n",
			"config.toml:2: toml: expected value but found \"tru\" instead"},
		{"duplicate key", "[mcp]\nask_human = true\nask_human = false\n",
			"config.toml:3: toml: Key 'mcp.ask_human' has already been defined."},
		// An error found at a line's end is on that line, not the next
		// (the library counted the newline it had read).
		{"table header without ]", "[mcp\nask_human = true\n",
			`config.toml:1: toml: expected '.' or ']' to end table name, but got '\n' instead`},
		{"array header without ]]", "[speak]\nrate = 170\n[[dictation.replace\nfrom = \"a\"\n",
			`config.toml:3: toml: expected '.' or ']' to end table name, but got '\n' instead`},
		{"key without =", "[mcp]\nask_human\n",
			`config.toml:2: toml: expected '.' or '=', but got '\n' instead`},
		{"string not closed", "[speak]\nvoice = \"en\nrate = 170\n",
			"config.toml:2: toml: strings cannot contain newlines"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.src), "config.toml")
			if err == nil {
				t.Fatalf("Parse(%q) = nil error, want %q", tc.src, tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("Parse(%q) error:\n got %s\nwant %s", tc.src, err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("Parse error %T is not an *Error", err)
			}
			if diff := cmp.Diff(Config{}, c); diff != "" {
				t.Errorf("Parse returned a Config with its error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrorFields(t *testing.T) {
	fixedEnv(t)
	_, err := Parse([]byte("[budget]\n\nask_human_per_hour = 99\n"), "/etc/x/config.toml")
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Parse error %v is not an *Error", err)
	}
	want := &Error{File: "/etc/x/config.toml", Line: 3, Key: "budget.ask_human_per_hour", Msg: "must be between 0 and 60, got 99"}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Errorf("*Error (-want +got):\n%s", diff)
	}
}

func TestEveryProblemInLineOrder(t *testing.T) {
	fixedEnv(t)
	src := `[speak]
rate = 10
[budget]
ask_human_per_hour = "x"
[capture]
mode = "never"
colour = "blue"
`
	_, err := Parse([]byte(src), "c.toml")
	want := strings.Join([]string{
		"c.toml:2: speak.rate: must be between 80 and 450, got 10",
		"c.toml:4: budget.ask_human_per_hour: must be an integer, got a string",
		`c.toml:6: capture.mode: must be "on-demand" or "always", got "never"`,
		"c.toml:7: capture.colour: unknown key",
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("Parse error:\n%v\nwant:\n%s", err, want)
	}
}

// Errors must not repeat what a user typed as a prompt or a replacement:
// those can be personal words.
func TestErrorsDoNotEchoText(t *testing.T) {
	fixedEnv(t)
	const marker = "SECRETMARKER"
	src := "[decode]\nprompt = \"" + marker + strings.Repeat("x", 1000) + "\"\n" +
		"[[dictation.replace]]\nfrom = \"" + marker + "\"\nto = \"" + marker + "\\u0007\"\n"
	_, err := Parse([]byte(src), "config.toml")
	if err == nil {
		t.Fatal("Parse accepted a bad prompt and replacement")
	}
	if strings.Contains(err.Error(), marker) {
		t.Errorf("error repeats the text: %v", err)
	}
}

func TestLoad(t *testing.T) {
	fixedEnv(t)
	dir := t.TempDir()

	missing := filepath.Join(dir, "nope", "config.toml")
	c, err := Load(missing)
	if err != nil {
		t.Fatalf("Load(missing): %v", err)
	}
	if diff := cmp.Diff(Default(), c); diff != "" {
		t.Errorf("Load(missing) (-want +got):\n%s", diff)
	}
	if ok, err := Exists(missing); ok || err != nil {
		t.Errorf("Exists(missing) = %v, %v; want false, nil", ok, err)
	}

	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte("[speak]\nrate = 200\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.Speak.Rate != 200 {
		t.Errorf("Load: Speak.Rate = %d, want 200", c.Speak.Rate)
	}
	if ok, err := Exists(path); !ok || err != nil {
		t.Errorf("Exists(file) = %v, %v; want true, nil", ok, err)
	}

	if err := os.WriteFile(path, []byte("[speak]\nrate = 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path)
	if want := path + ":2: speak.rate: must be between 80 and 450, got 2"; err == nil || err.Error() != want {
		t.Errorf("Load(bad) error = %v, want %s", err, want)
	}

	// A directory is not a missing file.
	if _, err := Load(dir); err == nil {
		t.Errorf("Load(directory) = nil error")
	}
}

func TestPath(t *testing.T) {
	home := fixedEnv(t)
	tests := []struct{ xdg, want string }{
		{"/xdg/conf", "/xdg/conf/yazses/config.toml"},
		{"", filepath.Join(home, ".config/yazses/config.toml")},
		{"relative/dir", filepath.Join(home, ".config/yazses/config.toml")},
	}
	for _, tc := range tests {
		t.Setenv("XDG_CONFIG_HOME", tc.xdg)
		if got := Path(); got != tc.want {
			t.Errorf("Path() with XDG_CONFIG_HOME=%q = %q, want %q", tc.xdg, got, tc.want)
		}
	}
}

func TestExpandPath(t *testing.T) {
	home := fixedEnv(t)
	tests := []struct {
		in, want, err string
	}{
		{in: "/abs/model.bin", want: "/abs/model.bin"},
		{in: "rel/model.bin", want: "rel/model.bin"},
		{in: "~", want: home},
		{in: "~/m/x.bin", want: home + "/m/x.bin"},
		{in: "$HOME/x", want: home + "/x"},
		{in: "${HOME}x", want: home + "x"},
		{in: "$XDG_DATA_HOME/yazses/models/ggml-base.en.bin", want: home + "/data/yazses/models/ggml-base.en.bin"},
		{in: "${XDG_CONFIG_HOME}/a", want: home + "/config/a"},
		{in: "$XDG_STATE_HOME/a", want: home + "/.local/state/a"},
		{in: "$XDG_CACHE_HOME/a", want: home + "/.cache/a"},
		{in: "$XDG_RUNTIME_DIR/a", want: "/run/user/1000/a"},
		{in: "/price$$5", want: "/price$5"},
		{in: "~bob/x", err: `only "~/" is expanded, not "~user"`},
		{in: "$USER/x", err: "$USER is not expanded"},
		{in: "/a/$", err: `"$" without a variable name`},
		{in: "${XDG_DATA_HOME", err: `unclosed "${"`},
	}
	for _, tc := range tests {
		got, err := ExpandPath(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ExpandPath(%q) = %q, %v; want error containing %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ExpandPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}

	t.Setenv("XDG_RUNTIME_DIR", "")
	if got, err := ExpandPath("$XDG_RUNTIME_DIR/x"); err == nil {
		t.Errorf("ExpandPath with XDG_RUNTIME_DIR unset = %q, want an error", got)
	}
	t.Setenv("XDG_DATA_HOME", "not/absolute")
	if got, _ := ExpandPath("$XDG_DATA_HOME/m"); got != home+"/.local/share/m" {
		t.Errorf("ExpandPath with a relative XDG_DATA_HOME = %q, want the default", got)
	}
}

func TestPathsExpandedInParse(t *testing.T) {
	home := fixedEnv(t)
	src := `[hotkey]
device = "$XDG_RUNTIME_DIR/kbd"
[children]
speak = ["~/bin/fake-speak", "~/not-expanded"]
`
	c, err := Parse([]byte(src), "config.toml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if c.Hotkey.Device != "/run/user/1000/kbd" {
		t.Errorf("Hotkey.Device = %q", c.Hotkey.Device)
	}
	want := []string{home + "/bin/fake-speak", "~/not-expanded"}
	if diff := cmp.Diff(want, c.Children.Speak); diff != "" {
		t.Errorf("Children.Speak (-want +got):\n%s", diff)
	}
}

func TestNeedsRestart(t *testing.T) {
	fixedEnv(t)
	old := Default()
	reload := Default()
	reload.MCP.AskHuman = true
	reload.Budget.AskHumanPerHour = 1
	reload.Ask.MaxTimeoutS = 30
	reload.Ask.DefaultTimeoutS = 30
	reload.Dictation.Inject = "stdout"
	reload.Dictation.Replace = []Replacement{{"a", "b"}}
	reload.Notify.PerMinute = 2
	reload.Audit.Keep = 1
	if got := NeedsRestart(old, reload); len(got) != 0 {
		t.Errorf("NeedsRestart(reloadable changes) = %v, want none", got)
	}

	restart := reload
	restart.Decode.Model = "/m.bin"
	restart.Speak.Rate = 200
	restart.Capture.Mode = CaptureAlways
	restart.Hotkey.Enabled = true
	restart.Children.Gate = []string{"other-gate"}
	restart.Dictation.Prompt = "words"
	want := []string{"decode.model", "speak.rate", "capture.mode", "dictation.prompt", "hotkey.enabled", "children.gate"}
	if diff := cmp.Diff(want, NeedsRestart(old, restart)); diff != "" {
		t.Errorf("NeedsRestart (-want +got):\n%s", diff)
	}
	for _, k := range []string{"mcp.ask_human", "budget.ask_human_per_hour"} {
		if RestartOnly(k) {
			t.Errorf("RestartOnly(%q) = true: the opt-in and the budget are read on reload", k)
		}
	}
}

func TestKeys(t *testing.T) {
	got := Keys()
	// Every key is documented: a key added without its entry in
	// docs/config.md fails here (no count to bump when keys are added).
	doc, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range got {
		if !strings.Contains(string(doc), "`"+k+"`") {
			t.Errorf("docs/config.md does not document `%s`", k)
		}
	}
	for _, k := range []string{"mcp.ask_human", "budget.ask_human_per_hour", "speak.device", "dictation.replace", "children.gate"} {
		found := false
		for _, g := range got {
			found = found || g == k
		}
		if !found {
			t.Errorf("Keys() lacks %s", k)
		}
	}
}

// Live text needs pieces: with eager_pause_ms 0 they end at LivePauseMs;
// a pause set is kept; without live, 0 is none.
func TestPieceMs(t *testing.T) {
	for _, tc := range []struct {
		d    Dictation
		want int
	}{
		{Dictation{}, 0},
		{Dictation{EagerPauseMs: 500}, 500},
		{Dictation{Live: true}, LivePauseMs},
		{Dictation{Live: true, EagerPauseMs: 800}, 800},
	} {
		if got := tc.d.PieceMs(); got != tc.want {
			t.Errorf("%+v.PieceMs() = %d, want %d", tc.d, got, tc.want)
		}
	}
}

// TestPackagedVADModel: vad.model left at its default (or written as the
// default, as make install's file has it) takes a packaged Silero model
// where the user fetched none; a path the user chose stays.
func TestPackagedVADModel(t *testing.T) {
	data, sys := t.TempDir(), t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	t.Setenv("XDG_DATA_DIRS", sys)
	packaged := filepath.Join(sys, "yazses", "models", "ggml-silero-v6.2.0.bin")
	if err := os.MkdirAll(filepath.Dir(packaged), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(packaged, []byte("model"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, file := range map[string]string{
		"unset":              "",
		"written as default": "[vad]\nmodel = \"$XDG_DATA_HOME/yazses/models/ggml-silero-v5.1.2.bin\"\n",
	} {
		c, err := Parse([]byte(file), "config.toml")
		if err != nil {
			t.Fatal(err)
		}
		if c.VAD.Model != packaged {
			t.Errorf("%s: vad.model = %s, want the packaged %s", name, c.VAD.Model, packaged)
		}
	}
	if got := Default().VAD.Model; got != packaged {
		t.Errorf("Default().VAD.Model = %s, want the packaged %s", got, packaged)
	}
	own := filepath.Join(t.TempDir(), "mine.bin")
	c, err := Parse([]byte("[vad]\nmodel = \""+own+"\"\n"), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.VAD.Model != own {
		t.Errorf("a chosen vad.model became %s, want %s", c.VAD.Model, own)
	}
}

// TestPostProcessNotWithLive: dictation.post_process and dictation.live
// (typing pieces while the key is held) are refused together. In a tree
// without the live key, the key is unknown, and the check is keyed on the
// field's name so that it holds once the key exists.
func TestPostProcessNotWithLive(t *testing.T) {
	fixedEnv(t)
	_, err := Parse([]byte("[dictation]\npost_process = [\"tr\", \"a-z\", \"A-Z\"]\nlive = true\n"), "config.toml")
	if _, ok := reflect.TypeFor[Dictation]().FieldByName("Live"); !ok {
		if err == nil || !strings.Contains(err.Error(), "dictation.live: unknown key") {
			t.Errorf("Parse with dictation.live in a tree without it = %v, want an unknown key", err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), "dictation.post_process: is not combined with dictation.live") {
		t.Errorf("Parse with post_process and live = %v, want them refused together", err)
	}
}
