package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/lib/config"
)

func TestParseCtl(t *testing.T) {
	tests := []struct {
		words  []string
		method string
		params string
		bad    bool
	}{
		{words: []string{"status"}, method: "status"},
		{words: []string{"hold", "start"}, method: "hold.start"},
		{words: []string{"hold", "toggle"}, method: "hold.toggle"},
		{words: []string{"ask_human", `{"question":"hi"}`}, method: "ask_human", params: `{"question":"hi"}`},
		{words: []string{"hold"}, bad: true},
		{words: []string{"hold", "sideways"}, bad: true},
		{words: []string{"budget.set"}, bad: true},
		{words: []string{"ask_human", "not json"}, bad: true},
		{words: []string{"audit", "{}", "{}"}, bad: true},
		{words: nil, bad: true},
	}
	for _, tt := range tests {
		m, p, err := parseCtl(tt.words)
		if (err != nil) != tt.bad {
			t.Errorf("parseCtl(%q) error = %v, want error %v", tt.words, err, tt.bad)
			continue
		}
		if !tt.bad && (m != tt.method || string(p) != tt.params) {
			t.Errorf("parseCtl(%q) = %q, %s; want %q, %s", tt.words, m, p, tt.method, tt.params)
		}
	}
}

func run(args ...string) (stdout, stderr string, code int) {
	var o, e bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(""), &o, &e, "test")
	return o.String(), e.String(), code
}

func TestConfigDefaultParses(t *testing.T) {
	out, _, code := run("config", "default")
	if code != 0 {
		t.Fatalf("config default: exit %d", code)
	}
	if _, err := config.Parse([]byte(out), "default"); err != nil {
		t.Errorf("the printed default does not parse: %v", err)
	}
}

func TestUsageAndErrors(t *testing.T) {
	if _, _, code := run("--no-such-flag"); code != 2 {
		t.Errorf("bad flag: exit %d, want 2", code)
	}
	if _, stderr, code := run("ctl", "budget.set"); code != 2 || !strings.Contains(stderr, "unknown method") {
		t.Errorf("unknown method: exit %d, %q; want 2 and the method list", code, stderr)
	}
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	if _, stderr, code := run("status"); code != 1 || !strings.Contains(stderr, "not running") {
		t.Errorf("status with no daemon: exit %d, %q; want 1, not running", code, stderr)
	}
	out, _, code := run("--help")
	if code != 0 || !strings.Contains(out, "ctl") || !strings.Contains(out, "run") {
		t.Errorf("--help: exit %d:\n%s", code, out)
	}
}

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", dir) // the default model is not there
	model := filepath.Join(dir, "ggml-mini.bin")
	var b bytes.Buffer
	if err := testmodel.Write(&b, testmodel.Mini, 1); err != nil {
		t.Fatal(err)
	}
	writeFile(t, model, b.String())
	vad := filepath.Join(dir, "ggml-silero-v6.2.0.bin")
	writeFile(t, vad, "lmgg\x0a\x00\x00\x00silero-16k\x06\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00")
	tests := []struct {
		name, src string
		code      int
		out       string // on stdout (code 0) or stderr
	}{
		{"bad value", "[budget]\nask_human_per_hour = -1\n", 1, "bad.toml:2: budget.ask_human_per_hour"},
		{"good", "[mcp]\nask_human = true\n[decode]\nmodel = " + strconv.Quote(model) + "\n", 0, "good.toml: ok"},
		// A fresh machine: the file names no model and the default one is
		// not there.
		{"default model missing", "[mcp]\nask_human = true\n", 1,
			"missing.toml: decode.model: model not found: " + filepath.Join(dir, "yazses", "models", "ggml-base.en.bin") +
				" — fetch one with yaz-fetch-model base.en"},
		{"model missing", "[decode]\nmodel = \"/nonexistent/ggml-tiny.en.bin\"\n", 1,
			"gone.toml:2: decode.model: model not found: /nonexistent/ggml-tiny.en.bin — fetch one with yaz-fetch-model tiny.en"},
		{"not a model", "\n[decode]\nmodel = " + strconv.Quote(filepath.Join(dir, "notes.toml")) + "\n", 1,
			"notes.toml:3: decode.model: " + filepath.Join(dir, "notes.toml") + ": not a ggml model file"},
		{"a VAD model", "[decode]\nmodel = " + strconv.Quote(vad) + "\n", 1,
			"vad.toml:2: decode.model: " + vad + " is a Silero VAD model (silero-16k 6.2.0), not a whisper or Parakeet model"},
		{"language", "[decode]\nmodel = " + strconv.Quote(model) + "\nlanguage = \"de\"\n", 1,
			`de.toml:3: decode.language: "de" needs a multilingual model`},
		{"unknown hotkey", "[decode]\nmodel = " + strconv.Quote(model) + "\n[hotkey]\nkey = \"KEY_NOPE\"\n", 1,
			`nope.toml:4: hotkey.key: unknown key "KEY_NOPE"`},
		// [vad]: a missing model is fine with "auto" (the energy detector
		// runs, and the check says so), not with "silero"; a file that is
		// there must be a whole Silero VAD model.
		{"vad auto, no model", "[decode]\nmodel = " + strconv.Quote(model) + "\n", 0,
			"vadnone.toml: vad: no Silero VAD model at " + filepath.Join(dir, "yazses", "models", "ggml-silero-v5.1.2.bin") +
				", so the energy detector runs; yaz-fetch-model silero-v5.1.2 fetches it"},
		{"vad silero, no model", "[decode]\nmodel = " + strconv.Quote(model) + "\n\n[vad]\nengine = \"silero\"\n", 1,
			"vadgone.toml:4: vad.model: VAD model not found: " + filepath.Join(dir, "yazses", "models", "ggml-silero-v5.1.2.bin") +
				" — fetch one with yaz-fetch-model silero-v5.1.2"},
		{"vad whisper model", "[decode]\nmodel = " + strconv.Quote(model) + "\n\n[vad]\nengine = \"silero\"\nmodel = " + strconv.Quote(model) + "\n", 1,
			"vadkind.toml:6: vad.model: " + model + " is a whisper model"},
		{"vad header only", "[decode]\nmodel = " + strconv.Quote(model) + "\n[vad]\nmodel = " + strconv.Quote(vad) + "\n", 1,
			"vadcut.toml:4: vad.model: " + vad + ": model file is truncated"},
		// A key source chosen but not switched on runs nothing: said, as a
		// note (the file is valid), on the line that chose it.
		{"portal source, hotkey off", "[decode]\nmodel = " + strconv.Quote(model) + "\n[hotkey]\nsource = \"portal\"\n", 0,
			"keyoff.toml:4: hotkey.source: \"portal\" has no effect while hotkey.enabled is false: no key source runs; set enabled = true in [hotkey]"},
		// Live text needs pieces: without eager_pause_ms it says the pause
		// it takes.
		{"live, no pause", "[decode]\nmodel = " + strconv.Quote(model) + "\n[dictation]\nlive = true\n", 0,
			"live.toml:4: dictation.live: eager_pause_ms is 0, so the pieces end at 300 ms pauses"},
	}
	names := map[string]string{"bad value": "bad", "good": "good", "default model missing": "missing", "model missing": "gone",
		"not a model": "notes", "a VAD model": "vad", "language": "de", "unknown hotkey": "nope",
		"vad auto, no model": "vadnone", "vad silero, no model": "vadgone", "vad whisper model": "vadkind", "vad header only": "vadcut",
		"portal source, hotkey off": "keyoff", "live, no pause": "live"}
	for _, tt := range tests {
		path := filepath.Join(dir, names[tt.name]+".toml")
		writeFile(t, path, tt.src)
		out, stderr, code := run("config", "check", path)
		got := out
		if tt.code != 0 {
			got = stderr
		}
		if code != tt.code || !strings.Contains(got, tt.out) {
			t.Errorf("%s: config check: exit %d, stdout %q, stderr %q; want exit %d and %q", tt.name, code, out, stderr, tt.code, tt.out)
		}
	}
	// Switched on, the same source is not remarked on.
	on := filepath.Join(dir, "keyon.toml")
	writeFile(t, on, "[decode]\nmodel = "+strconv.Quote(model)+"\n[hotkey]\nenabled = true\nsource = \"portal\"\n")
	if out, stderr, code := run("config", "check", on); code != 0 || strings.Contains(out, "no effect") {
		t.Errorf("config check with the portal key source on: exit %d, stdout %q, stderr %q; want 0 and no note", code, out, stderr)
	}
	// No file at all: every key has its default, and the default model is
	// checked.
	out, stderr, code := run("config", "check", filepath.Join(dir, "none.toml"))
	if code != 1 || !strings.Contains(out, "no file") || !strings.Contains(stderr, "model not found") {
		t.Errorf("config check of no file with no model: exit %d, %q, %q", code, out, stderr)
	}
}

