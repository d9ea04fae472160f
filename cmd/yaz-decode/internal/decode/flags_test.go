package decode

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/lib/cli"
)

// parse parses args as Main does (the old mode flags rewritten, then
// kong), without running anything: the grammar filled in, the command
// chosen, or the exit code and stderr of a refusal.
func parse(t *testing.T, args ...string) (c *CLI, cmd string, code int, stderr string) {
	t.Helper()
	c = &CLI{}
	var out, errb bytes.Buffer
	a, err := commandArgs(args)
	if err != nil {
		return c, "", cli.Report(name, &errb, err), errb.String()
	}
	k, code, done := cli.Parse(name, "", c, a, &out, &errb, kong.Vars{"model": "default.bin", "vad_model": "silero.bin"})
	if done {
		return c, "", code, errb.String()
	}
	return c, k.Selected().Name, code, errb.String()
}

// TestFlagSpellings: the scheme's spellings (-f/--format for what is
// written) and the old ones that scripts use (-o/--output for the format,
// --json in stream mode) give the same settings.
func TestFlagSpellings(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		format     string
		streamJSON bool
	}{
		{[]string{"-f", "srt", "a.wav"}, "srt", false},
		{[]string{"--format", "vtt", "a.wav"}, "vtt", false},
		{[]string{"--format=json"}, "json", true},
		{[]string{"-o", "srt", "a.wav"}, "srt", false},       // old
		{[]string{"--output", "vtt", "a.wav"}, "vtt", false}, // old
		{[]string{"--output=json", "a.wav"}, "json", true},   // old
		{[]string{"--json"}, "json", true},                   // old
		{nil, "txt", false},
	} {
		c, _, code, errb := parse(t, tc.args...)
		if code != 0 {
			t.Errorf("parse %q: exit %d: %s", tc.args, code, errb)
			continue
		}
		if c.Decode.Output != tc.format || c.Decode.JSON != tc.streamJSON {
			t.Errorf("%q: format %q, stream JSON %v; want %q, %v", tc.args, c.Decode.Output, c.Decode.JSON, tc.format, tc.streamJSON)
		}
	}
	if _, _, code, _ := parse(t, "-o", "mp3", "a.wav"); code != cli.ExitUsage {
		t.Errorf("-o mp3: exit %d, want %d (a usage error)", code, cli.ExitUsage)
	}
}

