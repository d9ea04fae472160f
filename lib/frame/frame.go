// Package frame is the framing of `yaz-decode serve`, the supervised decoder.
//
// The daemon writes frames on the decoder's stdin; each frame is a type byte,
// a payload length as a little-endian uint32, and the payload:
//
//	type(1) length(4, LE) payload(length)
//
// There are five types: Audio ('A') carries wire-format PCM (s16le, 16 kHz,
// mono; see package pcm), so its length is even; End ('E') ends the current
// utterance and Abandon ('X') drops it, both with an empty payload; Prompt
// ('P') carries UTF-8 text, at most MaxPrompt bytes, that replaces the
// decoder's own vocabulary hint for the current utterance only (an empty
// one means no hint); Context ('C') carries UTF-8 text, at most MaxPrompt
// bytes, that was said just before the current utterance (the pieces of a
// dictation decoded so far): an engine that conditions on earlier text
// (whisper, as it does from one 30-second window to the next) reads it
// after the vocabulary hint, and one that does not (Parakeet) ignores it
// without a word, as it is no setting of the person's. A payload is at
// most MaxPayload bytes; the Writer splits longer audio.
//
// The decoder answers each ended utterance with one Result, a JSON object on
// one line of stdout, in the order the End frames arrived: exactly one per
// End, whatever happens to the utterance. Error is empty for a transcript
// (an empty one for silence), or one of ErrorAbandoned, ErrorTooLong and
// ErrorDecodeFailed.
//
// Abandon means two things, told apart by what arrived since the last End:
//
//   - With an Audio, Prompt or Context frame since the last End (an
//     utterance being sent), Abandon discards them; no result is owed for
//     them, as they were never ended.
//   - With nothing since the last End, Abandon abandons the utterance that
//     End ended, N. If N is still queued it is never decoded; if it is being
//     decoded the decoder stops whisper at its next check (within one graph
//     node, milliseconds) and frees itself for the next utterance. Either
//     way N's one Result says {"utt":N,"error":"abandoned",...}. If N's
//     result was already written, the Abandon changes nothing; a second
//     Abandon does not reach back to N-1.
//
// A supervisor that gives up on utterance N therefore writes Abandon right
// after N's End (or later, with nothing in between), and waits for N's
// result, normal or abandoned, before it counts the decoder free.
package frame

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/yazses/yazses/lib/pcm"
)

// Frame types.
const (
	Audio   byte = 'A' // payload: s16le PCM, even length
	End     byte = 'E' // end of utterance, empty payload
	Abandon byte = 'X' // abandon the utterance, empty payload
	Prompt  byte = 'P' // vocabulary hint for the current utterance, UTF-8
	Context byte = 'C' // text said just before the current utterance, UTF-8
)

// MaxPrompt is the largest payload of a Prompt or Context frame.
const MaxPrompt = 4096

// MaxPayload is the largest payload a frame may declare. A larger declared
// length is an error; the Writer splits audio so it never writes one.
const MaxPayload = 1 << 20

// HeaderSize is the size of a frame header: the type byte and the length.
const HeaderSize = 5

// Errors of a malformed stream. The Reader wraps them; test with errors.Is.
var (
	ErrTooLarge = errors.New("frame payload larger than MaxPayload")
	ErrBadType  = errors.New("unknown frame type")
	ErrOddAudio = errors.New("audio frame with an odd number of bytes")
	// ErrControlPayload reports an End or Abandon frame with a payload.
	ErrControlPayload = errors.New("control frame with a payload")
)

// Frame is one frame of the stream.
type Frame struct {
	Type    byte
	Payload []byte
}

// Samples appends the payload of an Audio frame, decoded as s16le samples, to
// dst.
func (f Frame) Samples(dst []int16) []int16 { return pcm.Decode(dst, f.Payload) }

// check reports whether a frame of type t with a payload of n bytes is valid.
func check(t byte, n uint64) error {
	switch t {
	case Audio:
		if n > MaxPayload {
			return fmt.Errorf("%w: %d bytes", ErrTooLarge, n)
		}
		if n%2 != 0 {
			return ErrOddAudio
		}
	case End, Abandon:
		if n != 0 {
			return fmt.Errorf("%w: %d bytes", ErrControlPayload, n)
		}
	case Prompt, Context:
		if n > MaxPrompt {
			return fmt.Errorf("%w: %c frame of %d bytes", ErrTooLarge, t, n)
		}
	default:
		return fmt.Errorf("%w 0x%02x", ErrBadType, t)
	}
	return nil
}

// readChunk is how much of a payload the Reader reads before it grows its
// buffer again, so that a declared length costs memory only as its bytes
// arrive.
const readChunk = 64 << 10

// Reader reads frames. It does not buffer beyond the frame it reads; wrap a
// slow source in a bufio.Reader if syscalls matter.
type Reader struct {
	r   io.Reader
	hdr [HeaderSize]byte
	buf []byte
	err error
}

// NewReader returns a Reader on r.
func NewReader(r io.Reader) *Reader { return &Reader{r: r} }

