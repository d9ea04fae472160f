package wav

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
)

// A small WAV writer for fixtures go-audio cannot write (float, extensible,
// RF64, extra chunks, streaming sizes).

type chunk struct {
	id   string
	body []byte
}

// Data size modes.
const (
	sizeExact  = iota
	sizeStream // 0xFFFFFFFF
	sizeZero
	sizeEspeak // 0x7FFFF000 rounded down to whole frames, as espeak-ng and sox write
)

type layout struct {
	name      string
	tag       int // fmt tag: 1, 3 or 0xFFFE
	sub       int // sub-format of an extensible fmt
	bits      int
	validBits int // extensible only; 0 means bits
	channels  int
	rate      int
	cbSize    bool // write an 18-byte fmt chunk (cbSize 0) for a plain tag
	fmtPad    int  // extra bytes after the fmt fields
	before    []chunk
	after     []chunk
	size      int
	rf64      bool
}

func (l layout) format() int {
	if l.tag == 0xFFFE {
		return l.sub
	}
	return l.tag
}

func (l layout) frameBytes() int { return l.channels * l.bits / 8 }

// fmtBody is the fmt chunk of l.
func (l layout) fmtBody() []byte {
	le := binary.LittleEndian
	b := le.AppendUint16(nil, uint16(l.tag))
	b = le.AppendUint16(b, uint16(l.channels))
	b = le.AppendUint32(b, uint32(l.rate))
	b = le.AppendUint32(b, uint32(l.rate*l.frameBytes()))
	b = le.AppendUint16(b, uint16(l.frameBytes()))
	b = le.AppendUint16(b, uint16(l.bits))
	switch {
	case l.tag == 0xFFFE:
		valid := l.validBits
		if valid == 0 {
			valid = l.bits
		}
		b = le.AppendUint16(b, 22)
		b = le.AppendUint16(b, uint16(valid))
		b = le.AppendUint32(b, 0) // channel mask
		b = le.AppendUint16(b, uint16(l.sub))
		b = append(b, guidSuffix[:]...)
	case l.cbSize:
		b = le.AppendUint16(b, 0)
	}
	return append(b, make([]byte, l.fmtPad)...)
}

func appendChunk(b []byte, id string, size uint32, body []byte) []byte {
	b = append(b, id...)
	b = binary.LittleEndian.AppendUint32(b, size)
	b = append(b, body...)
	if len(body)%2 == 1 {
		b = append(b, 0)
	}
	return b
}

// build writes a whole WAV file of layout l around the sample bytes data.
func (l layout) build(data []byte) []byte {
	le := binary.LittleEndian
	var body []byte
	body = append(body, "WAVE"...)
	if l.rf64 {
		ds := le.AppendUint64(nil, 0)
		if l.size == sizeExact {
			ds = le.AppendUint64(ds, uint64(len(data)))
		} else {
			ds = le.AppendUint64(ds, 0)
		}
		ds = le.AppendUint64(ds, uint64(len(data)/max(1, l.frameBytes())))
		ds = le.AppendUint32(ds, 0)
		body = appendChunk(body, "ds64", uint32(len(ds)), ds)
	}
	for _, c := range l.before {
		body = appendChunk(body, c.id, uint32(len(c.body)), c.body)
	}
	f := l.fmtBody()
	body = appendChunk(body, "fmt ", uint32(len(f)), f)
	var size uint32
	switch l.size {
	case sizeExact:
		size = uint32(len(data))
		if l.rf64 {
			size = 0xFFFFFFFF
		}
	case sizeStream:
		size = 0xFFFFFFFF
	case sizeZero:
		size = 0
	case sizeEspeak:
		size = 0x7FFFF000 / uint32(l.frameBytes()) * uint32(l.frameBytes())
	}
	body = appendChunk(body, "data", size, data)
	for _, c := range l.after {
		body = appendChunk(body, c.id, uint32(len(c.body)), c.body)
	}
	magic, riff := "RIFF", uint32(len(body))
	if l.rf64 {
		magic, riff = "RF64", 0xFFFFFFFF
	}
	out := append([]byte(magic), le.AppendUint32(nil, riff)...)
	return append(out, body...)
}

// encode writes frames (one []float64 of channel values each, in [-1, 1))
// in the sample format of l.
func (l layout) encode(frames [][]float64) []byte {
	le := binary.LittleEndian
	var b []byte
	for _, fr := range frames {
		for _, v := range fr {
			switch {
			case l.format() == 3 && l.bits == 32:
				b = le.AppendUint32(b, math.Float32bits(float32(v)))
			case l.format() == 3 && l.bits == 64:
				b = le.AppendUint64(b, math.Float64bits(v))
			case l.bits == 8:
				b = append(b, byte(int(math.Floor(v*128))+128))
			case l.bits == 16:
				b = le.AppendUint16(b, uint16(int16(math.Floor(v*32768))))
			case l.bits == 24:
				s := uint32(int32(math.Floor(v * 8388608)))
				b = append(b, byte(s), byte(s>>8), byte(s>>16))
			case l.bits == 32:
				b = le.AppendUint32(b, uint32(int32(math.Floor(v*2147483648))))
			default:
				panic("encode: unsupported layout")
			}
		}
	}
	return b
}

// content is n samples of 16-bit mono test audio: two tones and some noise,
// with full-scale extremes included.
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

// monoFrames repeats each sample on every channel.
func monoFrames(s []int16, channels int) [][]float64 {
	fr := make([][]float64, len(s))
	for i, v := range s {
		fr[i] = make([]float64, channels)
		for c := range fr[i] {
			fr[i][c] = float64(v) / 32768
		}
	}
	return fr
}

// sine is n frames of a sine of freq Hz and amplitude amp at rate, the same on
// every channel.
func sine(n, rate, channels int, freq, amp float64) [][]float64 {
	fr := make([][]float64, n)
	for i := range fr {
		v := amp * math.Sin(2*math.Pi*freq*float64(i)/float64(rate))
		fr[i] = make([]float64, channels)
		for c := range fr[i] {
			fr[i][c] = v
		}
	}
	return fr
}

// zeroCrossings counts sign changes of s.
func zeroCrossings(s []float32) int {
	n := 0
	for i := 1; i < len(s); i++ {
		if (s[i-1] < 0) != (s[i] < 0) {
			n++
		}
	}
	return n
}
