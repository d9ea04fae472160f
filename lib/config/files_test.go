package config

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testmodel"
	"github.com/yazses/yazses/internal/testvad"
)

// q quotes a TOML string.
func q(s string) string { return strconv.Quote(s) }

// writeModel writes the generated mini whisper model; multilingual patches
// its vocabulary size to the multilingual one.
func writeModel(t *testing.T, path string, multilingual bool) {
	t.Helper()
	var b bytes.Buffer
	if err := testmodel.Write(&b, testmodel.Mini, 1); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	if multilingual {
		binary.LittleEndian.PutUint32(data[4:], 51865)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheckFiles(t *testing.T) {
	dir := t.TempDir()
	en := filepath.Join(dir, "ggml-mini.en.bin")
	multi := filepath.Join(dir, "ggml-mini.bin")
	text := filepath.Join(dir, "ggml-base.en.bin")
	writeModel(t, en, false)
	writeModel(t, multi, true)
	os.WriteFile(text, []byte("404 Not Found\n"), 0o644)
	missing := filepath.Join(dir, "ggml-tiny.en.bin")
	parakeet := filepath.Join(dir, "ggml-parakeet-tdt-0.6b-v3-f16.bin")
	if err := testmodel.WriteFile(parakeet, testmodel.ParakeetMini, 1); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, src string
		want      string // "" for no error
	}{
		{"english model", "[decode]\nmodel = " + q(en), ""},
		{"multilingual auto", "[decode]\nmodel = " + q(multi) + "\nlanguage = \"auto\"", ""},
		{"multilingual de", "[decode]\nlanguage = \"de\"\nmodel = " + q(multi), ""},
		{"missing", "[mcp]\nask_human = true\n\n[decode]\nmodel = " + q(missing),
			"c.toml:5: decode.model: model not found: " + missing + " — fetch one with yaz-fetch-model tiny.en"},
		{"not a model", "[decode]\nmodel = " + q(text),
			"c.toml:2: decode.model: " + text + `: not a ggml model file (it starts with "404 Not Found") — not a whisper or Parakeet model; fetch one with yaz-fetch-model base.en`},
		{"parakeet", "[decode]\nmodel = " + q(parakeet), ""},
		{"parakeet auto", "[decode]\nmodel = " + q(parakeet) + "\nlanguage = \"auto\"", ""},
		{"parakeet de", "[decode]\nmodel = " + q(parakeet) + "\nlanguage = \"de\"",
			`c.toml:3: decode.language: "de": ` + parakeet + " is a Parakeet TDT model (1024 tokens, f16), which has no language selection"},
		{"english-only de", "[decode]\nmodel = " + q(en) + "\nlanguage = \"de\"",
			`c.toml:3: decode.language: "de" needs a multilingual model, and ` + en + " is an English-only whisper model (English-only, f16)"},
	}
	for _, tt := range tests {
		c, err := Parse([]byte(tt.src), "c.toml")
		if err != nil {
			t.Fatalf("%s: Parse: %v", tt.name, err)
		}
		err = CheckFiles(c, []byte(tt.src), "c.toml")
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: CheckFiles = %v, want nil", tt.name, err)
		case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
			t.Errorf("%s: CheckFiles = %v\nwant it to start with %s", tt.name, err, tt.want)
		}
		var ce *Error
		if tt.want != "" && !errors.As(err, &ce) {
			t.Errorf("%s: CheckFiles error %T is no *Error", tt.name, err)
		}
	}
	// No file: the default model is checked, with no line.
	t.Setenv("XDG_DATA_HOME", dir)
	err := CheckFiles(Default(), nil, "config.toml")
	if want := "config.toml: decode.model: model not found: " + filepath.Join(dir, "yazses", "models", "ggml-base.en.bin"); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("CheckFiles(Default()) = %v, want %q…", err, want)
	}
}

// vadModel is the real Silero VAD model, from the tests' model cache
// (internal/testvad: make setup puts it there).
func vadModel(t *testing.T) []byte {
	t.Helper()
	return testvad.Bytes(t)
}