// Next reads the next frame. It returns io.EOF only when the stream ends at a
// frame boundary and io.ErrUnexpectedEOF when it ends inside a frame; a
// malformed frame gives an error wrapping ErrBadType, ErrTooLarge, ErrOddAudio
// or ErrControlPayload. The type and length are checked before any payload is
// read, and the Reader never allocates more than MaxPayload bytes. Errors are
// final: after one, Next returns it again. The payload buffer is reused by the
// next call.
func (r *Reader) Next() (Frame, error) {
	if r.err != nil {
		return Frame{}, r.err
	}
	f, err := r.next()
	if err != nil {
		r.err = err
		return Frame{}, err
	}
	return f, nil
}

func (r *Reader) next() (Frame, error) {
	if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
		if err == io.EOF {
			return Frame{}, io.EOF
		}
		return Frame{}, fmt.Errorf("read frame header: %w", err)
	}
	t := r.hdr[0]
	n := binary.LittleEndian.Uint32(r.hdr[1:])
	if err := check(t, uint64(n)); err != nil {
		return Frame{}, fmt.Errorf("read frame: %w", err)
	}
	size := int(n)
	r.buf = r.buf[:0]
	for len(r.buf) < size {
		step := min(size-len(r.buf), max(len(r.buf), readChunk))
		if cap(r.buf)-len(r.buf) < step {
			grown := make([]byte, len(r.buf), len(r.buf)+step)
			copy(grown, r.buf)
			r.buf = grown
		}
		start := len(r.buf)
		r.buf = r.buf[:start+step]
		if _, err := io.ReadFull(r.r, r.buf[start:]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return Frame{}, fmt.Errorf("read frame payload: %w", err)
		}
	}
	return Frame{Type: t, Payload: r.buf}, nil
}

// Writer writes frames. Each frame goes to the underlying writer in a single
// Write call, so a writer that fails does so between frames unless the
// underlying writer itself writes short.
type Writer struct {
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// maxSamples is the most samples one Audio frame carries.
const maxSamples = MaxPayload / pcm.FrameBytes

// Audio writes samples as Audio frames of at most MaxPayload bytes each. No
// samples writes nothing.
func (w *Writer) Audio(samples []int16) error {
	for len(samples) > 0 {
		n := min(len(samples), maxSamples)
		w.buf = append(w.buf[:0], Audio, 0, 0, 0, 0)
		binary.LittleEndian.PutUint32(w.buf[1:], uint32(n*pcm.FrameBytes))
		w.buf = pcm.Encode(w.buf, samples[:n])
		if err := w.flush(); err != nil {
			return fmt.Errorf("write audio frame: %w", err)
		}
		samples = samples[n:]
	}
	return nil
}

// End writes an End frame.
func (w *Writer) End() error {
	if err := w.WriteFrame(Frame{Type: End}); err != nil {
		return fmt.Errorf("write end frame: %w", err)
	}
	return nil
}

// Prompt writes a Prompt frame: text is the vocabulary hint of the
// utterance being sent.
func (w *Writer) Prompt(text string) error {
	if err := w.WriteFrame(Frame{Type: Prompt, Payload: []byte(text)}); err != nil {
		return fmt.Errorf("write prompt frame: %w", err)
	}
	return nil
}

// Context writes a Context frame: text is what was said just before the
// utterance being sent.
func (w *Writer) Context(text string) error {
	if err := w.WriteFrame(Frame{Type: Context, Payload: []byte(text)}); err != nil {
		return fmt.Errorf("write context frame: %w", err)
	}
	return nil
}

// Abandon writes an Abandon frame.
func (w *Writer) Abandon() error {
	if err := w.WriteFrame(Frame{Type: Abandon}); err != nil {
		return fmt.Errorf("write abandon frame: %w", err)
	}
	return nil
}

// WriteFrame writes f as it is, after the same checks the Reader makes: an
// Audio frame of any even length up to MaxPayload (including empty), or an
// End or Abandon frame without payload.
func (w *Writer) WriteFrame(f Frame) error {
	if err := check(f.Type, uint64(len(f.Payload))); err != nil {
		return err
	}
	w.buf = append(w.buf[:0], f.Type, 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(w.buf[1:], uint32(len(f.Payload)))
	w.buf = append(w.buf, f.Payload...)
	return w.flush()
}

func (w *Writer) flush() error {
	n, err := w.w.Write(w.buf)
	if err != nil {
		return err
	}
	if n != len(w.buf) {
		return io.ErrShortWrite
	}
	return nil
}

// Segment is one timed piece of a transcript, in milliseconds from the start
// of the utterance.
type Segment struct {
	StartMs int64  `json:"start_ms"`
	EndMs   int64  `json:"end_ms"`
	Text    string `json:"text"`
}

// Error codes of a Result: short, fixed words, never transcript text.
const (
	// ErrorAbandoned: an Abandon frame abandoned the utterance after its
	// End, before or while it was decoded.
	ErrorAbandoned = "abandoned"
	// ErrorTooLong: the utterance held more audio than the decoder takes.
	ErrorTooLong = "too_long"
	// ErrorDecodeFailed: whisper failed on the utterance.
	ErrorDecodeFailed = "decode_failed"
)

// Result is the decoder's answer to one ended utterance: one JSON object on
// one line of stdout. Utt numbers the utterance in the order its End frame
// arrived.
type Result struct {
	Utt      int       `json:"utt"`
	Text     string    `json:"text"`
	Segments []Segment `json:"segments"`
	AudioMs  int64     `json:"audio_ms"`
	DecodeMs int64     `json:"decode_ms"`
	Error    string    `json:"error,omitempty"` // one of the Error codes, never transcript text
}
