package mcpserve

import (
	"bufio"
	"io"
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

// lineCap passes whole lines through and replaces those over max bytes.
type lineCap struct {
	r       *bufio.Reader
	max     int
	pending []byte // what Read hands out next
	line    []byte
	err     error
}

func newLineCap(r io.Reader, max int) *lineCap {
	return &lineCap{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

func (l *lineCap) Read(p []byte) (int, error) {
	for len(l.pending) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		l.fill()
	}
	n := copy(p, l.pending)
	l.pending = l.pending[n:]
	return n, nil
}

// fill reads the next line into pending (or records the read error).
func (l *lineCap) fill() {
	l.line = l.line[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		if len(l.line)+len(chunk) > l.max {
			// Too long: drop it up to its newline.
			for err == bufio.ErrBufferFull {
				_, err = l.r.ReadSlice('\n')
			}
			l.pending = overlong
			if err != nil {
				l.err = err
			}
			return
		}
		l.line = append(l.line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			l.err = err
		}
		l.pending = l.line
		if len(l.line) > 4*l.max/5 || cap(l.line) > l.max {
			l.line = nil // do not keep a huge buffer around
		}
		return
	}
}
