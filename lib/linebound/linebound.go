// Package linebound reads newline-delimited lines (NDJSON, JSON-RPC, the
// gate protocol, a child's stderr, the audit log) with a bound on their
// length, so that no peer can make a reader hold more than the bound in
// memory, and every reader answers an over-long line and a last line
// without a newline the way its caller chose, out loud.
//
// The caller states, in [Options]:
//
//   - Max: the longest line in bytes, not counting its line ending: the
//     "\n", and with CRLF also a "\r" right before it. A protocol whose
//     limit counts the newline passes that limit less one.
//   - Long: what a longer line comes to. Every choice reports it with
//     [ErrTooLong]; none hands out more than Max bytes of it:
//     [Fail]: the reader stops there, as soon as it has seen more than Max
//     bytes of the line, without reading the rest; [Skip]: the line is
//     read to its newline and dropped, and the next call reads the next
//     line; [Truncate]: its first Max bytes are returned (with ErrTooLong)
//     as soon as they are read, and the rest is dropped up to the newline.
//   - Last: whether bytes after the last newline, when the input ends, are
//     a line ([KeepLast]) or a line cut short that does not count
//     ([DropLast]: the reader returns [ErrUnterminated], which matches
//     both io.EOF and io.ErrUnexpectedEOF). Either way such a line over
//     Max is ErrTooLong first under Fail and Truncate, which report a
//     long line before its end; under Skip it is ErrTooLong with KeepLast
//     and ErrUnterminated with DropLast.
//   - CRLF: whether a "\r" before the "\n" belongs to the line ending.
//
// An empty line is a line: ReadLine returns an empty, non-nil slice. No
// other byte is special: a "\r" elsewhere, a NUL or invalid UTF-8 is the
// caller's to judge.
//
// A read error other than io.EOF (a deadline, say) is returned as it is,
// and the part of the line read so far is kept: the next call goes on with
// the same line, never from its middle. The end of the input is final:
// after it every call returns io.EOF.
//
// Typical use, for a wire protocol that refuses a long request and goes
// on:
//
//	lines := linebound.NewReader(conn, linebound.Options{Max: 4095, Long: linebound.Skip, CRLF: true})
//	for {
//		line, err := lines.ReadLine()
//		switch {
//		case errors.Is(err, linebound.ErrTooLong):
//			// answer "bad request"
//		case err != nil:
//			return err // io.EOF (ErrUnterminated matches it) is the peer gone
//		default:
//			// handle line
//		}
//	}
//
// Memory: a line that fits the underlying buffer (Max+2 bytes, 16 at
// least, 64 KiB at most) is returned in place, without a copy; a longer
// one is gathered in a buffer of the Reader's that grows to the length of
// the line, at most Max and one underlying buffer more, and is let go
// before the next line once it has grown past 64 KiB.
//
// This is tailscale's util/lineiter with the bound made the caller's:
// lineiter yields the lines of a bufio.Scanner, whose first line over its
// buffer ends the scan for good (bufio.ErrTooLong), and which cannot
// resume after a deadline.
package linebound

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// ErrTooLong reports a line longer than Options.Max. Under Truncate it
// comes with the line's first Max bytes.
var ErrTooLong = errors.New("line too long")

// ErrUnterminated is returned under DropLast when the input ends inside a
// line, whose bytes are dropped. errors.Is matches it with both io.EOF
// (the input has ended: a peer gone mid-line ends a session like one gone
// between lines) and io.ErrUnexpectedEOF (it ended where it should not
// have).
var ErrUnterminated error = unterminated{}

type unterminated struct{}

func (unterminated) Error() string { return "unexpected EOF: last line without a newline" }

func (unterminated) Is(target error) bool {
	return target == io.EOF || target == io.ErrUnexpectedEOF
}

// Long says what a line longer than Options.Max comes to.
type Long int

const (
	// Fail stops the Reader: ReadLine returns ErrTooLong as soon as more
	// than Max bytes of the line have been read, without reading its rest,
	// and so does every later call. For a protocol that ends the session.
	Fail Long = iota
	// Skip reads the line to its newline and drops it: ReadLine returns
	// nil and ErrTooLong once the line has ended, and the next call reads
	// the next line.
	Skip
	// Truncate returns the line's first Max bytes with ErrTooLong as soon
	// as they are read; the rest of the line is read and dropped without
	// another report, and the next call returns the next line.
	Truncate
)

// Last says whether bytes after the last newline are a line.
type Last int

const (
	// DropLast drops them: ReadLine returns ErrUnterminated. An input
	// that ends with a newline (or with nothing) ends with io.EOF.
	DropLast Last = iota
	// KeepLast returns them as the last line, with a nil error (after
	// ErrTooLong, under Skip or Fail, if they are too many); io.EOF comes
	// on the next call. Reader.Unterminated tells such a line apart.
	KeepLast
)

// Options are a Reader's bound and its answers. The zero value but Max is
// the strict choice for a protocol: a long line fails, a line cut short
// does not count, "\r" is data.
type Options struct {
	// Max is the longest line in bytes, without its line ending. It must
	// not be negative; 0 allows empty lines only.
	Max int
	// Long is what a longer line comes to.
	Long Long
	// Last is whether bytes after the last newline are a line.
	Last Last
	// CRLF makes a "\r" right before the "\n" part of the line ending: it
	// is neither returned nor counted. A last line kept under KeepLast
	// loses a final "\r" too.
	CRLF bool
}

