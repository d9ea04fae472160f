package files

import (
	"fmt"

	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/wav"
)

// fileAudio is a WAV file's audio as 16 kHz mono float32 samples, read in
// blocks.
type fileAudio interface {
	// Read reads up to len(dst) samples; io.EOF at the end.
	Read(dst []float32) (int, error)
	Info() wav.Info
	// Short is how many bytes of its declared data the file lacked once
	// read to its end: 0 for a whole file (wav.Reader16k.ShortOK).
	Short() int64
	Close() error
}

// openFileAudio opens the WAV file at path as a stream of 16 kHz samples
// (wav.OpenFile16k: a regular file, opened non-blocking so that a FIFO
// swapped in cannot hang it; read, converted and resampled in blocks, so
// memory holds the blocks whatever the file's rate, width or length). More
// than maxSamples samples is an error wrapping wav.ErrTooLarge. A file cut
// short ends where its data does, as whisper-cli reads it (Short says so).
func openFileAudio(path string, maxSamples int) (fileAudio, error) {
	r, err := wav.OpenFile16k(path)
	if err != nil {
		return nil, err
	}
	r.ShortOK()
	return &capped{Reader16k: r, max: int64(maxSamples)}, nil
}

// capped refuses more than max samples.
type capped struct {
	*wav.Reader16k
	n, max int64
}

func (c *capped) Read(dst []float32) (int, error) {
	if room := c.max + 1 - c.n; int64(len(dst)) > room {
		dst = dst[:max(room, 0)]
	}
	n, err := c.Reader16k.Read(dst)
	c.n += int64(n)
	if c.n > c.max {
		return 0, fmt.Errorf("read wav: %w: more than %d samples at %d Hz", wav.ErrTooLarge, c.max, pcm.SampleRate)
	}
	return n, err
}
