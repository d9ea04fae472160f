package gate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrLineTooLong is returned by LineReader.ReadLine for a line longer than
// MaxLine; the line has been read and dropped, the next one can follow.
var ErrLineTooLong = errors.New("line too long")

// LineReader reads lines of at most MaxLine bytes. A read error (a deadline,
// say) keeps the part of the line read so far, so a later call continues
// the same line instead of starting in its middle.
type LineReader struct {
	r          *bufio.Reader
	buf        []byte
	discarding bool
}

// NewLineReader returns a LineReader on r.
func NewLineReader(r io.Reader) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, MaxLine)}
}

// ReadLine returns the next line without its "\n" or "\r\n". The slice is
// valid until the next call. A final line without a newline is dropped and
// io.EOF returned.
func (l *LineReader) ReadLine() ([]byte, error) {
	for {
		frag, err := l.r.ReadSlice('\n')
		if !l.discarding {
			l.buf = append(l.buf, frag...)
			if len(l.buf) > MaxLine {
				l.discarding = true
				l.buf = l.buf[:0]
			}
		}
		switch {
		case err == nil:
			line := l.buf
			l.buf = l.buf[:0]
			if l.discarding {
				l.discarding = false
				return nil, ErrLineTooLong
			}
			line = bytes.TrimSuffix(line, []byte("\n"))
			return bytes.TrimSuffix(line, []byte("\r")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

// HasLine reports whether a whole line is already buffered, so that the
// next ReadLine returns without reading. A server that batches its replies
// flushes them when it is not: the next read may wait.
func (l *LineReader) HasLine() bool {
	b, _ := l.r.Peek(l.r.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
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
