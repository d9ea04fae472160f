package mcpserve

import (
	"errors"
	"io"

	"github.com/yazses/yazses/lib/linebound"
)

// MaxLineBytes caps one JSON-RPC message on stdin. A longer line is dropped
// whole and replaced by a line that is not JSON, so the client gets a parse
// error and the server keeps serving, never holding more than this in memory.
// No legitimate message comes near it: a question is at most 500
// characters, a path at most 4096 bytes.
const MaxLineBytes = 4 << 20

// overlong stands in for a dropped line: not JSON, so mcp-go answers it
// with a parse error.
var overlong = []byte("line too long\n")

// lineCap passes whole lines through and replaces those over max bytes,
// newline included.
type lineCap struct {
	lines   *linebound.Reader
	max     int
	pending []byte // what Read hands out next
	newline bool   // a newline follows pending
	err     error
}

// newLineCap reads r in lines of at most max bytes without their newline:
// a last line without one passes as it is, and may use all max bytes.
func newLineCap(r io.Reader, max int) *lineCap {
	opt := linebound.Options{Max: max, Long: linebound.Skip, Last: linebound.KeepLast}
	return &lineCap{lines: linebound.NewReader(r, opt), max: max}
}

func (l *lineCap) Read(p []byte) (int, error) {
	for len(l.pending) == 0 && !l.newline {
		if l.err != nil {
			return 0, l.err
		}
		l.fill()
	}
	n := copy(p, l.pending)
	l.pending = l.pending[n:]
	if len(l.pending) == 0 && l.newline && n < len(p) {
		p[n] = '\n'
		n++
		l.newline = false
	}
	return n, nil
}

// fill takes the next line into pending (or records the read error).
func (l *lineCap) fill() {
	line, err := l.lines.ReadLine()
	ended := !l.lines.Unterminated()
	switch {
	case errors.Is(err, linebound.ErrTooLong), err == nil && ended && len(line) == l.max:
		l.pending, l.newline = overlong, false
	case err != nil:
		l.err = err
	default:
		l.pending, l.newline = line, ended
	}
}
