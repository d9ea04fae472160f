package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// defaultModel is decode.model as written in DefaultTOML; it expands to
// modelfile.DefaultPath().
const defaultModel = "$XDG_DATA_HOME/yazses/models/ggml-base.en.bin"

// defaultVADModel is vad.model as written in DefaultTOML; it expands to
// modelfile.DefaultVADPath().
const defaultVADModel = "$XDG_DATA_HOME/yazses/models/ggml-silero-v5.1.2.bin"

// xdgDefaults are the variables ExpandPath knows, with the XDG base
// directory specification's default below the home directory ("" for
// none).
var xdgDefaults = map[string]string{
	"XDG_DATA_HOME":   ".local/share",
	"XDG_CONFIG_HOME": ".config",
	"XDG_STATE_HOME":  ".local/state",
	"XDG_CACHE_HOME":  ".cache",
	"XDG_RUNTIME_DIR": "",
}

func home() string {
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return h
	}
	return "/"
}

// xdgDir is the value of an XDG base directory variable: the environment's
// when it is an absolute path (the specification says to ignore relative
// ones), else the default below the home directory.
func xdgDir(name string) string {
	if v := os.Getenv(name); v != "" && filepath.IsAbs(v) {
		return v
	}
	return filepath.Join(home(), xdgDefaults[name])
}

// ExpandPath expands a leading "~/" (or a lone "~") to the home directory,
// and $HOME, $XDG_DATA_HOME, $XDG_CONFIG_HOME, $XDG_STATE_HOME,
// $XDG_CACHE_HOME and $XDG_RUNTIME_DIR (also written ${NAME}) anywhere in p.
// An XDG variable that is unset or relative takes its default
// (~/.local/share, ~/.config, ~/.local/state, ~/.cache); $XDG_RUNTIME_DIR
// has none and must be set. "$$" is a literal "$". Any other variable, and
// "~user", is an error: a config path never depends on the rest of the
// environment by accident.
func ExpandPath(p string) (string, error) {
	switch {
	case p == "~":
		p = home()
	case strings.HasPrefix(p, "~/"):
		p = filepath.Join(home(), p[2:])
	case strings.HasPrefix(p, "~"):
		return "", errors.New(`only "~/" is expanded, not "~user"`)
	}
	if !strings.Contains(p, "$") {
		return p, nil
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '$' {
			b.WriteByte(p[i])
			continue
		}
		rest := p[i+1:]
		var name string
		switch {
		case strings.HasPrefix(rest, "$"):
			b.WriteByte('$')
			i++
			continue
		case strings.HasPrefix(rest, "{"):
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return "", errors.New(`unclosed "${"`)
			}
			name = rest[1:end]
			i += end + 1
		default:
			n := 0
			for n < len(rest) && isVarChar(rest[n]) {
				n++
			}
			name = rest[:n]
			i += n
		}
		v, err := lookupVar(name)
		if err != nil {
			return "", err
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

func isVarChar(c byte) bool {
	return c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

func lookupVar(name string) (string, error) {
	if name == "HOME" {
		return home(), nil
	}
	def, ok := xdgDefaults[name]
	if !ok {
		if name == "" {
			return "", errors.New(`"$" without a variable name (write "$$" for a "$")`)
		}
		return "", fmt.Errorf("$%s is not expanded: only $HOME and $XDG_DATA_HOME, $XDG_CONFIG_HOME, $XDG_STATE_HOME, $XDG_CACHE_HOME, $XDG_RUNTIME_DIR are", name)
	}
	if v := os.Getenv(name); v != "" && filepath.IsAbs(v) {
		return v, nil
	}
	if def == "" {
		return "", fmt.Errorf("$%s is not set", name)
	}
	return filepath.Join(home(), def), nil
}
