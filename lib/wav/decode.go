package wav

import (
	"encoding/binary"
	"math"
)

// The decoders fill dst with one mono sample per frame of b, the average of
// the frame's ch channels. Integer samples are scaled by their full scale
// (s / 2^(bits-1)), the convention of whisper.cpp's own reader and of
// pcm.ToFloat32; float samples are clamped to [-1, 1], NaN becomes 0.

func decodeU8(dst []float32, b []byte, ch int) {
	if ch == 1 {
		for i := range dst {
			dst[i] = float32(int(b[i])-128) / 128
		}
		return
	}
	scale := 1 / (128 * float32(ch))
	for i := range dst {
		f := b[i*ch : i*ch+ch]
		s := 0
		for _, v := range f {
			s += int(v) - 128
		}
		dst[i] = float32(s) * scale
	}
}

func decodeS16(dst []float32, b []byte, ch int) {
	le := binary.LittleEndian
	if ch == 1 {
		for i := range dst {
			dst[i] = float32(int16(le.Uint16(b[2*i:]))) / 32768
		}
		return
	}
	scale := 1 / (32768 * float32(ch))
	for i := range dst {
		f := b[2*ch*i : 2*ch*(i+1)]
		s := 0
		for c := 0; c < len(f); c += 2 {
			s += int(int16(le.Uint16(f[c:])))
		}
		dst[i] = float32(s) * scale
	}
}

func decodeS24(dst []float32, b []byte, ch int) {
	scale := 1 / (8388608 * float64(ch))
	for i := range dst {
		f := b[3*ch*i : 3*ch*(i+1)]
		s := 0
		for c := 0; c < len(f); c += 3 {
			// Sign-extend through the top of an int32.
			s += int(int32(uint32(f[c])<<8|uint32(f[c+1])<<16|uint32(f[c+2])<<24) >> 8)
		}
		dst[i] = float32(float64(s) * scale)
	}
}

func decodeS32(dst []float32, b []byte, ch int) {
	le := binary.LittleEndian
	scale := 1 / (2147483648 * float64(ch))
	for i := range dst {
		f := b[4*ch*i : 4*ch*(i+1)]
		s := 0
		for c := 0; c < len(f); c += 4 {
			s += int(int32(le.Uint32(f[c:])))
		}
		dst[i] = float32(float64(s) * scale)
	}
}

func decodeF32(dst []float32, b []byte, ch int) {
	le := binary.LittleEndian
	if ch == 1 {
		for i := range dst {
			dst[i] = clamp(float64(math.Float32frombits(le.Uint32(b[4*i:]))))
		}
		return
	}
	for i := range dst {
		f := b[4*ch*i : 4*ch*(i+1)]
		var s float64
		for c := 0; c < len(f); c += 4 {
			s += float64(math.Float32frombits(le.Uint32(f[c:])))
		}
		dst[i] = clamp(s / float64(ch))
	}
}

func decodeF64(dst []float32, b []byte, ch int) {
	le := binary.LittleEndian
	for i := range dst {
		f := b[8*ch*i : 8*ch*(i+1)]
		var s float64
		for c := 0; c < len(f); c += 8 {
			s += math.Float64frombits(le.Uint64(f[c:]))
		}
		dst[i] = clamp(s / float64(ch))
	}
}

// clamp limits a float sample to [-1, 1]; NaN becomes silence.
func clamp(v float64) float32 {
	switch {
	case v >= 1:
		return 1
	case v <= -1:
		return -1
	case v == v:
		return float32(v)
	}
	return 0
}
