package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/yazses/yazses/lib/modelfile"
)

// CheckFiles checks what a valid configuration names on disk:
// decode.model must exist and be a whisper or Parakeet TDT model (package
// modelfile reads its header, its vocabulary and every tensor header, in
// pure Go), a decode.language other than "en" needs a multilingual whisper
// model (a Parakeet model takes "en" and "auto" only), and vad.model must be
// a Silero VAD model whisper.cpp can run (the whole file is checked) when
// vad.engine is "silero", or when it is "auto" and the file is there (a
// missing one means the energy detector). data and name
// are the file as given to Parse, for the lines of the keys; data is nil
// when there is no file (every key has its default). Each problem is an
// *Error; several are joined.
func CheckFiles(c Config, data []byte, name string) error {
	kl := scanKeyLines(string(data))
	var errs []error
	bad := func(key, msg string) {
		errs = append(errs, &Error{File: name, Line: kl.lookup(key), Key: key, Msg: msg})
	}
	info, err := modelfile.CheckSpeech(c.Decode.Model)
	switch {
	case err != nil:
		bad("decode.model", err.Error())
	case info.Kind == modelfile.KindParakeet:
		if l := c.Decode.Language; l != "en" && l != "auto" {
			bad("decode.language", fmt.Sprintf("%q: %s is a %s, which has no language selection (it transcribes the language it hears) — "+
				"set language = \"en\" or \"auto\"", l, c.Decode.Model, info.Describe()))
		}
	case c.Decode.Language != "en" && !info.Whisper.Multilingual():
		bad("decode.language", fmt.Sprintf("%q needs a multilingual model, and %s is an English-only %s — "+
			"set language = \"en\", or fetch a multilingual model (a name without .en, e.g. yaz-fetch-model base)",
			c.Decode.Language, c.Decode.Model, info.Describe()))
	}
	if c.VAD.Engine == VADSilero || c.VAD.Engine == VADAuto && !missing(c.VAD.Model) {
		if _, err := modelfile.CheckVAD(c.VAD.Model); err != nil {
			bad("vad.model", err.Error())
		}
	}
	return errors.Join(errs...)
}

// KeyError is an Error about key in the file data read from name, with
// the key's line when the file sets it: for what a caller checks beyond
// CheckFiles (yazsesd config check asks the decoder about decode.device).
func KeyError(data []byte, name, key, msg string) error {
	return &Error{File: name, Line: scanKeyLines(string(data)).lookup(key), Key: key, Msg: msg}
}

// missing reports whether nothing is at path.
func missing(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// WriteDefault writes DefaultTOML to path (`yazsesd config init`). Missing
// folders are made with mode 0700 and the file with 0600. An existing file
// is kept and the error matches fs.ErrExist, unless force: then it is
// replaced atomically (a temporary file renamed over it).
func WriteDefault(path string, force bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("config init: %w", err)
	}
	if !force {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("config init: %s exists (--force replaces it): %w", path, fs.ErrExist)
			}
			return fmt.Errorf("config init: %w", err)
		}
		_, err = f.WriteString(DefaultTOML())
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
			return fmt.Errorf("config init: %w", err)
		}
		return nil
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("config init: %w", err)
	}
	tmp := f.Name()
	_, err = f.WriteString(DefaultTOML())
	if err == nil {
		err = f.Chmod(0o600)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("config init: %w", err)
	}
	return nil
}