// TestCommandSpellings: each spelling of each mode, the commands and the
// old mode flags (which stand anywhere before "--"), means the same
// command with the same flags; files and streams stay the default.
func TestCommandSpellings(t *testing.T) {
	daemon := []string{"--model", "m.bin", "--language", "en", "--threads", "2", "--beam-size", "1", "--device=auto",
		"--vad", "silero", "--vad-model", "v.bin", "--vad-threshold", "0.4"} // what yazsesd appends to children.decode
	served := ServeCmd{
		DecodeFlags:    DecodeFlags{Model: "m.bin", Language: "en", Threads: 2, Device: "auto", BeamSize: 1, AudioCtx: "auto", NoSpeechThreshold: 0.6, VADGate: true},
		VADFlags:       VADFlags{VAD: "silero", VADModel: "v.bin", VADThreshold: 0.4},
		UtteranceFlags: UtteranceFlags{MinSpeech: 120 * time.Millisecond, MinSilence: 600 * time.Millisecond},
	}
	vadChild := VADStreamCmd{VADFlags{VAD: "silero", VADModel: "v.bin", VADThreshold: 0.5}}
	listJSON := DevicesCmd{Model: "m.bin", Device: "gpu", Output: "json", JSON: true}
	for _, tc := range []struct {
		args []string
		cmd  string
		want any // the command's struct, or a check of the files
	}{
		// Files and streams: the default command, no name.
		{nil, "transcribe", []string(nil)},
		{[]string{"a.wav", "b.wav"}, "transcribe", []string{"a.wav", "b.wav"}},
		{[]string{"-m", "m.bin", "a.wav", "-f", "srt"}, "transcribe", []string{"a.wav"}},
		{[]string{"--", "-odd.wav"}, "transcribe", []string{"-odd.wav"}},
		{[]string{"./serve"}, "transcribe", []string{"./serve"}}, // a file called serve
		{[]string{"--serve=false", "a.wav"}, "transcribe", []string{"a.wav"}},
		{[]string{"--", "a.wav", "--serve"}, "transcribe", []string{"a.wav", "--serve"}}, // after --, a file
		{[]string{"transcribe", "a.wav"}, "transcribe", []string{"a.wav"}},
		// yaz-mcp's localdecode: flags, then the file after "--".
		{[]string{"--model=m.bin", "--output=json", "--progress=always", "--log-format=json", "--log-level=error", "--vad=silero", "--", "/dev/fd/3"},
			"transcribe", []string{"/dev/fd/3"}},

		// serve: the command, and the old flag wherever it stands.
		{append([]string{"serve"}, daemon...), "serve", served},
		{append([]string{"--serve"}, daemon...), "serve", served},
		{append(append([]string{}, daemon...), "--serve"), "serve", served},
		{append([]string{"--model", "m.bin", "--serve"}, daemon[2:]...), "serve", served},
		{append([]string{"--serve=true"}, daemon...), "serve", served},
		{append([]string{"serve", "--serve"}, daemon...), "serve", served},

		// vad-stream: what yazsesd appends to children.vad.
		{[]string{"vad-stream", "--vad", "silero", "--vad-model", "v.bin"}, "vad-stream", vadChild},
		{[]string{"--vad-stream", "--vad", "silero", "--vad-model", "v.bin"}, "vad-stream", vadChild},
		{[]string{"--vad", "silero", "--vad-stream", "--vad-model", "v.bin"}, "vad-stream", vadChild},

		// devices, and yazsesd config check's question (children.decode
		// with --list-devices -f json --device=… --model …).
		{[]string{"devices", "-f", "json", "--device=gpu", "--model", "m.bin"}, "devices", listJSON},
		{[]string{"--list-devices", "-f", "json", "--device=gpu", "--model", "m.bin"}, "devices", listJSON},
		{[]string{"--serve", "--list-devices", "-f", "json", "--device=gpu", "--model", "m.bin"}, "devices", listJSON},
		{[]string{"serve", "--list-devices", "-f", "json", "--device=gpu", "--model", "m.bin"}, "devices", listJSON},
		{[]string{"-f", "json", "--list-devices", "--device=gpu", "--model", "m.bin"}, "devices", listJSON},
		{[]string{"--list-devices", "--json", "--device=gpu", "-m", "m.bin"}, "devices", listJSON},
		{[]string{"--list-devices", "-o", "json", "--device=gpu", "-m", "m.bin"}, "devices",
			DevicesCmd{Model: "m.bin", Device: "gpu", Output: "json", OldOutput: "json", JSON: true}},
		{[]string{"devices"}, "devices", DevicesCmd{Model: "default.bin", Device: "auto", Output: "txt"}},
	} {
		c, cmd, code, errb := parse(t, tc.args...)
		if code != 0 || cmd != tc.cmd {
			t.Errorf("%q: command %q, exit %d (%s); want %q", tc.args, cmd, code, errb, tc.cmd)
			continue
		}
		var got any
		switch w := tc.want.(type) {
		case []string:
			got = c.Decode.Files
			if w == nil {
				got = []string(c.Decode.Files) // nil or empty: no files
				if len(c.Decode.Files) == 0 {
					got = []string(nil)
				}
			}
		case ServeCmd:
			got = c.Serve
		case VADStreamCmd:
			got = c.VADStream
		case DevicesCmd:
			got = c.Devices
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%q (-want +got):\n%s", tc.args, d)
		}
	}
}

