// Package vadwire is the wire format of `yaz-decode vad-stream`: the
// child that runs Silero VAD (cgo) for a process that cannot (yazsesd, pure
// Go) and reports the speech probability of every 512-sample window. The
// reading side runs vadspan.Tracker over them with parameters of its own.
// This package is pure Go and imports no detector.
//
// # Input: frames on stdin
//
// The child reads the frames of package frame (type byte, uint32 LE length,
// payload):
//
//   - Audio ('A'): wire-format PCM (s16le, 16 kHz, mono; package pcm), in
//     blocks of any size. The samples of the current use run on from where
//     the last Audio frame stopped.
//   - End ('E', empty): ends the current use. Its last partial window,
//     zero-padded, is run (as whisper.cpp pads a file's last window); then
//     the detector's state restarts from zero (whisper_vad_reset_state)
//     and the next Audio frame starts a new use at window 0. An End with no
//     audio since the last one is a valid, empty use.
//
// Any other frame type (Abandon, Prompt) is a protocol error: the child
// exits 1. EOF on stdin ends the child cleanly (exit 0), ending an open
// use first as End does.
//
// # Output: lines on stdout
//
// ASCII lines, each ended by "\n", two kinds:
//
//	P FIRST PROB...   probabilities of windows FIRST, FIRST+1, … of the use
//	E N               the use ended after N windows (the padded one included)
//
// Window i of a use covers samples [512·i, 512·(i+1)) of the audio sent
// since the last End (or the start), so a reader maps each probability to
// its own sample positions. FIRST and N are decimal integers without sign or
// leading zeros; P lines of a use are contiguous (FIRST is the number of
// windows already reported), and N is their total. Every Audio frame that
// completes windows is answered by P lines (one, or several if it completes
// more than MaxPerLine windows) written in one write as soon as it has been
// run; a frame that completes no window is not answered. An End is answered
// by the P line of its padded window, if there was a partial one, and its
// E line.
//
// PROB is the detector's float32 in the shortest decimal form that reads
// back as the same float32 (strconv.FormatFloat(p, 'g', -1, 32); e.g. 0,
// 0.5, 0.0012345, 1e-05): parsed with strconv.ParseFloat(s, 32) it is the
// detector's number bit for bit. It lies in [0, 1]; NaN, signs and other
// spellings are refused. A line is at most MaxLine bytes with its newline,
// so bufio.Scanner's default buffer holds any of them.
//
// Reader reads and checks the lines (contiguous windows, E counts); Parse
// checks one line without context; Writer writes them (the child's side).
package vadwire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// Line kinds: the first byte of a line.
const (
	Probs byte = 'P' // probabilities of consecutive windows
	End   byte = 'E' // the end of a use
)

// MaxPerLine is the most probabilities one P line carries (8.2 s of
// audio).
const MaxPerLine = 256

// maxProb is the longest PROB: nine significant digits, a point and an
// exponent ("1.23456789e-05" has 14 bytes; 16 leaves room).
const maxProb = 16

// MaxLine is the longest line, newline included.
const MaxLine = 2 + 20 + MaxPerLine*(1+maxProb) + 1

// ErrSyntax is wrapped by the errors of a malformed line.
var ErrSyntax = errors.New("malformed vad-stream line")

// ErrSequence is wrapped by Reader's errors for lines that are well formed
// but do not follow: windows skipped or repeated, or an E count that is not
// the number of windows reported.
var ErrSequence = errors.New("vad-stream lines out of sequence")

// Record is one line.
type Record struct {
	Kind    byte      // Probs or End
	First   int64     // Probs: the use's index of the first window
	Probs   []float32 // Probs: one per window, in order
	Windows int64     // End: the number of windows of the use
}

// Parse reads one line, without its "\n" (a trailing "\r" is refused).
// The probabilities are appended to dst[:0] and returned in Record.Probs.
func Parse(line []byte, dst []float32) (Record, error) {
	if len(line) < 3 || line[1] != ' ' {
		return Record{}, syntax(line, "want P FIRST PROB... or E N")
	}
	rest := line[2:]
	switch line[0] {
	case End:
		n, err := count(rest)
		if err != nil {
			return Record{}, syntax(line, err.Error())
		}
		return Record{Kind: End, Windows: n}, nil
	case Probs:
		field, rest, more := cut(rest)
		first, err := count(field)
		if err != nil {
			return Record{}, syntax(line, err.Error())
		}
		if !more {
			return Record{}, syntax(line, "no probability")
		}
		probs := dst[:0]
		for more {
			field, rest, more = cut(rest)
			if len(probs) == MaxPerLine {
				return Record{}, syntax(line, fmt.Sprintf("more than %d probabilities", MaxPerLine))
			}
			p, err := prob(field)
			if err != nil {
				return Record{}, syntax(line, err.Error())
			}
			probs = append(probs, p)
		}
		return Record{Kind: Probs, First: first, Probs: probs}, nil
	}
	return Record{}, syntax(line, "unknown kind")
}

// cut splits at the first space.
func cut(b []byte) (field, rest []byte, more bool) {
	for i, c := range b {
		if c == ' ' {
			return b[:i], b[i+1:], true
		}
	}
	return b, nil, false
}

