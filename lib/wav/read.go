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

// ReadAll16k reads a whole WAV stream, mixes it to mono and resamples it to
// 16 kHz (pcm.SampleRate) with pcm.Resample. It refuses more than maxSamples
// output samples with ErrTooLarge; that is checked as the stream is read, so
// memory stays bounded by maxSamples (times the rate ratio) whatever the
// header declares.
//
// A stream that ends before its declared data size returns the samples read
// up to that point together with an error wrapping ErrTruncated.
func ReadAll16k(r io.Reader, maxSamples int) ([]float32, Info, error) {
	if maxSamples < 0 {
		return nil, Info{}, fmt.Errorf("read wav: negative sample limit %d", maxSamples)
	}
	wr, err := NewReader(r)
	if err != nil {
		return nil, Info{}, err
	}
	info := wr.Info()
	limit := sourceLimit(maxSamples, info.SampleRate)
	var src []float32
	if info.DataBytes > 0 {
		// One more than declared, so that reaching the end needs no growth.
		src = make([]float32, 0, min(info.DataBytes/int64(wr.frame)+1, limit+1, maxPrealloc))
	}
	for {
		if cap(src) == len(src) {
			src = slices.Grow(src, 4096)
		}
		room := min(int64(cap(src)-len(src)), limit+1-int64(len(src)))
		n, err := wr.ReadMono(src[len(src) : len(src)+int(room)])
		src = src[:len(src)+n]
		if int64(len(src)) > limit {
			return nil, info, fmt.Errorf("read wav: %w: more than %d samples at %d Hz", ErrTooLarge, maxSamples, pcm.SampleRate)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return to16k(src, info.SampleRate, maxSamples), info, err
		}
	}
	return to16k(src, info.SampleRate, maxSamples), info, nil
}

// sourceLimit is the largest number of source frames at rate whose 16 kHz
// resampling has at most maxSamples samples: the largest n with
// floor(n*16000/rate) <= maxSamples.
func sourceLimit(maxSamples, rate int) int64 {
	m := min(int64(maxSamples), 1<<40)
	return ((m+1)*int64(rate) - 1) / pcm.SampleRate
}

func to16k(src []float32, rate, maxSamples int) []float32 {
	if rate == pcm.SampleRate {
		return src
	}
	out := pcm.Resample(src, rate, pcm.SampleRate)
	if len(out) > maxSamples {
		// Only a rounding difference between sourceLimit and Resample.
		out = out[:maxSamples]
	}
	return out
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
	st, err := os.Stat(path)
	if err != nil {
		return nil, Info{}, fmt.Errorf("read wav file: %w", err)
	}
	if err := regular(st); err != nil {
		return nil, Info{}, err
	}
	f, err := openNoBlock(path)
	if err != nil {
		return nil, Info{}, fmt.Errorf("read wav file: %w", err)
	}
	defer f.Close()
	st, err = f.Stat()
	if err != nil {
		return nil, Info{}, fmt.Errorf("read wav file: %w", err)
	}
	if err := regular(st); err != nil {
		return nil, Info{}, err
	}
	return ReadAll16k(bufio.NewReaderSize(f, 256<<10), maxSamples)
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
