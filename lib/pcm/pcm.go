// Package pcm is the audio wire format shared by every YazSes binary.
//
// On every pipe between YazSes programs, audio is raw PCM: signed 16-bit
// little-endian samples, 16 000 Hz, one channel (mono), with no header. One
// sample is one frame; a frame is FrameBytes (2) bytes long, and writers only
// ever write whole frames. `--format wav` on a producer adds a RIFF/WAV header
// for files and other tools; consumers that read stdin detect such a header and
// skip it.
//
// The package converts between that format and the float32 samples in
// [-1, 1] that whisper.cpp takes, and writes the streaming WAV header.
package pcm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

const (
	// SampleRate is the one sample rate on YazSes pipes, in Hz.
	SampleRate = 16000
	// Channels is the one channel count on YazSes pipes.
	Channels = 1
	// BitDepth is the sample size in bits.
	BitDepth = 16
	// FrameBytes is the size of one frame (one sample of one channel).
	FrameBytes = 2
	// BytesPerSecond is the data rate of the wire format.
	BytesPerSecond = SampleRate * FrameBytes
)

// Duration returns the playing time of n samples.
func Duration(samples int) time.Duration {
	return time.Duration(samples) * time.Second / SampleRate
}

// Samples returns how many samples cover d, rounded down.
func Samples(d time.Duration) int {
	return int(d * SampleRate / time.Second)
}

// Millis returns the position of sample n in milliseconds.
func Millis(n int) int64 {
	return int64(n) * 1000 / SampleRate
}

// Decode converts little-endian s16 bytes to int16 samples. A trailing odd
// byte is ignored; callers keep it for the next read.
func Decode(dst []int16, b []byte) []int16 {
	for i := 0; i+1 < len(b); i += 2 {
		dst = append(dst, int16(binary.LittleEndian.Uint16(b[i:])))
	}
	return dst
}

// Encode appends the little-endian bytes of samples to dst.
func Encode(dst []byte, samples []int16) []byte {
	for _, s := range samples {
		dst = binary.LittleEndian.AppendUint16(dst, uint16(s))
	}
	return dst
}

// ToFloat32 converts s16 samples to float32 in [-1, 1), the scale whisper.cpp
// expects (the same as whisper.cpp's own WAV reader: s / 32768).
func ToFloat32(dst []float32, samples []int16) []float32 {
	for _, s := range samples {
		dst = append(dst, float32(s)/32768)
	}
	return dst
}

// FromFloat32 converts float samples in [-1, 1] to s16, clipping.
func FromFloat32(dst []int16, samples []float32) []int16 {
	for _, f := range samples {
		v := f * 32768
		switch {
		case v >= 32767:
			dst = append(dst, 32767)
		case v <= -32768:
			dst = append(dst, -32768)
		default:
			dst = append(dst, int16(v))
		}
	}
	return dst
}

// StreamWAVHeader is the 44-byte header of a 16 kHz mono s16 WAV stream whose
// length is not known in advance: both RIFF and data sizes are 0xFFFFFFFF, the
// convention sox and ffmpeg use for pipes. Use WAVHeader when the length is
// known.
func StreamWAVHeader() []byte { return wavHeader(0xFFFFFFFF) }

// WAVHeader is the 44-byte header for dataBytes bytes of wire-format PCM.
func WAVHeader(dataBytes int64) []byte {
	if dataBytes < 0 || dataBytes > 0xFFFFFFFF-36 {
		return wavHeader(0xFFFFFFFF)
	}
	return wavHeader(uint32(dataBytes))
}

func wavHeader(data uint32) []byte {
	riff := data
	if data != 0xFFFFFFFF {
		riff = data + 36
	}
	h := make([]byte, 0, 44)
	h = append(h, "RIFF"...)
	h = binary.LittleEndian.AppendUint32(h, riff)
	h = append(h, "WAVEfmt "...)
	h = binary.LittleEndian.AppendUint32(h, 16)
	h = binary.LittleEndian.AppendUint16(h, 1) // PCM
	h = binary.LittleEndian.AppendUint16(h, Channels)
	h = binary.LittleEndian.AppendUint32(h, SampleRate)
	h = binary.LittleEndian.AppendUint32(h, BytesPerSecond)
	h = binary.LittleEndian.AppendUint16(h, FrameBytes)
	h = binary.LittleEndian.AppendUint16(h, BitDepth)
	h = append(h, "data"...)
	h = binary.LittleEndian.AppendUint32(h, data)
	return h
}

// FrameWriter writes samples as whole frames. It never leaves half a frame on
// its writer, so a consumer killed or closed mid-stream sees only whole
// samples.
type FrameWriter struct {
	w   io.Writer
	buf []byte
	n   int64 // samples written
}

// NewFrameWriter returns a FrameWriter on w.
func NewFrameWriter(w io.Writer) *FrameWriter { return &FrameWriter{w: w} }

// Write writes samples. On a short write it reports io.ErrShortWrite.
func (f *FrameWriter) Write(samples []int16) error {
	f.buf = Encode(f.buf[:0], samples)
	n, err := f.w.Write(f.buf)
	f.n += int64(n / FrameBytes)
	if err != nil {
		return fmt.Errorf("write pcm: %w", err)
	}
	if n != len(f.buf) {
		return fmt.Errorf("write pcm: %w", io.ErrShortWrite)
	}
	return nil
}

// Samples is how many samples have been written.
func (f *FrameWriter) Samples() int64 { return f.n }

// ErrOddLength reports a stream that ended in the middle of a frame.
var ErrOddLength = errors.New("pcm stream ended in the middle of a sample")
