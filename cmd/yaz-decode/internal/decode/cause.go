package decode

import (
	"errors"
	"io"
	"log/slog"
	"os"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/asr"
	"github.com/yazses/yazses/lib/cli"
	"github.com/yazses/yazses/lib/modelfile"
)

// Startup failures that a restart cannot fix (contract 2 between yazsesd
// and its children). Under a supervisor (--serve, or a readiness fd in
// YAZ_READY_FD) yaz-decode writes one slog ERROR record with the attribute
// cause, a message that names the file and the fix, and exits 125 ("do not
// restart me"); the daemon shows the message in its log, its status, a
// hold's result and a notification. A person at a terminal gets the same
// message as the one error line, with exit 1.

// Causes: closed-vocabulary words.
const (
	causeModelMissing = "model_missing"
	causeModelInvalid = "model_invalid"
	// causeLanguageUnsupported: -l names a language the model does not
	// know (any but en with an English-only model; any but en and auto
	// with a Parakeet model).
	causeLanguageUnsupported = "language_unsupported"
	// causeVADModelMissing: --vad silero and no file at --vad-model.
	causeVADModelMissing = "vad_model_missing"
	// causeVADModelInvalid: the file at --vad-model (with --vad silero,
	// or present with auto) is no Silero VAD model whisper.cpp can run.
	causeVADModelInvalid = "vad_model_invalid"
)

// startupError is a failure with a known cause.
type startupError struct {
	cause string
	msg   string
	err   error
}

func (e *startupError) Error() string { return e.msg }
func (e *startupError) Unwrap() error { return e.err }

// checkModel reads the model file's headers in pure Go before whisper.cpp
// sees it: a missing file, a file that is neither a whisper nor a Parakeet
// model (an HTML error page, a Silero VAD model) or one cut short (or a
// Parakeet file without its audio context) fails here with a message,
// instead of in whisper.cpp, which aborts the process on some of them (a
// GGML_ASSERT).
func checkModel(path string) error {
	_, err := modelfile.CheckSpeech(path)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, modelfile.ErrMissing):
		return &startupError{cause: causeModelMissing, msg: err.Error(), err: asr.ErrModelMissing}
	default:
		return &startupError{cause: causeModelInvalid, msg: err.Error(), err: asr.ErrModelInvalid}
	}
}

// cause classifies an error of run: a known startup failure, or nil.
func cause(model string, err error) *startupError {
	var se *startupError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return se
	case errors.Is(err, asr.ErrModelMissing):
		return &startupError{cause: causeModelMissing, msg: modelfile.NotFound(model), err: err}
	case errors.Is(err, asr.ErrModelInvalid):
		return &startupError{cause: causeModelInvalid, err: err,
			msg: model + ": whisper.cpp could not load it as a model — fetch one with yaz-fetch-model " + modelfile.FetchName(model)}
	case errors.Is(err, asr.ErrLanguageUnsupported):
		return &startupError{cause: causeLanguageUnsupported, msg: err.Error(), err: err}
	}
	return nil
}

// supervised reports whether a supervisor runs this process: --serve, or
// a readiness fd to write to. Call it before cli.Ready, which unsets
// YAZ_READY_FD.
func supervised(serve bool) bool { return serve || os.Getenv(cli.ReadyEnv) != "" }

// exit reports the result of run and returns the exit code: a known
// startup failure under a supervisor is one ERROR record with its cause
// and exit 125; anything else is reported as usual (one "yaz-decode:
// error: …" line, exit 1 or 2).
func exit(log *slog.Logger, stderr io.Writer, underSupervisor bool, model string, err error) int {
	se := cause(model, err)
	switch {
	case se == nil:
		return cli.Report(name, stderr, err)
	case underSupervisor:
		log.Error(se.msg, "cause", se.cause)
		return cli.ExitNoRestart
	default:
		return cli.Report(name, stderr, errors.New(se.msg))
	}
}
