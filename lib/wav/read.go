package wav

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"

	"github.com/yazses/yazses/lib/pcm"
)

// maxPrealloc bounds the samples allocated ahead from a declared data size.
const maxPrealloc = 1 << 18

// srcBlock is how many source frames Reader16k converts at a time: 64 KiB
// of float32 whatever the source's rate, width or channels.
const srcBlock = 16 << 10

// Reader16k reads a WAV stream as mono float32 samples at 16 kHz
// (pcm.SampleRate), in bounded blocks: it reads, mixes and resamples
// (pcm.Resampler, the same filter as pcm.Resample, to the bit) a block of
// source frames at a time, so its memory is a few hundred KiB whatever the
// source's rate, sample width, channel count or declared size, and a
// stream of any length can be converted piece by piece. It is not safe for
// concurrent use.
type Reader16k struct {
	wr  *Reader
	rs  *pcm.Resampler
	src []float32 // one block at the source rate
	out []float32 // converted samples not yet returned, from pos on
	pos int
	err error // the end of the source, returned once out is drained
	f   *os.File
	// direct: the source is at 16 kHz already; Read reads into dst.
	direct bool
	// shortOK: a stream cut short ends at io.EOF (ShortOK); short: the
	// bytes it lacked.
	shortOK bool
	short   int64
}

// NewReader16k reads the header of a WAV stream from r (see NewReader) and
// returns a Reader16k on its first sample.
func NewReader16k(r io.Reader) (*Reader16k, error) {
	wr, err := NewReader(r)
	if err != nil {
		return nil, err
	}
	if wr.Info().SampleRate == pcm.SampleRate {
		return &Reader16k{wr: wr, direct: true}, nil
	}
	return &Reader16k{wr: wr, rs: pcm.NewResampler(wr.Info().SampleRate, pcm.SampleRate), src: make([]float32, srcBlock)}, nil
}

// OpenFile16k opens the WAV file at path for reading with a Reader16k,
// with the checks of ReadFile16k: anything but a regular file is refused
// with ErrNotRegular before it is opened, and again on the opened
// descriptor. Close the Reader16k to close the file.
func OpenFile16k(path string) (*Reader16k, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read wav file: %w", err)
	}
	if err := regular(st); err != nil {
		return nil, err
	}
	f, err := openNoBlock(path)
	if err != nil {
		return nil, fmt.Errorf("read wav file: %w", err)
	}
	st, err = f.Stat()
	if err == nil {
		err = regular(st)
	} else {
		err = fmt.Errorf("read wav file: %w", err)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	r, err := NewReader16k(bufio.NewReaderSize(f, 256<<10))
	if err != nil {
		f.Close()
		return nil, err
	}
	r.f = f
	return r, nil
}

// Info describes the source stream (its own rate and channels).
func (r *Reader16k) Info() Info { return r.wr.Info() }

// ShortOK makes a stream that ends before its declared data size end as a
// complete one does, with io.EOF after its every sample, instead of with
// ErrTruncated: a file cut short (an interrupted download, a recorder that
// was killed) is then read as far as it goes, as whisper-cli reads one.
// Short says afterwards whether it was cut, for the caller to tell its
// user. A stream that ends inside its header is an error all the same
// (NewReader16k): there is no audio to read.
func (r *Reader16k) ShortOK() { r.shortOK = true }

// Short is how many bytes of its declared data size a stream read with
// ShortOK lacked when it ended; 0 for a complete stream (or one not read to
// its end yet).
func (r *Reader16k) Short() int64 { return r.short }

// end turns the end of a stream cut short into io.EOF under ShortOK.
func (r *Reader16k) end(err error) error {
	if r.shortOK && errors.Is(err, ErrTruncated) {
		r.short = max(r.wr.left, 1)
		return io.EOF
	}
	return err
}

// Read reads up to len(dst) samples at 16 kHz. At the end of the stream it
// returns io.EOF; a stream that ends before its declared size gives an
// error wrapping ErrTruncated, and a failing reader its error, each after
// every sample before that point. Like Reader.ReadMono it returns what it
// has rather than waiting to fill dst.
func (r *Reader16k) Read(dst []float32) (int, error) {
	if len(dst) == 0 {
		return 0, nil
	}
	if r.direct {
		n, err := r.wr.ReadMono(dst)
		return n, r.end(err)
	}
	for r.pos == len(r.out) {
		if r.err != nil {
			return 0, r.err
		}
		n, err := r.wr.ReadMono(r.src)
		r.out, r.pos = r.rs.Write(r.out[:0], r.src[:n]), 0
		if err != nil {
			r.out = r.rs.Flush(r.out) // the end of the signal: its last samples
			r.err = r.end(err)
		}
	}
	n := copy(dst, r.out[r.pos:])
	r.pos += n
	return n, nil
}

