package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/yazses/yazses/lib/linebound"
)

// ErrLineTooLong is returned by a line reader's ReadLine for a line longer
// than MaxLine; the line has been read and dropped, the next one can
// follow.
var ErrLineTooLong = linebound.ErrTooLong

// NewLineReader returns the reader both sides read lines with: lines of
// at most MaxLine bytes with their newline (a "\r" before it is dropped and
// not counted), a longer one read to its end and answered ErrLineTooLong,
// a final line without a newline dropped (ReadLine's error matches
// io.EOF). A read error (a deadline, say) keeps the part of the line read
// so far, so a later call continues the same line instead of starting in
// its middle. HasLine says whether the next ReadLine returns without
// reading.
func NewLineReader(r io.Reader) *linebound.Reader {
	return linebound.NewReader(r, linebound.Options{Max: MaxLine - 1, Long: linebound.Skip, CRLF: true})
}

// ParseRequest parses and checks one request line: a single JSON object
// with a known op, no unknown fields, a token exactly for commit and
// release.
func ParseRequest(line []byte) (Request, error) {
	var r Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Request{}, fmt.Errorf("parse request: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Request{}, errors.New("parse request: data after the object")
	}
	if r.PerHour != nil && r.Op != OpLimit {
		return Request{}, fmt.Errorf("parse request: %s takes no per_hour", r.Op)
	}
	switch r.Op {
	case OpReserve, OpStatus:
		if r.Token != "" {
			return Request{}, fmt.Errorf("parse request: %s takes no token", r.Op)
		}
	case OpCommit, OpRelease:
		if r.Token == "" {
			return Request{}, fmt.Errorf("parse request: %s needs a token", r.Op)
		}
	case OpLimit:
		if r.Token != "" || r.PerHour == nil || *r.PerHour < 0 || *r.PerHour > MaxPerHour {
			return Request{}, errors.New("parse request: limit needs per_hour from 0 to 60 and no token")
		}
	default:
		return Request{}, errors.New("parse request: unknown op")
	}
	return r, nil
}
