package wav

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReadAll16k reads 11 s of audio (the length of whisper.cpp's
// jfk.wav): 16 kHz mono s16 from memory and from a file (no resampling), and
// 44.1 kHz stereo (mixing and resampling).
func BenchmarkReadAll16k(b *testing.B) {
	const seconds = 11
	mono := layout{tag: 1, bits: 16, channels: 1, rate: 16000}
	monoWAV := mono.build(mono.encode(monoFrames(content(seconds*16000), 1)))
	stereo := layout{tag: 1, bits: 16, channels: 2, rate: 44100}
	stereoWAV := stereo.build(stereo.encode(sine(seconds*44100, 44100, 2, 440, 0.5)))
	path := filepath.Join(b.TempDir(), "a.wav")
	if err := os.WriteFile(path, monoWAV, 0o600); err != nil {
		b.Fatal(err)
	}
	b.Run("16k-mono-memory", func(b *testing.B) {
		b.SetBytes(int64(len(monoWAV)))
		for b.Loop() {
			if _, _, err := ReadAll16k(bytes.NewReader(monoWAV), 1<<20); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("16k-mono-file", func(b *testing.B) {
		b.SetBytes(int64(len(monoWAV)))
		for b.Loop() {
			if _, _, err := ReadFile16k(path, 1<<20); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("44k-stereo-resample", func(b *testing.B) {
		b.SetBytes(int64(len(stereoWAV)))
		for b.Loop() {
			if _, _, err := ReadAll16k(bytes.NewReader(stereoWAV), 1<<20); err != nil {
				b.Fatal(err)
			}
		}
	})
}
