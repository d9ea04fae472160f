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

// DefaultVADPath is where `auto` looks for a VAD model before falling back
// to the energy detector: the file of DefaultVADName in Dir when it is
// there, else a packaged one (Packaged), else Dir's (which a message then
// names as the place to fetch it to).
func DefaultVADPath() string {
	own := Path(DefaultVADName)
	if _, err := os.Stat(own); err == nil {
		return own
	}
	if p := Packaged(); p != "" {
		return p
	}
	return own
}

// PackagedVADNames are the Silero models a package may ship in
// yazses/models of a system data folder, newest first.
var PackagedVADNames = []string{"silero-v6.2.0", "silero-v5.1.2"}

// Packaged is the first Silero model found in yazses/models of the system
// data folders ($XDG_DATA_DIRS, default /usr/local/share:/usr/share),
// where the Debian package puts one; "" when there is none.
func Packaged() string {
	dirs := os.Getenv("XDG_DATA_DIRS")
	if dirs == "" {
		dirs = "/usr/local/share:/usr/share"
	}
	for _, d := range filepath.SplitList(dirs) {
		if !filepath.IsAbs(d) {
			continue
		}
		for _, name := range PackagedVADNames {
			p := filepath.Join(d, "yazses", "models", "ggml-"+name+".bin")
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				return p
			}
		}
	}
	return ""
}