// maxBuffer caps the underlying bufio.Reader, and the line buffer a
// Reader keeps between lines.
const maxBuffer = 64 << 10

// Reader reads bounded lines. It is not safe for concurrent use.
type Reader struct {
	br  *bufio.Reader
	opt Options

	buf        []byte // the line so far, when it spans reads
	handedOut  bool   // the last call returned a line held in buf
	skipping   bool   // the current line is too long: drop it to its newline
	noEnd      bool   // the last line returned had no newline
	err        error  // final: io.EOF, or ErrTooLong under Fail
	pendingEOF bool   // io.EOF was read while returning a Truncate prefix
}

// NewReader returns a Reader of r with the bound and answers of opt. It
// reads r through a buffer of its own of at most 64 KiB (and no more than
// Max+2 bytes), so what it reads past the current line stays in that
// buffer.
func NewReader(r io.Reader, opt Options) *Reader {
	if opt.Max < 0 {
		panic("linebound: negative Max")
	}
	size := min(max(opt.Max+2, 16), maxBuffer)
	return &Reader{br: bufio.NewReaderSize(r, size), opt: opt}
}

// ReadLine returns the next line without its line ending, or an error:
// ErrTooLong (see Long), ErrUnterminated (see Last), io.EOF at the end,
// or the underlying reader's error. The slice is valid until the next
// call; a caller that keeps the line copies it.
func (r *Reader) ReadLine() ([]byte, error) {
	if r.handedOut {
		r.handedOut = false
		r.buf = r.buf[:0]
		if cap(r.buf) > maxBuffer {
			r.buf = nil
		}
	}
	r.noEnd = false
	if r.pendingEOF {
		r.pendingEOF, r.err = false, io.EOF
	}
	if r.err != nil {
		return nil, r.err
	}
	for {
		frag, err := r.br.ReadSlice('\n')
		ended := err == nil // frag ends with the newline
		if ended {
			frag = frag[:len(frag)-1]
		}
		if r.skipping {
			switch {
			case ended:
				r.skipping = false
				if r.opt.Long == Skip {
					return nil, ErrTooLong
				}
				continue // Truncate: reported already
			case errors.Is(err, bufio.ErrBufferFull):
				continue
			case errors.Is(err, io.EOF):
				return r.endSkipped()
			default:
				return nil, err // still skipping: a later call goes on
			}
		}

		line := frag
		if !ended || len(r.buf) > 0 {
			r.buf = append(r.buf, frag...)
			line = r.buf
		}
		if ended {
			return r.whole(line, false)
		}
		if r.over(line) {
			switch r.opt.Long {
			case Fail:
				r.buf, r.err = nil, ErrTooLong
				return nil, ErrTooLong
			case Skip:
				r.buf, r.skipping = r.buf[:0], true
				if cap(r.buf) > maxBuffer {
					r.buf = nil
				}
			case Truncate:
				r.skipping, r.handedOut = true, true
				if errors.Is(err, io.EOF) {
					r.skipping, r.pendingEOF = false, true
				}
				return line[:r.opt.Max], ErrTooLong
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if r.skipping {
				return r.endSkipped()
			}
			r.err = io.EOF
			switch {
			case len(line) == 0:
				return nil, io.EOF
			case r.opt.Last == KeepLast:
				return r.whole(line, true)
			default:
				r.buf = r.buf[:0]
				return nil, ErrUnterminated
			}
		default:
			return nil, err // the part read so far stays in buf
		}
	}
}

// endSkipped answers the end of the input inside a line being skipped.
func (r *Reader) endSkipped() ([]byte, error) {
	r.skipping, r.err = false, io.EOF
	switch {
	case r.opt.Long != Skip:
		return nil, io.EOF // Truncate: reported already
	case r.opt.Last == KeepLast:
		return nil, ErrTooLong
	default:
		return nil, ErrUnterminated
	}
}

// whole returns a line that has ended (at its newline, or at the end of
// the input when noEnd) after checking it against Max.
func (r *Reader) whole(line []byte, noEnd bool) ([]byte, error) {
	r.handedOut = true
	if r.opt.CRLF {
		line = bytes.TrimSuffix(line, []byte("\r"))
	}
	if len(line) <= r.opt.Max {
		r.noEnd = noEnd
		return line, nil
	}
	switch r.opt.Long {
	case Fail:
		r.buf, r.err = nil, ErrTooLong
		return nil, ErrTooLong
	case Truncate:
		return line[:r.opt.Max], ErrTooLong
	default:
		return nil, ErrTooLong
	}
}

// over reports whether a line not ended yet is already longer than Max,
// whatever comes next: under CRLF a final "\r" may still be the line
// ending's.
func (r *Reader) over(line []byte) bool {
	n := len(line)
	if r.opt.CRLF && n > 0 && line[n-1] == '\r' {
		n--
	}
	return n > r.opt.Max
}

// Unterminated reports whether the line ReadLine returned last had no
// newline: under KeepLast, the bytes after the last newline of the input.
// A protocol filter that passes lines on uses it to pass that one on
// without a newline too.
func (r *Reader) Unterminated() bool {
	return r.noEnd
}

// HasLine reports whether a whole line, up to its newline, is already
// buffered, so that the next ReadLine returns without reading (under
// Truncate that newline may end the dropped rest of a long line instead).
// A server that batches its replies flushes them when it is not: the next
// read may wait.
func (r *Reader) HasLine() bool {
	b, _ := r.br.Peek(r.br.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}