// TestCheckFilesVAD: vad.model is checked whole when vad.engine is
// "silero", and with "auto" when the file is there (a missing one means the
// energy detector, which is no error); each problem names the file and
// the fix, at the line of vad.model (or of [vad] when the key is not
// written).
func TestCheckFilesVAD(t *testing.T) {
	dir := t.TempDir()
	whisper := filepath.Join(dir, "ggml-mini.en.bin")
	writeModel(t, whisper, false)
	real := filepath.Join(dir, "ggml-silero-v6.2.0.bin")
	data := vadModel(t)
	os.WriteFile(real, data, 0o644)
	cut := filepath.Join(dir, "cut.bin")
	os.WriteFile(cut, data[:len(data)/2], 0o644)
	missing := filepath.Join(dir, "ggml-silero-v5.1.2.bin")
	head := "[decode]\nmodel = " + q(whisper) + "\n\n[vad]\n"
	tests := []struct {
		name, src string
		want      string // "" for no error
	}{
		{"silero, real model", head + "engine = \"silero\"\nmodel = " + q(real), ""},
		{"auto, real model", head + "model = " + q(real), ""},
		{"auto, missing: energy", head + "model = " + q(missing), ""},
		{"energy, broken model", head + "engine = \"energy\"\nmodel = " + q(cut), ""},
		{"silero, missing", head + "engine = \"silero\"\nmodel = " + q(missing),
			"c.toml:6: vad.model: VAD model not found: " + missing + " — fetch one with yaz-fetch-model silero-v5.1.2"},
		{"silero, default missing", head + "engine = \"silero\"\n",
			"c.toml:4: vad.model: VAD model not found: "},
		{"auto, truncated", head + "threshold = 0.6\nmodel = " + q(cut),
			"c.toml:6: vad.model: " + cut + ": model file is truncated"},
		{"silero, whisper model", head + "engine = \"silero\"\nmodel = " + q(whisper),
			"c.toml:6: vad.model: " + whisper + " is a whisper model (English-only, f16), not a Silero VAD model — fetch one with yaz-fetch-model silero-v5.1.2"},
		{"auto, folder", head + "model = " + q(dir),
			"c.toml:5: vad.model: " + dir + " is not a regular file"},
	}
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	for _, tt := range tests {
		c, err := Parse([]byte(tt.src), "c.toml")
		if err != nil {
			t.Fatalf("%s: Parse: %v", tt.name, err)
		}
		err = CheckFiles(c, []byte(tt.src), "c.toml")
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: CheckFiles = %v, want nil", tt.name, err)
		case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
			t.Errorf("%s: CheckFiles = %v\nwant it to start with %s", tt.name, err, tt.want)
		}
	}
}

func TestWriteDefault(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config", "yazses", "config.toml")
	if err := WriteDefault(path, false); err != nil {
		t.Fatalf("WriteDefault = %v", err)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700 | fs.ModeDir, filepath.Dir(filepath.Dir(path)): 0o700 | fs.ModeDir} {
		if st, err := os.Stat(p); err != nil || st.Mode() != want {
			t.Errorf("mode of %s = %v, %v; want %v", p, st.Mode(), err, want)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != DefaultTOML() {
		t.Errorf("written file differs from DefaultTOML")
	}
	os.WriteFile(path, []byte("[mcp]\nask_human = true\n"), 0o644)
	if err := WriteDefault(path, false); !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "--force") {
		t.Errorf("WriteDefault over a file = %v, want fs.ErrExist naming --force", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "[mcp]\nask_human = true\n" {
		t.Errorf("the existing file was changed: %q", b)
	}
	if err := WriteDefault(path, true); err != nil {
		t.Fatalf("WriteDefault(force) = %v", err)
	}
	st, _ := os.Stat(path)
	if b, _ := os.ReadFile(path); string(b) != DefaultTOML() || st.Mode() != 0o600 {
		t.Errorf("after --force: mode %v, default %v", st.Mode(), string(b) == DefaultTOML())
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("folder holds %d entries after --force, want the file only", len(ents))
	}
}