// count is a decimal integer of at most 18 digits, without sign or leading
// zeros.
func count(b []byte) (int64, error) {
	if len(b) == 0 || len(b) > 18 || (b[0] == '0' && len(b) > 1) {
		return 0, fmt.Errorf("bad count %q", b)
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad count %q", b)
		}
		n = n*10 + int64(c-'0')
	}
	return n, nil
}

// prob is a probability as Writer writes it: digits, '.', 'e' and an
// exponent sign only, a float32, in [0, 1].
func prob(b []byte) (float32, error) {
	if len(b) == 0 || len(b) > maxProb || b[0] < '0' || b[0] > '9' {
		return 0, fmt.Errorf("bad probability %q", b)
	}
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == '-' || c == '+') {
			return 0, fmt.Errorf("bad probability %q", b)
		}
	}
	f, err := strconv.ParseFloat(string(b), 32)
	if err != nil || !(f >= 0 && f <= 1) {
		return 0, fmt.Errorf("bad probability %q", b)
	}
	return float32(f), nil
}

func syntax(line []byte, why string) error {
	if len(line) > 40 {
		line = append(line[:37:37], "..."...)
	}
	return fmt.Errorf("%w: %s: %q", ErrSyntax, why, line)
}

// Reader reads the lines of a child's stdout and checks that they follow
// one another. It is not safe for concurrent use.
type Reader struct {
	sc    *bufio.Scanner
	next  int64 // windows of the current use reported so far
	probs []float32
	err   error
}

// NewReader returns a Reader on r (a child's stdout).
func NewReader(r io.Reader) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxLine)
	sc.Split(lines)
	return &Reader{sc: sc}
}

// lines splits at "\n" and keeps everything else, a "\r" included
// (bufio.ScanLines would drop it and let a CRLF stream through).
func lines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// Next reads the next line. It returns io.EOF when the stream ends after a
// whole line (the child exited), an error wrapping ErrSyntax or
// ErrSequence for a line that is not the next one, or the read error.
// Errors are final. Record.Probs is reused by the next call.
func (r *Reader) Next() (Record, error) {
	if r.err != nil {
		return Record{}, r.err
	}
	rec, err := r.read()
	if err != nil {
		r.err = err
		return Record{}, err
	}
	return rec, nil
}

func (r *Reader) read() (Record, error) {
	if !r.sc.Scan() {
		if err := r.sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				return Record{}, fmt.Errorf("%w: a line longer than %d bytes", ErrSyntax, MaxLine)
			}
			return Record{}, fmt.Errorf("read vad-stream line: %w", err)
		}
		return Record{}, io.EOF
	}
	line := r.sc.Bytes()
	if n := len(line); n > 0 && line[n-1] == '\r' {
		return Record{}, syntax(line, "carriage return")
	}
	rec, err := Parse(line, r.probs)
	if err != nil {
		return Record{}, err
	}
	switch rec.Kind {
	case Probs:
		r.probs = rec.Probs
		if rec.First != r.next {
			return Record{}, fmt.Errorf("%w: probabilities from window %d, want %d", ErrSequence, rec.First, r.next)
		}
		r.next += int64(len(rec.Probs))
	case End:
		if rec.Windows != r.next {
			return Record{}, fmt.Errorf("%w: the use ended after %d windows, %d were reported", ErrSequence, rec.Windows, r.next)
		}
		r.next = 0
	}
	return rec, nil
}

// Writer writes the lines (the child's side). It numbers the windows
// itself. It is not safe for concurrent use.
type Writer struct {
	w    io.Writer
	buf  []byte
	next int64
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// ErrProb reports a probability that is NaN or outside [0, 1]: nothing is
// written.
var ErrProb = errors.New("probability outside [0, 1]")

// Probs writes the probabilities of the next windows of the use as P
// lines, in one write. No probabilities write nothing.
func (w *Writer) Probs(probs []float32) error {
	for _, p := range probs {
		if !(p >= 0 && p <= 1) {
			return fmt.Errorf("write probabilities: %w: %v", ErrProb, p)
		}
	}
	w.buf = w.buf[:0]
	first := w.next
	for len(probs) > 0 {
		n := min(len(probs), MaxPerLine)
		w.buf = append(w.buf, Probs, ' ')
		w.buf = strconv.AppendInt(w.buf, first, 10)
		for _, p := range probs[:n] {
			w.buf = append(w.buf, ' ')
			w.buf = strconv.AppendFloat(w.buf, float64(math.Abs(float64(p))), 'g', -1, 32) // -0 as 0
		}
		w.buf = append(w.buf, '\n')
		first += int64(n)
		probs = probs[n:]
	}
	if err := w.flush(); err != nil {
		return fmt.Errorf("write probabilities: %w", err)
	}
	w.next = first
	return nil
}

// End writes the E line of the current use and starts the next one at
// window 0.
func (w *Writer) End() error {
	w.buf = append(w.buf[:0], End, ' ')
	w.buf = strconv.AppendInt(w.buf, w.next, 10)
	w.buf = append(w.buf, '\n')
	if err := w.flush(); err != nil {
		return fmt.Errorf("write end of use: %w", err)
	}
	w.next = 0
	return nil
}

// Windows is the number of windows of the current use written so far.
func (w *Writer) Windows() int64 { return w.next }

func (w *Writer) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	n, err := w.w.Write(w.buf)
	if err != nil {
		return err
	}
	if n != len(w.buf) {
		return io.ErrShortWrite
	}
	return nil
}
