// Package piece cuts a long 16 kHz stream into pieces a speech recognizer
// decodes one at a time: each at most a given length (whisper's 30 s
// window), each full one cut at the quietest 100 ms of its last part, so a
// cut rarely splits a word and the cuts are a function of the audio alone.
// A Cutter holds one piece of audio whatever the stream's length: yazsesd
// sends a file to its decoder this way, and yaz-decode decodes a file this
// way when no Silero detector chooses its speech. QuietCut is the one
// quiet-point cut on audio: yaz-decode's Parakeet chunks are cut with it
// too.
package piece

import (
	"errors"
	"fmt"
	"io"
)

// ErrTooLong reports a stream longer than the Cutter's limit.
var ErrTooLong = errors.New("stream longer than the limit")

// Reader is a stream of 16 kHz mono samples (wav.Reader16k): Read reads up
// to len(dst) samples and returns io.EOF at the end.
type Reader interface {
	Read(dst []float32) (int, error)
}

// Cutter cuts a Reader's stream into pieces (see the package comment).
type Cutter struct {
	r      Reader
	max    int       // the longest piece, in samples
	search int       // a full piece is cut in its last search samples
	limit  int64     // the most samples the stream may have; 0: no limit
	buf    []float32 // samples from pos on
	pos    int64     // stream sample of buf[0]
	taken  int       // samples of buf handed out as the last piece
	eof    bool
}

// New cuts r into pieces of at most maxLen samples (100 ms at least), each
// full piece cut in its last search samples. A stream of more than limit samples (limit > 0) is
// refused as it is read, with ErrTooLong.
func New(r Reader, maxLen, search int, limit int64) *Cutter {
	maxLen = max(maxLen, 5*Frame)
	search = min(max(search, 0), maxLen)
	return &Cutter{r: r, max: maxLen, search: search, limit: limit, buf: make([]float32, 0, maxLen)}
}

// Next returns the next piece and the stream sample it starts at, or io.EOF
// after the last one. The piece is valid until the next call. A read error
// is returned as it is, wrapped.
func (c *Cutter) Next() ([]float32, int64, error) {
	if c.taken > 0 { // drop the last piece, keep what followed its cut
		n := copy(c.buf, c.buf[c.taken:])
		c.buf = c.buf[:n]
		c.pos += int64(c.taken)
		c.taken = 0
	}
	for !c.eof && len(c.buf) < c.max {
		n, err := c.r.Read(c.buf[len(c.buf):c.max])
		c.buf = c.buf[:len(c.buf)+n]
		if c.limit > 0 && c.pos+int64(len(c.buf)) > c.limit {
			return nil, 0, fmt.Errorf("%w: more than %d samples", ErrTooLong, c.limit)
		}
		if errors.Is(err, io.EOF) {
			c.eof = true
		} else if err != nil {
			return nil, 0, fmt.Errorf("read: %w", err)
		}
	}
	if len(c.buf) == 0 {
		return nil, 0, io.EOF
	}
	c.taken = len(c.buf) // the last piece: all that is left
	if !c.eof {          // a full piece with more to come
		c.taken = QuietCut(c.buf, c.max-c.search)
	}
	return c.buf[:c.taken], c.pos, nil
}

// End is the stream sample after the last piece handed out: after io.EOF,
// the stream's length.
func (c *Cutter) End() int64 { return c.pos + int64(c.taken) }

// Frame is the frame of the quiet-point search: 20 ms at 16 kHz.
const Frame = 16000 / 50

// QuietCut returns where to cut s (a full piece) at or after sample from:
// the middle of the quietest 100 ms (five 20 ms frames) there, the latest
// of equals, on a frame boundary. Steady audio (silence) is cut at its
// end.
func QuietCut(s []float32, from int) int {
	from -= from % Frame
	frames := (len(s) - from) / Frame
	if frames < 5 {
		return len(s)
	}
	pow := make([]float64, frames)
	for i := range pow {
		var sum float64
		for _, v := range s[from+i*Frame : from+(i+1)*Frame] {
			f := float64(v)
			sum += f * f
		}
		pow[i] = sum
	}
	best, bestAt := 0.0, -1
	for i := 4; i < frames; i++ {
		// Summed afresh (not a running sum): silence sums to exactly 0, so
		// equals are equal and the latest is taken.
		win := pow[i-4] + pow[i-3] + pow[i-2] + pow[i-1] + pow[i]
		if bestAt < 0 || win <= best {
			best, bestAt = win, i-2 // the middle frame of the window
		}
	}
	cut := from + bestAt*Frame
	if bestAt == frames-3 { // the quietest is at the very end: take it all
		cut = from + frames*Frame
	}
	return cut
}
