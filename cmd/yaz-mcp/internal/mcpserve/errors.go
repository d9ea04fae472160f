package mcpserve

import (
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/yazses/yazses/cmd/yaz-mcp/internal/audiofile"
	"github.com/yazses/yazses/cmd/yaz-mcp/internal/localdecode"
	"github.com/yazses/yazses/lib/daemonapi"
)

// Code is one word of the public error vocabulary. A tool error result's
// text is "CODE: SENTENCE", both fixed here: no path, no system error text
// and no transcript fragment is ever part of it.
type Code string

// The public error vocabulary.
const (
	NotFound          Code = "not_found"
	NotAFile          Code = "not_a_file"
	UnsupportedFormat Code = "unsupported_format"
	TooLarge          Code = "too_large"
	ModelMissing      Code = "model_missing"
	DecodeFailed      Code = "decode_failed"
	InvalidArgument   Code = "invalid_argument"
	Unavailable       Code = "unavailable"
)

// Sentences is the one fixed sentence of each code.
var Sentences = map[Code]string{
	NotFound:          "No readable file exists at that path. Give the absolute path of an audio file on this machine that this user can read.",
	NotAFile:          "The path names a directory, pipe, device or socket, not a regular file. Give the path of an audio file.",
	UnsupportedFormat: "The file is not a WAV file YazSes can read (PCM or float WAV, any rate, any channels). Convert it first, e.g. ffmpeg -i INPUT -ar 16000 -ac 1 OUTPUT.wav.",
	TooLarge:          "The file is larger than 1 GiB or longer than 4 hours. Split it into shorter files first.",
	ModelMissing:      "No speech model is installed. Fetch one with yaz-fetch-model base.en, or set decode.model in ~/.config/yazses/config.toml.",
	DecodeFailed:      "The speech decoder failed on this file. Check that it plays, or run yaz-decode on it in a terminal to see why.",
	InvalidArgument:   "An argument is missing or has the wrong type or value.",
	Unavailable:       "The speech decoder (yaz-decode) could not be started. Check the YazSes installation.",
}

// Fixed details of invalid_argument, one per argument rule.
const (
	detailPath = "path must be a non-empty string: the absolute path of a WAV file."
	// detailEmpty is unsupported_format's sentence for a file of 0 bytes:
	// there is nothing to convert.
	detailEmpty = "The file is empty (0 bytes): it holds no audio to transcribe."
)

// detailTimeout is invalid_argument's detail for a timeout_s that is not
// 0 nor a number of seconds of at least least (AskTiming.MinTimeoutS).
func detailTimeout(least int) string {
	return fmt.Sprintf("timeout_s must be 0 (the configured default) or a number of seconds of at least %d: a shorter wait could not hear an answer.", least)
}

var detailQuestion = fmt.Sprintf("question must be a non-empty string of at most %d characters.", daemonapi.MaxQuestionRunes)

// toolError makes the isError result of code, with its fixed sentence or,
// for invalid_argument, one of the fixed details.
func toolError(code Code, detail ...string) *mcp.CallToolResult {
	s := Sentences[code]
	if len(detail) > 0 {
		s = detail[0]
	}
	return mcp.NewToolResultError(string(code) + ": " + s)
}

// codeOf maps the errors of the transcribe path to their public code.
func codeOf(err error) Code {
	switch {
	case errors.Is(err, audiofile.ErrInvalid):
		return InvalidArgument
	case errors.Is(err, audiofile.ErrNotFound):
		return NotFound
	case errors.Is(err, audiofile.ErrNotAFile):
		return NotAFile
	case errors.Is(err, audiofile.ErrUnsupported):
		return UnsupportedFormat
	case errors.Is(err, audiofile.ErrTooLarge):
		return TooLarge
	case errors.Is(err, localdecode.ErrModelMissing):
		return ModelMissing
	case errors.Is(err, localdecode.ErrStart), errors.Is(err, errNoDecoder):
		return Unavailable
	default:
		return DecodeFailed
	}
}
