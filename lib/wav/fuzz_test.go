package wav

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/lib/pcm"
)

// FuzzWAVHeader feeds arbitrary bytes to the reader: it never panics, every
// error is one line wrapping a sentinel, Info stays within the documented
// limits, samples stay in [-1, 1], and a header written by lib/pcm around
// samples made from the input reads back the same samples.
func FuzzWAVHeader(f *testing.F) {
	for _, l := range layouts {
		f.Add(l.build(l.encode(monoFrames(content(5), l.channels))))
	}
	f.Add(append(pcm.WAVHeader(6), 1, 2, 3, 4, 5, 6))
	f.Add(append(pcm.StreamWAVHeader(), 1, 2, 3))
	for _, name := range []string{"espeak-hi.wav", "sox-pipe-s24-44k-stereo.wav", "goaudio-s16-2ch.wav"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 120)])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkStream(t, b)
		roundTrip(t, b)
	})
}

func checkStream(t *testing.T, b []byte) {
	r, err := NewReader(bytes.NewReader(b))
	if err != nil {
		checkErr(t, err)
		return
	}
	info := r.Info()
	switch {
	case info.Format != 1 && info.Format != 3,
		info.Channels < 1 || info.Channels > maxChannels,
		info.SampleRate < minRate || info.SampleRate > maxRate,
		info.DataBytes < -1 || info.DataBytes > maxDataBytes:
		t.Fatalf("Info out of range: %+v", info)
	}
	if !map[int]bool{8: true, 16: true, 24: true, 32: true, 64: true}[info.BitsPerSample] {
		t.Fatalf("Info.BitsPerSample = %d", info.BitsPerSample)
	}
	frame := info.Channels * info.BitsPerSample / 8
	buf := make([]float32, 7)
	total := 0
	for {
		n, err := r.ReadMono(buf)
		for _, v := range buf[:n] {
			if !(v >= -1 && v <= 1) {
				t.Fatalf("sample %v outside [-1, 1]", v)
			}
		}
		total += n
		if err == io.EOF {
			break
		}
		if err != nil {
			checkErr(t, err)
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("ReadMono error %v, want only ErrTruncated from a byte slice", err)
			}
			break
		}
		if n == 0 {
			t.Fatal("ReadMono returned 0, nil")
		}
	}
	if total*frame > len(b) {
		t.Fatalf("%d frames of %d bytes from %d input bytes", total, frame, len(b))
	}
	const maxOut = 1 << 14
	out, _, err := ReadAll16k(bytes.NewReader(b), maxOut)
	if err != nil {
		checkErr(t, err)
	}
	if len(out) > maxOut {
		t.Fatalf("ReadAll16k returned %d samples, limit %d", len(out), maxOut)
	}
}

func checkErr(t *testing.T, err error) {
	t.Helper()
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error of more than one line: %q", err)
	}
	for _, s := range []error{ErrNotWAV, ErrUnsupported, ErrTruncated, ErrTooLarge} {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("error %v wraps no sentinel", err)
}

// roundTrip reads the input's bytes as s16 samples behind lib/pcm's headers.
func roundTrip(t *testing.T, b []byte) {
	s := pcm.Decode(nil, b)
	want := pcm.ToFloat32(nil, s)
	body := pcm.Encode(nil, s)
	for _, h := range [][]byte{pcm.WAVHeader(int64(len(body))), pcm.StreamWAVHeader()} {
		got, info, err := ReadAll16k(bytes.NewReader(append(h, body...)), len(s))
		if err != nil {
			t.Fatalf("round trip of %d samples: %v", len(s), err)
		}
		if info.SampleRate != pcm.SampleRate || info.Channels != 1 || info.BitsPerSample != 16 {
			t.Fatalf("round trip Info = %+v", info)
		}
		if len(got) == 0 && len(want) == 0 {
			continue
		}
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float32) bool { return a == b || math.IsNaN(float64(a)) && math.IsNaN(float64(b)) })); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
	}
}