// Close closes the file of a Reader16k made by OpenFile16k; otherwise it
// does nothing.
func (r *Reader16k) Close() error {
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// ReadAll16k reads a whole WAV stream, mixes it to mono and resamples it to
// 16 kHz (pcm.SampleRate) with pcm.Resample's filter. It refuses more than
// maxSamples output samples with ErrTooLarge; that is checked as the
// stream is read, block by block (see Reader16k), so memory stays bounded
// by maxSamples at 16 kHz whatever the source's rate or what the header
// declares.
//
// A stream that ends before its declared data size returns the samples read
// up to that point together with an error wrapping ErrTruncated.
func ReadAll16k(r io.Reader, maxSamples int) ([]float32, Info, error) {
	if maxSamples < 0 {
		return nil, Info{}, fmt.Errorf("read wav: negative sample limit %d", maxSamples)
	}
	sr, err := NewReader16k(r)
	if err != nil {
		return nil, Info{}, err
	}
	return readAll(sr, maxSamples)
}

func readAll(sr *Reader16k, maxSamples int) ([]float32, Info, error) {
	info := sr.Info()
	var out []float32
	if info.DataBytes > 0 {
		frame := int64(info.Channels * info.BitsPerSample / 8)
		declared := info.DataBytes / frame * pcm.SampleRate / int64(info.SampleRate)
		// One more than declared, so that reaching the end needs no growth.
		n := min(declared+1, maxPrealloc)
		if int64(maxSamples) < n {
			n = int64(maxSamples) + 1
		}
		out = make([]float32, 0, n)
	}
	for {
		if cap(out) == len(out) {
			out = slices.Grow(out, 4096)
		}
		room := cap(out) - len(out)
		if left := maxSamples - len(out); left < room {
			room = left + 1 // one more shows that there are too many
		}
		n, err := sr.Read(out[len(out) : len(out)+room])
		out = out[:len(out)+n]
		if len(out) > maxSamples {
			return nil, info, fmt.Errorf("read wav: %w: more than %d samples at %d Hz", ErrTooLarge, maxSamples, pcm.SampleRate)
		}
		if err == io.EOF {
			return out, info, nil
		}
		if err != nil {
			return out, info, err
		}
	}
}

// ErrNotRegular reports a path that ReadFile16k refuses because it is not a
// regular file (a directory, FIFO, device or socket). It is not one of the
// format errors: the file's type is the problem, not its encoding.
var ErrNotRegular = errors.New("not a regular file")

// ReadFile16k reads the WAV file at path like ReadAll16k. It refuses anything
// that is not a regular file (directory, FIFO, device, socket) before opening
// it, and again on the opened descriptor, which is opened non-blocking so
// that a FIFO swapped in between cannot hang it. The file is read through a
// large buffer, as fast as reading it whole into memory, but never holding
// more of it than the sample limit allows.
//
// Errors of the file system are *fs.PathError values naming path; the others
// do not name it, so callers add it where they want it.
func ReadFile16k(path string, maxSamples int) ([]float32, Info, error) {
	if maxSamples < 0 {
		return nil, Info{}, fmt.Errorf("read wav: negative sample limit %d", maxSamples)
	}
	sr, err := OpenFile16k(path)
	if err != nil {
		return nil, Info{}, err
	}
	defer sr.Close()
	return readAll(sr, maxSamples)
}
func regular(st fs.FileInfo) error {
	m := st.Mode()
	if m.IsRegular() {
		return nil
	}
	kind := "special file"
	switch {
	case m.IsDir():
		kind = "directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "FIFO"
	case m&fs.ModeSocket != 0:
		kind = "socket"
	case m&fs.ModeCharDevice != 0:
		kind = "character device"
	case m&fs.ModeDevice != 0:
		kind = "block device"
	}
	return fmt.Errorf("read wav file: %w (%s)", ErrNotRegular, kind)
}
