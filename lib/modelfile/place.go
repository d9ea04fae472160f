// Where YazSes keeps its models:
// $XDG_DATA_HOME/yazses/models (default ~/.local/share/yazses/models), one
// ggml file per model, named as upstream names them (ggml-base.en.bin, and
// the Silero VAD model ggml-silero-v5.1.2.bin). scripts/fetch-model.sh
// downloads them there with a pinned checksum.
package modelfile

import (
	"os"
	"path/filepath"
)

// DefaultName is the model used when none is configured: base.en is the
// smallest English model that dictates well; tiny.en is faster, small.en
// better.
const DefaultName = "base.en"

// Dir is the model folder.
func Dir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "yazses", "models")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = "/"
	}
	return filepath.Join(home, ".local", "share", "yazses", "models")
}

// Path is the file of the named model (e.g. "base.en") in Dir.
func Path(name string) string { return filepath.Join(Dir(), "ggml-"+name+".bin") }

// DefaultPath is the file of DefaultName.
func DefaultPath() string { return Path(DefaultName) }

// DefaultVADName is the Silero voice-activity detector's model, as
// yaz-fetch-model names it (ggml-org/whisper-vad on the model hub).
const DefaultVADName = "silero-v5.1.2"

// DefaultVADPath is the file of DefaultVADName: where `auto` looks for a
// VAD model before falling back to the energy detector.
func DefaultVADPath() string { return Path(DefaultVADName) }
