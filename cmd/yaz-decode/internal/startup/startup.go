// Package startup is yaz-decode's side of contract 2 between yazsesd and
// its children: the startup failures that a restart cannot fix, each
// with its cause, and how yaz-decode exits on one. Under a supervisor
// (serve, vad-stream, or a readiness fd in YAZ_READY_FD) yaz-decode
// writes one slog ERROR record with the attribute cause, a message that
// names the file and the fix, and exits 125 ("do not restart me"); the
// daemon shows the message in its log, its status, a hold's result and a
// notification. A person at a terminal gets the same message as the one
// error line, with exit 1.
package startup

import (
	"errors"
	"io"
	"log/slog"
	"os"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/asr"
	"github.com/yazses/yazses/lib/cli"
	"github.com/yazses/yazses/lib/modelfile"
)

// Causes: closed-vocabulary words.
const (
	ModelMissing = "model_missing"
	ModelInvalid = "model_invalid"
	// LanguageUnsupported: -l names a language the model does not
	// know (any but en with an English-only model; any but en and auto
	// with a Parakeet model).
	LanguageUnsupported = "language_unsupported"
	// VADModelMissing: --vad silero and no file at --vad-model.
	VADModelMissing = "vad_model_missing"
	// VADModelInvalid: the file at --vad-model (with --vad silero,
	// or present with auto) is no Silero VAD model whisper.cpp can run.
	VADModelInvalid = "vad_model_invalid"
	// DeviceMissing: --device gpu or gpu:N and no such device (a restart
	// cannot make one appear).
	DeviceMissing = "device_missing"
)

// Error is a failure with a known cause.
type Error struct {
	Cause string // one of the causes above
	Msg   string // one line that names the file and the fix
	Err   error  // what it wraps
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// CheckModel reads the model file's headers in pure Go before whisper.cpp
// sees it: a missing file, a file that is neither a whisper nor a Parakeet
// model (an HTML error page, a Silero VAD model) or one cut short (or a
// Parakeet file without its audio context) fails here with a message,
// instead of in whisper.cpp, which aborts the process on some of them (a
// GGML_ASSERT).
func CheckModel(path string) error {
	_, err := modelfile.CheckSpeech(path)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, modelfile.ErrMissing):
		return &Error{Cause: ModelMissing, Msg: err.Error(), Err: asr.ErrModelMissing}
	default:
		return &Error{Cause: ModelInvalid, Msg: err.Error(), Err: asr.ErrModelInvalid}
	}
}

// of classifies an error of a command: a known startup failure, or nil.
func of(model string, err error) *Error {
	var se *Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return se
	case errors.Is(err, asr.ErrModelMissing):
		return &Error{Cause: ModelMissing, Msg: modelfile.NotFound(model), Err: err}
	case errors.Is(err, asr.ErrModelInvalid):
		return &Error{Cause: ModelInvalid, Err: err,
			Msg: model + ": whisper.cpp could not load it as a model — fetch one with yaz-fetch-model " + modelfile.FetchName(model)}
	case errors.Is(err, asr.ErrLanguageUnsupported):
		return &Error{Cause: LanguageUnsupported, Msg: err.Error(), Err: err}
	}
	return nil
}

// Supervised reports whether a supervisor runs this process: a mode that
// runs only under one (serve, vad-stream), or a readiness fd to write to.
// Call it before cli.Ready, which unsets YAZ_READY_FD.
func Supervised(mode bool) bool { return mode || os.Getenv(cli.ReadyEnv) != "" }

// Exit reports the result of the program name's command and returns the
// exit code: a known startup failure under a supervisor is one ERROR
// record with its cause and exit 125; anything else is reported as usual
// (one "name: error: …" line, exit 1 or 2). model is the speech model the
// command loads, named in a failure's message ("" for none).
func Exit(name string, log *slog.Logger, stderr io.Writer, underSupervisor bool, model string, err error) int {
	se := of(model, err)
	switch {
	case se == nil:
		return cli.Report(name, stderr, err)
	case underSupervisor:
		log.Error(se.Msg, "cause", se.Cause)
		return cli.ExitNoRestart
	default:
		return cli.Report(name, stderr, errors.New(se.Msg))
	}
}
