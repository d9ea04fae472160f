package stream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"testing"

	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/wav"
)

// wavAt is a mono s16 WAV file at rate holding samples.
func wavAt(rate int, samples []int16) []byte {
	var b bytes.Buffer
	w := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	w(uint32(36 + 2*len(samples)))
	b.WriteString("WAVEfmt ")
	w([]uint32{16})
	w([]uint16{1, 1})
	w([]uint32{uint32(rate), uint32(2 * rate)})
	w([]uint16{2, 16})
	b.WriteString("data")
	w(uint32(2 * len(samples)))
	w(samples)
	return b.Bytes()
}

// chunky hands out at most n bytes a Read, as a pipe does.
type chunky struct {
	r io.Reader
	n int
}

func (c chunky) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// TestSourceResamplesAsOne: a WAV stream on stdin at any rate gives, block
// by block, exactly the samples of resampling the whole signal at once
// (wav.ReadAll16k, pcm.Resample's filter): as many of them, and none
// different at the joins of the blocks it reads (a block resampled on its
// own is filtered as if the signal stopped at its edges: a click at every
// join, and at 11025 Hz a sample lost every 100 ms).
func TestSourceResamplesAsOne(t *testing.T) {
	for _, rate := range []int{8000, 11025, 16000, 22050, 44100, 48000} {
		in := make([]int16, rate*3/2+7) // 1.5 s of a 440 Hz tone
		for i := range in {
			in[i] = int16(12000 * math.Sin(2*math.Pi*440*float64(i)/float64(rate)))
		}
		file := wavAt(rate, in)
		whole, _, err := wav.ReadAll16k(bytes.NewReader(file), 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		want := pcm.FromFloat32(nil, whole)
		src, err := newSource(chunky{bytes.NewReader(file), 777})
		if err != nil {
			t.Fatalf("%d Hz: newSource = %v", rate, err)
		}
		var got []int16
		for {
			s, err := src.read()
			got = append(got, s...)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%d Hz: read = %v", rate, err)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%d Hz: %d samples at 16 kHz, want %d", rate, len(got), len(want))
		}
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Errorf("%d Hz: sample %d (%.1f ms) = %d, want %d", rate, i, float64(i)/16, got[i], want[i])
				break
			}
		}
	}
}
