package decode

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/wav"
)

// fileAudio is a WAV file's audio as 16 kHz mono float32 samples, read in
// blocks.
type fileAudio interface {
	// Read reads up to len(dst) samples; io.EOF at the end.
	Read(dst []float32) (int, error)
	Info() wav.Info
	Close() error
}

// openFileAudio opens the WAV file at path with the checks of
// wav.ReadFile16k (a regular file, opened non-blocking so that a FIFO
// swapped in cannot hang it) and the same errors. A 16 kHz file is read as
// a stream: memory holds the blocks, whatever its length. A file at
// another rate is read whole and resampled by wav.ReadFile16k, as before:
// this base of lib/wav has no streaming resampler (wav.OpenFile16k, on its
// way, streams every rate and replaces this function). More than
// maxSamples samples is an error wrapping wav.ErrTooLarge.
func openFileAudio(path string, maxSamples int) (fileAudio, error) {
	if err := regularFile(os.Stat(path)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("read wav file: %w", err)
	}
	if err := regularFile(f.Stat()); err != nil {
		f.Close()
		return nil, err
	}
	wr, err := wav.NewReader(bufio.NewReaderSize(f, 256<<10))
	if err != nil {
		f.Close()
		return nil, err
	}
	if info := wr.Info(); info.SampleRate != pcm.SampleRate {
		f.Close()
		samples, info, err := wav.ReadFile16k(path, maxSamples)
		if err != nil {
			return nil, err
		}
		return &memAudio{samples: samples, info: info}, nil
	}
	return &streamAudio{f: f, r: wr, max: int64(maxSamples)}, nil
}

func regularFile(st fs.FileInfo, err error) error {
	if err != nil {
		return fmt.Errorf("read wav file: %w", err)
	}
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
	return fmt.Errorf("read wav file: %w (%s)", wav.ErrNotRegular, kind)
}

// streamAudio reads a 16 kHz WAV file block by block.
type streamAudio struct {
	f   *os.File
	r   *wav.Reader
	n   int64
	max int64
}

func (s *streamAudio) Read(dst []float32) (int, error) {
	if room := s.max + 1 - s.n; int64(len(dst)) > room {
		dst = dst[:max(room, 0)]
	}
	n, err := s.r.ReadMono(dst)
	s.n += int64(n)
	if s.n > s.max {
		return 0, fmt.Errorf("read wav: %w: more than %d samples at %d Hz", wav.ErrTooLarge, s.max, pcm.SampleRate)
	}
	return n, err
}

func (s *streamAudio) Info() wav.Info { return s.r.Info() }
func (s *streamAudio) Close() error   { return s.f.Close() }

// memAudio serves samples already in memory.
type memAudio struct {
	samples []float32
	info    wav.Info
}

func (m *memAudio) Read(dst []float32) (int, error) {
	if len(m.samples) == 0 {
		return 0, io.EOF
	}
	n := copy(dst, m.samples)
	m.samples = m.samples[n:]
	return n, nil
}

func (m *memAudio) Info() wav.Info { return m.info }
func (m *memAudio) Close() error   { return nil }
