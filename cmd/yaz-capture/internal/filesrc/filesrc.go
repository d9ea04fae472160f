// Package filesrc is yaz-capture's --file source: it loads a WAV or raw PCM
// file and hands its samples out in real time, in small chunks, the way a
// microphone would.
package filesrc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/wav"
)

// MaxDuration is the longest file Load accepts.
const MaxDuration = time.Hour

// Chunk is the pacing interval and the largest piece handed out at once.
const Chunk = 40 * time.Millisecond

// rawExts are the extensions of headerless s16le 16 kHz mono files.
var rawExts = []string{".pcm", ".raw", ".s16", ".s16le"}

// Load reads path as 16 kHz mono s16 samples. A RIFF/WAVE file may have any
// encoding, rate or channel count lib/wav reads (it is converted); a file
// named *.pcm, *.raw or *.s16 is taken as raw wire-format PCM.
func Load(path string) ([]int16, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, errors.Unwrap(err))
	}
	head := make([]byte, 12)
	n, _ := io.ReadFull(f, head)
	f.Close()
	maxSamples := pcm.Samples(MaxDuration)
	if wav.IsWAV(head[:n]) {
		fs, _, err := wav.ReadFile16k(path, maxSamples)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, stripPath(err, path))
		}
		return pcm.FromFloat32(make([]int16, 0, len(fs)), fs), nil
	}
	ext := strings.ToLower(filepath.Ext(path))
	for _, e := range rawExts {
		if ext == e {
			return loadRaw(path, maxSamples)
		}
	}
	return nil, fmt.Errorf("read %s: not a WAV file (raw s16le 16 kHz mono files must be named *.pcm or *.raw)", path)
}

func stripPath(err error, path string) error {
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return pe.Err
	}
	return err
}

func loadRaw(path string, maxSamples int) ([]int16, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, errors.Unwrap(err))
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("read %s: not a regular file", path)
	}
	if st.Size() > int64(maxSamples)*pcm.FrameBytes {
		return nil, fmt.Errorf("read %s: longer than %v", path, MaxDuration)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, errors.Unwrap(err))
	}
	if len(b)%pcm.FrameBytes != 0 {
		return nil, fmt.Errorf("read %s: %w", path, pcm.ErrOddLength)
	}
	return pcm.Decode(make([]int16, 0, len(b)/2), b), nil
}

// clock is what pace needs of time; tests replace it.
type clock struct {
	now  func() time.Time
	tick func(time.Duration) (<-chan time.Time, func())
}

func realTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// Pace hands samples to emit in real time: at every tick of Chunk, all
// audio whose playing time has passed since the start and was not handed
// out yet, in pieces of at most Chunk. It never runs ahead of the clock; a
// late tick (a slow consumer) is made up at the next one, so the total pace
// stays exact. It returns nil when the samples are all out or ctx is done.
func Pace(ctx context.Context, samples []int16, emit func([]int16)) error {
	return pace(ctx, samples, Chunk, clock{now: time.Now, tick: realTicker}, emit)
}

func pace(ctx context.Context, samples []int16, chunk time.Duration, c clock, emit func([]int16)) error {
	per := pcm.Samples(chunk)
	ticks, stop := c.tick(chunk)
	defer stop()
	start := c.now()
	sent := 0
	for sent < len(samples) {
		select {
		case <-ctx.Done():
			return nil
		case <-ticks:
		}
		due := min(pcm.Samples(c.now().Sub(start)), len(samples))
		for sent < due {
			if ctx.Err() != nil {
				return nil
			}
			n := min(due-sent, per)
			emit(samples[sent : sent+n])
			sent += n
		}
	}
	return nil
}
