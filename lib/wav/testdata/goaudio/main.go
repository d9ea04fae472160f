// Command wavgen writes the go-audio fixtures of lib/wav/testdata.
package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"

	"github.com/go-audio/audio"
	"github.com/go-audio/wav"
)

func content(n int) []int16 {
	rng := rand.New(rand.NewPCG(1, 2))
	s := make([]int16, n)
	for i := range s {
		t := float64(i) / 16000
		v := 0.5*math.Sin(2*math.Pi*440*t) + 0.3*math.Sin(2*math.Pi*1234*t) + 0.1*(rng.Float64()*2-1)
		s[i] = int16(v * 32767)
	}
	if n > 2 {
		s[1], s[2] = 32767, -32768
	}
	return s
}

func main() {
	src := content(1000)
	for _, tc := range []struct {
		bits, channels int
		meta           bool
	}{{8, 1, false}, {16, 1, false}, {16, 2, true}, {24, 1, true}, {32, 3, false}} {
		name := fmt.Sprintf("%s/goaudio-s%d-%dch.wav", os.Args[1], tc.bits, tc.channels)
		f, err := os.Create(name)
		if err != nil {
			panic(err)
		}
		enc := wav.NewEncoder(f, 16000, tc.bits, tc.channels, 1)
		if tc.meta {
			enc.Metadata = &wav.Metadata{Comments: "a comment", Artist: "odd"}
		}
		var data []int
		for _, s := range src {
			v := int(s)
			switch tc.bits {
			case 8:
				v = int(s>>8) + 128
			case 24:
				v <<= 8
			case 32:
				v <<= 16
			}
			for range tc.channels {
				data = append(data, v)
			}
		}
		buf := &audio.IntBuffer{Data: data, Format: &audio.Format{NumChannels: tc.channels, SampleRate: 16000}, SourceBitDepth: tc.bits}
		if err := enc.Write(buf); err != nil {
			panic(err)
		}
		if err := enc.Close(); err != nil {
			panic(err)
		}
		f.Close()
	}
}