func TestConfigInit(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	path := filepath.Join(home, "config", "yazses", "config.toml")
	out, stderr, code := run("config", "init")
	if code != 0 || !strings.Contains(out, path) {
		t.Fatalf("config init: exit %d, %q, %q", code, out, stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != config.DefaultTOML() {
		t.Fatalf("config init wrote %d bytes, %v; want the default file", len(b), err)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700 | os.ModeDir} {
		if st, err := os.Stat(p); err != nil || st.Mode() != want {
			t.Errorf("mode of %s = %v, %v; want %v", p, st.Mode(), err, want)
		}
	}
	// Again over the defaults (as after make install): no error, nothing
	// changed.
	if out, stderr, code := run("config", "init"); code != 0 || !strings.Contains(out, "already there") {
		t.Errorf("config init over the default file: exit %d, %q, %q; want 0, already there", code, out, stderr)
	}
	writeFile(t, path, "[mcp]\nask_human = true\n")
	if _, stderr, code := run("config", "init"); code != 1 || !strings.Contains(stderr, "--force") {
		t.Errorf("config init over a file: exit %d, %q; want 1 naming --force", code, stderr)
	}
	if b, _ := os.ReadFile(path); string(b) != "[mcp]\nask_human = true\n" {
		t.Errorf("config init changed an existing file without --force")
	}
	if _, stderr, code := run("config", "init", "--force"); code != 0 {
		t.Errorf("config init --force: exit %d, %q", code, stderr)
	}
	if b, _ := os.ReadFile(path); string(b) != config.DefaultTOML() {
		t.Errorf("config init --force did not write the default file")
	}
	// config default still prints to stdout and writes nothing.
	os.Remove(path)
	if out, _, code := run("config", "default"); code != 0 || out != config.DefaultTOML() {
		t.Errorf("config default: exit %d, %d bytes", code, len(out))
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("config default wrote %s", path)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}