// TestCommandConflicts: a flag of one mode given to another, two modes, or
// files given to a mode that reads frames are the parser's usage errors
// (exit 2), each with one line that says what is wrong, in either
// spelling.
func TestCommandConflicts(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"serve", "a.wav"}, "serve reads frames on stdin and takes no files (unexpected argument a.wav)"},
		{[]string{"--serve", "a.wav"}, "serve reads frames on stdin and takes no files"},
		{[]string{"a.wav", "--serve"}, "serve reads frames on stdin and takes no files"},
		{[]string{"vad-stream", "a.wav"}, "vad-stream reads frames on stdin and takes no files"},
		{[]string{"--vad-stream", "a.wav"}, "takes no files"},
		{[]string{"serve", "vad-stream"}, "serve and vad-stream are two commands: pick one"},
		{[]string{"--serve", "--vad-stream"}, "--vad-stream and --serve are two modes: pick one"},
		{[]string{"--vad-stream", "serve"}, "vad-stream and serve are two commands: pick one"},
		{[]string{"serve", "--format", "json"}, "unknown flag --format"},
		{[]string{"--serve", "--output-dir", "subs"}, "unknown flag --output-dir"},
		{[]string{"serve", "--progress", "always"}, "unknown flag --progress"},
		{[]string{"vad-stream", "-m", "m.bin"}, "unknown flag -m"},
		{[]string{"--vad-stream", "--threads", "2"}, "unknown flag --threads"},
		{[]string{"vad-stream", "--no-vad-gate"}, "unknown flag --no-vad-gate"},
		{[]string{"vad-stream", "--vad", "energy"}, "--vad energy has none"},
		{[]string{"devices", "--threads", "2"}, "unknown flag --threads"},
		{[]string{"devices", "-f", "srt"}, `--format must be one of "txt","json" but got "srt"`},
		{[]string{"--list-devices", "-o", "srt"}, `--output must be one of txt, json but got "srt"`},
		{[]string{"devices", "a.wav"}, "unexpected argument a.wav"},
		{[]string{"devices", "--device", "gpu:x"}, "--device"},
		{[]string{"-m", "m.bin", "serve"}, "--model is given before serve: a command's flags follow its name (yaz-decode serve --help lists them)"},
		{[]string{"--serve=maybe"}, `--serve takes no value but true or false, got "maybe"`},
		{[]string{"serve", "--beam-size", "99"}, "--beam-size must be between 1 and 16"},
		{[]string{"--serve", "--audio-ctx", "x"}, "--audio-ctx must be auto, full or a number"},
		{[]string{"serve", "--vad-threshold", "2"}, "--vad-threshold must be between 0.01 and 0.99"},
		{[]string{"-f", "srt", "a.wav", "b.wav"}, "--format srt of several files needs --output-dir"},
		{[]string{"--beam-size", "99", "a.wav"}, "error: --beam-size must be between 1 and 16"},
		{[]string{"--vad-stream", "--vad", "energy"}, "error: vad-stream: it reports Silero VAD's probabilities: --vad energy has none"},
		{[]string{"-o", "srt", "a.wav", "b.wav"}, "--format srt of several files needs --output-dir"}, // kong validates before AfterApply
	} {
		_, cmd, code, errb := parse(t, tc.args...)
		// The default command's name is in no message: nobody typed it.
		if code != cli.ExitUsage || !strings.HasPrefix(errb, "yaz-decode: error: ") || !strings.Contains(errb, tc.says) || strings.Contains(errb, "transcribe") {
			t.Errorf("%q: command %q, exit %d, stderr %q; want exit 2 and %q", tc.args, cmd, code, errb, tc.says)
		}
	}
}

// TestCommandHelp: each command's --help shows its own flags and not the
// others'; the program's shows the files' flags, the commands, and the old
// mode flags as deprecated with what replaces them.
func TestCommandHelp(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		has, hasn []string
	}{
		{[]string{"--help"},
			[]string{"Usage: yaz-decode [<file> ...] [flags]", "-f, --format=", "--output-dir", "--min-silence", "serve", "vad-stream", "devices",
				"Deprecated flags", "  --serve         deprecated: use yaz-decode serve\n", "  --vad-stream    deprecated: use yaz-decode vad-stream\n",
				"  --list-devices  deprecated: use yaz-decode devices\n"},
			[]string{"  transcribe"}}, // the default command is not listed
		{[]string{"serve", "--help"}, []string{"--model", "--beam-size", "--vad-model", "--min-silence", "--log-level"},
			[]string{"--format", "--output-dir", "--progress", "--max-duration"}},
		{[]string{"--serve", "--help"}, []string{"yaz-decode serve", "--model"}, []string{"--format"}},
		{[]string{"vad-stream", "--help"}, []string{"--vad-model", "--vad-threshold", "--log-level"},
			[]string{"--model", "--threads", "--format", "--vad-gate", "--min-silence"}},
		{[]string{"devices", "--help"}, []string{"--device", "-f, --format", "--model", "one JSON object"},
			[]string{"--threads", "--output-dir", "--vad"}},
	} {
		var out, errb bytes.Buffer
		if code := Main(t.Context(), tc.args, strings.NewReader(""), &out, &errb); code != 0 {
			t.Errorf("%q: exit %d, stderr %q", tc.args, code, errb.String())
			continue
		}
		for _, w := range tc.has {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%q: no %q in:\n%s", tc.args, w, out.String())
			}
		}
		for _, w := range tc.hasn {
			if strings.Contains(out.String(), w) {
				t.Errorf("%q: %q in:\n%s", tc.args, w, out.String())
			}
		}
	}
}
