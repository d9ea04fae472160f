package wav

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/pcm"
)

var (
	list    = chunk{"LIST", append([]byte("INFOICMT"), 6, 0, 0, 0, 'h', 'e', 'l', 'l', 'o', 0)}
	fact    = chunk{"fact", []byte{0x40, 0x06, 0, 0}}
	oddJunk = chunk{"abcd", []byte{1, 2, 3}} // odd size: padded to even
	bigJunk = chunk{"JUNK", make([]byte, 70000)}
)

// layouts all carry 16 kHz audio, so that ReadAll16k returns the decoded
// samples without resampling.
var layouts = []layout{
	{name: "pcm8", tag: 1, bits: 8, channels: 1, rate: 16000},
	{name: "pcm16", tag: 1, bits: 16, channels: 1, rate: 16000},
	{name: "pcm24", tag: 1, bits: 24, channels: 1, rate: 16000},
	{name: "pcm32", tag: 1, bits: 32, channels: 1, rate: 16000},
	{name: "float32", tag: 3, bits: 32, channels: 1, rate: 16000, cbSize: true, before: []chunk{fact}},
	{name: "float64", tag: 3, bits: 64, channels: 1, rate: 16000},
	{name: "ext-pcm16", tag: 0xFFFE, sub: 1, bits: 16, channels: 1, rate: 16000},
	{name: "ext-pcm24", tag: 0xFFFE, sub: 1, bits: 24, channels: 2, rate: 16000, before: []chunk{fact}},
	{name: "ext-pcm32-valid24", tag: 0xFFFE, sub: 1, bits: 32, validBits: 24, channels: 1, rate: 16000},
	{name: "ext-float32", tag: 0xFFFE, sub: 3, bits: 32, channels: 1, rate: 16000},
	{name: "ext-float64-6ch", tag: 0xFFFE, sub: 3, bits: 64, channels: 6, rate: 16000},
	{name: "stereo16", tag: 1, bits: 16, channels: 2, rate: 16000},
	{name: "3ch16", tag: 1, bits: 16, channels: 3, rate: 16000},
	{name: "8ch32", tag: 1, bits: 32, channels: 8, rate: 16000},
	{name: "stereo8", tag: 1, bits: 8, channels: 2, rate: 16000},
	{name: "fmt18", tag: 1, bits: 16, channels: 1, rate: 16000, cbSize: true},
	{name: "fmt-large", tag: 1, bits: 16, channels: 1, rate: 16000, fmtPad: 51},
	{name: "ext-fmt-large", tag: 0xFFFE, sub: 1, bits: 16, channels: 1, rate: 16000, fmtPad: 7},
	{name: "list-before", tag: 1, bits: 16, channels: 1, rate: 16000, before: []chunk{list}},
	{name: "list-after", tag: 1, bits: 16, channels: 1, rate: 16000, after: []chunk{list, oddJunk}},
	{name: "odd-chunk-before", tag: 1, bits: 16, channels: 1, rate: 16000, before: []chunk{oddJunk, list, oddJunk}},
	{name: "big-chunk-before", tag: 1, bits: 16, channels: 1, rate: 16000, before: []chunk{bigJunk}},
	{name: "stream-ffffffff", tag: 1, bits: 16, channels: 1, rate: 16000, size: sizeStream},
	{name: "stream-zero", tag: 1, bits: 16, channels: 1, rate: 16000, size: sizeZero},
	{name: "stream-espeak", tag: 1, bits: 16, channels: 1, rate: 16000, size: sizeEspeak},
	{name: "stream-sox-24-stereo", tag: 0xFFFE, sub: 1, bits: 24, channels: 2, rate: 16000, size: sizeEspeak, before: []chunk{fact}},
	{name: "rf64", tag: 1, bits: 16, channels: 1, rate: 16000, rf64: true},
	{name: "rf64-float-stream", tag: 3, bits: 32, channels: 2, rate: 16000, rf64: true, size: sizeStream},
}

// tolerance is the largest error a layout's sample size allows against the
// 16-bit original.
func tolerance(bits int) float64 {
	if bits == 8 {
		return 1.0 / 128
	}
	return 1e-6
}

// TestLayouts reads the same 16 kHz mono 16-bit content through every layout
// and compares with the original.
func TestLayouts(t *testing.T) {
	src := content(4001)
	want := pcm.ToFloat32(nil, src)
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			b := l.build(l.encode(monoFrames(src, l.channels)))
			got, info, err := ReadAll16k(bytes.NewReader(b), len(src))
			if err != nil {
				t.Fatalf("ReadAll16k: %v", err)
			}
			wantInfo := Info{Format: l.format(), Channels: l.channels, SampleRate: 16000, BitsPerSample: l.bits, DataBytes: int64(len(src) * l.frameBytes())}
			if l.size != sizeExact {
				wantInfo.DataBytes = -1
			}
			if diff := cmp.Diff(wantInfo, info); diff != "" {
				t.Errorf("Info mismatch (-want +got):\n%s", diff)
			}
			if len(got) != len(want) {
				t.Fatalf("ReadAll16k returned %d samples, want %d", len(got), len(want))
			}
			tol := tolerance(l.bits)
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); d > tol {
					t.Fatalf("sample %d = %v, want %v (±%v)", i, got[i], want[i], tol)
				}
			}
		})
	}
}

// TestReadMonoOneByte streams every layout one byte per read and with odd
// buffer sizes: the samples must be the same as from one big read.
func TestReadMonoOneByte(t *testing.T) {
	src := content(777)
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			b := l.build(l.encode(monoFrames(src, l.channels)))
			whole, _, err := ReadAll16k(bytes.NewReader(b), len(src)+1000)
			if err != nil {
				t.Fatalf("ReadAll16k: %v", err)
			}
			r, err := NewReader(iotest.OneByteReader(bytes.NewReader(b)))
			if err != nil {
				t.Fatalf("NewReader: %v", err)
			}
			var got []float32
			buf := make([]float32, 13)
			for {
				n, err := r.ReadMono(buf)
				got = append(got, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("ReadMono after %d samples: %v", len(got), err)
				}
			}
			if diff := cmp.Diff(whole, got); diff != "" {
				t.Errorf("one-byte reads differ from ReadAll16k (-all +stream):\n%s", diff)
			}
		})
	}
}

// TestMixing checks that channels are averaged, not summed or picked.
func TestMixing(t *testing.T) {
	for _, bits := range []int{8, 16, 24, 32} {
		l := layout{tag: 1, bits: bits, channels: 4, rate: 16000}
		frames := [][]float64{{0.5, 0, 0, 0}, {0.5, 0.5, -0.5, -0.5}, {-1, -1, -1, -1}, {0.25, 0.25, 0.25, 0.25}}
		want := []float32{0.125, 0, -1, 0.25}
		got, _, err := ReadAll16k(bytes.NewReader(l.build(l.encode(frames))), 10)
		if err != nil {
			t.Fatalf("%d bits: ReadAll16k: %v", bits, err)
		}
		for i := range want {
			if math.Abs(float64(got[i]-want[i])) > tolerance(bits) {
				t.Errorf("%d bits: mono sample %d = %v, want %v", bits, i, got[i], want[i])
			}
		}
	}
	for _, l := range []layout{{tag: 3, bits: 32, channels: 2, rate: 16000}, {tag: 3, bits: 64, channels: 2, rate: 16000}} {
		frames := [][]float64{{0.5, -0.25}, {3, 3}, {-7, 0}, {math.NaN(), 0}, {math.Inf(1), math.Inf(1)}}
		want := []float32{0.125, 1, -1, 0, 1}
		got, _, err := ReadAll16k(bytes.NewReader(l.build(l.encode(frames))), 10)
		if err != nil {
			t.Fatalf("float%d: ReadAll16k: %v", l.bits, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("float%d mixing and clamping (-want +got):\n%s", l.bits, diff)
		}
	}
}

// TestGoAudioFixtures reads files written by go-audio/wav, an independent
// encoder (testdata/goaudio/main.go), some with a LIST chunk after the data.
func TestGoAudioFixtures(t *testing.T) {
	src := content(1000)
	want := pcm.ToFloat32(nil, src)
	for _, tc := range []struct{ bits, channels int }{{8, 1}, {16, 1}, {16, 2}, {24, 1}, {32, 3}} {
		name := fmt.Sprintf("goaudio-s%d-%dch.wav", tc.bits, tc.channels)
		got, info, err := ReadFile16k(filepath.Join("testdata", name), len(src))
		if err != nil {
			t.Fatalf("%s: ReadFile16k: %v", name, err)
		}
		wantInfo := Info{Format: 1, Channels: tc.channels, SampleRate: 16000, BitsPerSample: tc.bits, DataBytes: int64(len(src) * tc.channels * tc.bits / 8)}
		if diff := cmp.Diff(wantInfo, info); diff != "" {
			t.Errorf("%s: Info (-want +got):\n%s", name, diff)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d samples, want %d", name, len(got), len(want))
		}
		for i := range want {
			if math.Abs(float64(got[i]-want[i])) > tolerance(tc.bits) {
				t.Fatalf("%s: sample %d = %v, want %v", name, i, got[i], want[i])
			}
		}
	}
}

// TestSineResampled checks that a 440 Hz sine at 44.1 kHz stereo keeps its
// frequency and amplitude through ReadAll16k.
func TestSineResampled(t *testing.T) {
	for _, l := range []layout{
		{tag: 1, bits: 16, channels: 2, rate: 44100},
		{tag: 0xFFFE, sub: 3, bits: 32, channels: 2, rate: 48000},
		{tag: 1, bits: 24, channels: 1, rate: 8000},
		{tag: 1, bits: 16, channels: 1, rate: 192000},
	} {
		const freq, amp = 440.0, 0.5
		b := l.build(l.encode(sine(l.rate, l.rate, l.channels, freq, amp))) // 1 s
		got, _, err := ReadAll16k(bytes.NewReader(b), 16000)
		if err != nil {
			t.Fatalf("%d Hz: ReadAll16k: %v", l.rate, err)
		}
		if len(got) < 15999 || len(got) > 16000 {
			t.Fatalf("%d Hz: %d samples at 16 kHz, want 16000", l.rate, len(got))
		}
		mid := got[1000:15000] // 0.875 s away from the edges
		if n, want := zeroCrossings(mid), 2*freq*0.875; math.Abs(float64(n)-want) > 2 {
			t.Errorf("%d Hz: %d zero crossings, want %v", l.rate, n, want)
		}
		var peak, sq float64
		for _, v := range mid {
			peak = max(peak, math.Abs(float64(v)))
			sq += float64(v) * float64(v)
		}
		rms := math.Sqrt(sq / float64(len(mid)))
		if math.Abs(peak-amp) > 0.01 || math.Abs(rms-amp/math.Sqrt2) > 0.01 {
			t.Errorf("%d Hz: peak %.4f rms %.4f, want %.4f and %.4f", l.rate, peak, rms, amp, amp/math.Sqrt2)
		}
	}
}

// TestRealWriters reads what espeak-ng and sox write to a pipe (placeholder
// sizes just under 2 GiB) and to a file.
func TestRealWriters(t *testing.T) {
	// peak is sox's own "Maximum amplitude" (sox FILE -n stat); 0 for speech.
	for _, tc := range []struct {
		file string
		info Info
		peak float64 // of 0.1 s of 440 Hz
	}{
		{"espeak-hi.wav", Info{1, 1, 22050, 16, -1}, 0},
		{"sox-pipe-s16-48k.wav", Info{1, 1, 48000, 16, -1}, 1},
		{"sox-pipe-f32-16k.wav", Info{3, 1, 16000, 32, -1}, 0.705},
		{"sox-pipe-s24-44k-stereo.wav", Info{1, 2, 44100, 24, -1}, 0.705017},
		{"sox-pipe-u8-8k.wav", Info{1, 1, 8000, 8, -1}, 0.703125},
		{"sox-file-s16-22k-stereo.wav", Info{1, 2, 22050, 16, 8820}, 0.704987},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			r, err := NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("NewReader: %v", err)
			}
			if diff := cmp.Diff(tc.info, r.Info()); diff != "" {
				t.Errorf("Info (-want +got):\n%s", diff)
			}
			var mono []float32
			buf := make([]float32, 1000)
			for {
				n, err := r.ReadMono(buf)
				mono = append(mono, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("ReadMono: %v", err)
				}
			}
			if frames := tc.info.SampleRate / 10; tc.peak > 0 && len(mono) != frames {
				t.Errorf("%d frames, want %d", len(mono), frames)
			}
			if tc.file == "espeak-hi.wav" {
				// An independent decode: 44-byte header, then s16 mono.
				want := pcm.ToFloat32(nil, pcm.Decode(nil, b[44:]))
				if diff := cmp.Diff(want, mono); diff != "" {
					t.Errorf("espeak samples (-want +got):\n%s", diff)
				}
			}
			if tc.peak > 0 {
				if n := zeroCrossings(mono); n < 86 || n > 90 {
					t.Errorf("%d zero crossings in 0.1 s of 440 Hz, want 88", n)
				}
				var peak float64
				for _, v := range mono {
					peak = max(peak, math.Abs(float64(v)))
				}
				if math.Abs(peak-tc.peak) > 0.001 {
					t.Errorf("peak %v, want %v", peak, tc.peak)
				}
			}
		})
	}
}

func TestIsWAV(t *testing.T) {
	h := pcm.WAVHeader(100)
	for _, tc := range []struct {
		b    []byte
		want bool
	}{
		{h, true},
		{h[:12], true},
		{h[:11], false},
		{nil, false},
		{append([]byte("RF64\xff\xff\xff\xff"), "WAVE"...), true},
		{append([]byte("BW64\xff\xff\xff\xff"), "WAVE"...), true},
		{append([]byte("RIFF\x00\x00\x00\x00"), "AVI "...), false},
		{append([]byte("RIFX\x00\x00\x00\x00"), "WAVE"...), false},
		{[]byte("ID3\x04\x00\x00\x00\x00\x00\x00\xff\xfb"), false},
	} {
		if got := IsWAV(tc.b); got != tc.want {
			t.Errorf("IsWAV(%q) = %v, want %v", tc.b, got, tc.want)
		}
	}
}

// TestBadInput: every broken input gives its sentinel error, one line, fast.
func TestBadInput(t *testing.T) {
	pcm16 := layout{tag: 1, bits: 16, channels: 1, rate: 16000}
	good := pcm16.build(make([]byte, 200))
	rng := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	mp3 := append([]byte("ID3\x04\x00\x00\x00\x00\x00\x00"), 0xFF, 0xFB, 0x90, 0x64)
	mp3 = append(mp3, make([]byte, 400)...)

	// withFmt edits good; f[8:] is the format tag (offsets from the WAVE id).
	withFmt := func(mod func(f []byte)) []byte {
		b := bytes.Clone(good)
		mod(b[12:])
		return b
	}
	ext := layout{tag: 0xFFFE, sub: 1, bits: 16, channels: 1, rate: 16000}
	extGood := ext.build(make([]byte, 20))
	le := binary.LittleEndian
	// A data chunk claiming almost 4 GiB over a 100-byte body.
	huge := pcm16.build(make([]byte, 100))
	le.PutUint32(huge[40:], 0xFFFFFFF0)
	// A LIST chunk claiming almost 4 GiB before the data: refused unread.
	hugeList := append([]byte("RIFF\xff\xff\xff\xffWAVELIST\xf0\xff\xff\xff"), make([]byte, 64)...)
	// A LIST chunk claiming 1 MiB over 64 bytes: skipped until EOF.
	bigList := append([]byte("RIFF\xff\xff\xff\xffWAVELIST\x00\x00\x10\x00"), make([]byte, 64)...)
	// A chunk ID of binary garbage.
	badID := append(bytes.Clone(good[:12]), 0, 1, 2, 3, 4, 0, 0, 0)

	for _, tc := range []struct {
		name string
		b    []byte
		want error
		msg  string // a substring of the message
	}{
		{"empty", nil, ErrNotWAV, "empty"},
		{"random", random, ErrNotWAV, ""},
		{"mp3", mp3, ErrNotWAV, ""},
		{"text", []byte("hello, this is not audio at all\n"), ErrNotWAV, ""},
		{"riff-avi", append([]byte("RIFF\x10\x00\x00\x00AVI LIST"), make([]byte, 8)...), ErrNotWAV, ""},
		{"header-4", good[:4], ErrTruncated, ""},
		{"header-6", good[:6], ErrTruncated, ""},
		{"header-11", good[:11], ErrTruncated, ""},
		{"header-12", good[:12], ErrTruncated, ""},
		{"header-20", good[:20], ErrTruncated, ""},
		{"header-30", good[:30], ErrTruncated, ""},
		{"header-40", good[:40], ErrTruncated, ""},
		{"header-43", good[:43], ErrTruncated, ""},
		{"no-data-chunk", good[:36], ErrTruncated, "before the data chunk"},
		{"huge-list", hugeList, ErrNotWAV, "bytes of chunks before the data chunk"},
		{"big-list", bigList, ErrTruncated, `in a "LIST" chunk`},
		{"bad-chunk-id", badID, ErrNotWAV, "chunk id"},
		{"data-before-fmt", append(bytes.Clone(good[:12]), "data\x04\x00\x00\x00\x00\x00\x00\x00"...), ErrNotWAV, "before fmt"},
		{"short-fmt", append(bytes.Clone(good[:12]), "fmt \x0e\x00\x00\x00\x01\x00\x01\x00\x80\x3e\x00\x00\x00\x7d\x00\x00\x02\x00"...), ErrNotWAV, "fmt chunk of 14"},
		{"mp3-in-wav", withFmt(func(f []byte) { le.PutUint16(f[8:], 0x55) }), ErrUnsupported, "MPEG Layer 3"},
		{"adpcm", withFmt(func(f []byte) { le.PutUint16(f[8:], 2) }), ErrUnsupported, "ADPCM"},
		{"alaw", withFmt(func(f []byte) { le.PutUint16(f[8:], 6) }), ErrUnsupported, "A-law"},
		{"mulaw", withFmt(func(f []byte) { le.PutUint16(f[8:], 7) }), ErrUnsupported, "mu-law"},
		{"format-0x1234", withFmt(func(f []byte) { le.PutUint16(f[8:], 0x1234) }), ErrUnsupported, "0x1234"},
		{"zero-channels", withFmt(func(f []byte) { le.PutUint16(f[10:], 0) }), ErrUnsupported, "0 channels"},
		{"65-channels", withFmt(func(f []byte) { le.PutUint16(f[10:], 65); le.PutUint16(f[20:], 130) }), ErrUnsupported, "65 channels"},
		{"rate-0", withFmt(func(f []byte) { le.PutUint32(f[12:], 0) }), ErrUnsupported, "sample rate 0"},
		{"rate-4000", withFmt(func(f []byte) { le.PutUint32(f[12:], 4000) }), ErrUnsupported, "4000 Hz"},
		{"rate-huge", withFmt(func(f []byte) { le.PutUint32(f[12:], 0xFFFFFFFF) }), ErrUnsupported, "Hz"},
		{"bits-12", withFmt(func(f []byte) { le.PutUint16(f[22:], 12) }), ErrUnsupported, "12-bit"},
		{"bits-0", withFmt(func(f []byte) { le.PutUint16(f[22:], 0) }), ErrUnsupported, "0-bit"},
		{"pcm-64", withFmt(func(f []byte) { le.PutUint16(f[22:], 64); le.PutUint16(f[20:], 8) }), ErrUnsupported, "64-bit PCM"},
		{"float-16", withFmt(func(f []byte) { le.PutUint16(f[8:], 3) }), ErrUnsupported, "16-bit IEEE float"},
		{"block-align", withFmt(func(f []byte) { le.PutUint16(f[20:], 3) }), ErrUnsupported, "block align 3"},
		{"ext-mp3", func() []byte { b := bytes.Clone(extGood); le.PutUint16(b[44:], 0x55); return b }(), ErrUnsupported, "sub-format 0x0055 (MPEG Layer 3)"},
		{"ext-guid", func() []byte { b := bytes.Clone(extGood); b[50] ^= 0xFF; return b }(), ErrUnsupported, "GUID"},
		{"ext-valid-bits", func() []byte { b := bytes.Clone(extGood); le.PutUint16(b[38:], 17); return b }(), ErrUnsupported, "17 valid bits"},
		{"ext-short", func() []byte { b := bytes.Clone(extGood); le.PutUint16(b[36:], 0); return b }(), ErrNotWAV, "extensible fmt"},
		{"truncated-data", pcm16.build(make([]byte, 200))[:44+101], ErrTruncated, "99 bytes before"},
		{"huge-data", huge, ErrTruncated, "before its declared data size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ReadAll16k(bytes.NewReader(tc.b), 1<<30)
			if !errors.Is(err, tc.want) {
				t.Fatalf("ReadAll16k error = %v, want %v", err, tc.want)
			}
			for _, other := range []error{ErrNotWAV, ErrUnsupported, ErrTruncated, ErrTooLarge} {
				if other != tc.want && errors.Is(err, other) {
					t.Errorf("error %q also matches %v", err, other)
				}
			}
			if msg := err.Error(); !strings.Contains(msg, tc.msg) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line containing %q", msg, tc.msg)
			}
		})
	}
}

// TestTruncatedKeepsSamples: a truncated stream returns what it had.
func TestTruncatedKeepsSamples(t *testing.T) {
	l := layout{tag: 1, bits: 16, channels: 2, rate: 16000}
	src := content(100)
	b := l.build(l.encode(monoFrames(src, 2)))
	got, _, err := ReadAll16k(bytes.NewReader(b[:len(b)-41]), 1000) // 10 frames and a half missing
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("ReadAll16k error = %v, want ErrTruncated", err)
	}
	if diff := cmp.Diff(pcm.ToFloat32(nil, src[:89]), got); diff != "" {
		t.Errorf("samples before the cut (-want +got):\n%s", diff)
	}
}

// TestStreamPartialFrame: a stream of unknown size that ends mid-frame drops
// the partial frame and ends cleanly.
func TestStreamPartialFrame(t *testing.T) {
	for _, size := range []int{sizeStream, sizeZero, sizeEspeak} {
		l := layout{tag: 1, bits: 24, channels: 2, rate: 16000, size: size}
		src := content(50)
		b := l.build(l.encode(monoFrames(src, 2)))
		got, info, err := ReadAll16k(bytes.NewReader(b[:len(b)-4]), 1000)
		if err != nil {
			t.Fatalf("size mode %d: ReadAll16k: %v", size, err)
		}
		if info.DataBytes != -1 {
			t.Errorf("size mode %d: DataBytes = %d, want -1", size, info.DataBytes)
		}
		if len(got) != 49 {
			t.Errorf("size mode %d: %d samples, want 49", size, len(got))
		}
	}
}

// TestDeclaredSizeStopsReading: bytes after the declared data are not samples.
func TestDeclaredSizeStopsReading(t *testing.T) {
	l := layout{tag: 1, bits: 16, channels: 1, rate: 16000}
	b := l.build(make([]byte, 20))
	b = append(b, bytes.Repeat([]byte{0x7F}, 100)...) // garbage after the data chunk
	got, _, err := ReadAll16k(bytes.NewReader(b), 1000)
	if err != nil {
		t.Fatalf("ReadAll16k: %v", err)
	}
	if diff := cmp.Diff(make([]float32, 10), got); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
	// An odd declared size: the trailing half frame is dropped, no error.
	le := binary.LittleEndian
	le.PutUint32(b[40:], 21)
	got, _, err = ReadAll16k(bytes.NewReader(b), 1000)
	if err != nil || len(got) != 10 {
		t.Errorf("odd data size: %d samples, %v; want 10, nil", len(got), err)
	}
}

func TestTooLarge(t *testing.T) {
	for _, tc := range []struct {
		l         layout
		frames    int
		max       int
		wantErr   bool
		wantCount int
	}{
		{layout{tag: 1, bits: 16, channels: 1, rate: 16000}, 16000, 16000, false, 16000},
		{layout{tag: 1, bits: 16, channels: 1, rate: 16000}, 16001, 16000, true, 0},
		{layout{tag: 1, bits: 16, channels: 1, rate: 16000, size: sizeStream}, 16001, 16000, true, 0},
		{layout{tag: 1, bits: 16, channels: 2, rate: 44100}, 44100, 16000, false, 16000},
		{layout{tag: 1, bits: 16, channels: 2, rate: 44100}, 44100, 15999, true, 0},
		{layout{tag: 1, bits: 16, channels: 1, rate: 8000}, 8000, 16000, false, 16000},
		{layout{tag: 1, bits: 16, channels: 1, rate: 8000}, 8001, 16000, true, 0},
		{layout{tag: 1, bits: 16, channels: 1, rate: 16000}, 1, 0, true, 0},
		{layout{tag: 1, bits: 16, channels: 1, rate: 16000}, 0, 0, false, 0},
	} {
		b := tc.l.build(tc.l.encode(sine(tc.frames, tc.l.rate, tc.l.channels, 100, 0.1)))
		got, _, err := ReadAll16k(bytes.NewReader(b), tc.max)
		if tc.wantErr {
			if !errors.Is(err, ErrTooLarge) {
				t.Errorf("%d frames at %d Hz, max %d: error %v, want ErrTooLarge", tc.frames, tc.l.rate, tc.max, err)
			}
			continue
		}
		if err != nil || len(got) != tc.wantCount {
			t.Errorf("%d frames at %d Hz, max %d: %d samples, %v; want %d", tc.frames, tc.l.rate, tc.max, len(got), err, tc.wantCount)
		}
	}
	if _, _, err := ReadAll16k(bytes.NewReader(nil), -1); err == nil {
		t.Errorf("ReadAll16k with a negative limit: no error")
	}
}

// endless is an infinite stream of silence after a header.
type endless struct{ head []byte }

func (e *endless) Read(p []byte) (int, error) {
	n := copy(p, e.head)
	e.head = e.head[n:]
	clear(p[n:])
	return len(p), nil
}

// TestHugeClaimsSmallMemory: headers claiming gigabytes make neither big
// allocations nor long reads; an endless stream stops at the limit.
func TestHugeClaimsSmallMemory(t *testing.T) {
	pcm16 := layout{tag: 1, bits: 16, channels: 1, rate: 16000}
	huge := pcm16.build(make([]byte, 100))
	binary.LittleEndian.PutUint32(huge[40:], 0xFFFFFFF0)
	rf := layout{tag: 1, bits: 16, channels: 1, rate: 16000, rf64: true}.build(make([]byte, 100))
	binary.LittleEndian.PutUint64(rf[28:], 1<<39) // ds64 data size 512 GiB
	for name, b := range map[string][]byte{"riff": huge, "rf64": rf} {
		var before, after runtimeMem
		before.read()
		_, _, err := ReadAll16k(bytes.NewReader(b), math.MaxInt)
		after.read()
		if !errors.Is(err, ErrTruncated) {
			t.Errorf("%s: error %v, want ErrTruncated", name, err)
		}
		if a := after.total - before.total; a > 4<<20 {
			t.Errorf("%s: allocated %d bytes for a 100-byte body", name, a)
		}
	}
	// Endless silence behind a streaming header: refused at the limit.
	var before, after runtimeMem
	before.read()
	_, _, err := ReadAll16k(&endless{head: pcm.StreamWAVHeader()}, 16000*5)
	after.read()
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("endless stream: error %v, want ErrTooLarge", err)
	}
	if a := after.total - before.total; a > 16<<20 {
		t.Errorf("endless stream with a 5 s limit allocated %d bytes", a)
	}
}

// errReader fails after its data.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		return n, e.err
	}
	return n, err
}

// TestReaderErrors: errors of the underlying reader are passed on, wrapped,
// after the whole frames before them; a reader that never makes progress is
// not spun on forever.
func TestReaderErrors(t *testing.T) {
	boom := errors.New("boom")
	l := layout{tag: 1, bits: 16, channels: 1, rate: 16000, size: sizeStream}
	b := l.build(make([]byte, 21))[:44+21] // no pad byte
	got, _, err := ReadAll16k(&errReader{bytes.NewReader(b), boom}, 100)
	if !errors.Is(err, boom) || len(got) != 10 {
		t.Errorf("ReadAll16k = %d samples, %v; want 10, boom", len(got), err)
	}
	if _, err := NewReader(&errReader{bytes.NewReader(b[:20]), boom}); !errors.Is(err, boom) {
		t.Errorf("NewReader error = %v, want boom", err)
	}
	r, err := NewReader(io.MultiReader(bytes.NewReader(b[:44]), zeroReader{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadMono(make([]float32, 10)); !errors.Is(err, io.ErrNoProgress) {
		t.Errorf("ReadMono on a reader returning 0, nil: %v, want io.ErrNoProgress", err)
	}
	// After the end, EOF again; an empty dst reads nothing.
	r, _ = NewReader(bytes.NewReader(layout{tag: 1, bits: 16, channels: 1, rate: 16000}.build(make([]byte, 4))))
	if n, err := r.ReadMono(nil); n != 0 || err != nil {
		t.Errorf("ReadMono(nil) = %d, %v", n, err)
	}
	buf := make([]float32, 8)
	if n, err := r.ReadMono(buf); n != 2 || err != nil {
		t.Errorf("ReadMono = %d, %v; want 2, nil", n, err)
	}
	for range 2 {
		if n, err := r.ReadMono(buf); n != 0 || err != io.EOF {
			t.Errorf("ReadMono at end = %d, %v; want 0, EOF", n, err)
		}
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { return 0, nil }

// TestLivePipe: ReadMono returns what a pipe has delivered without waiting
// for a full buffer.
func TestLivePipe(t *testing.T) {
	pr, pw := io.Pipe()
	defer pr.Close()
	go func() {
		pw.Write(pcm.StreamWAVHeader())
		pw.Write(make([]byte, 3)) // one and a half frames
	}()
	r, err := NewReader(pr)
	if err != nil {
		t.Fatal(err)
	}
	// readMono is r.ReadMono into a 1 s buffer, which the pipe never
	// fills: one that waits for a full buffer never returns, and after
	// testwait.Hang the test fails.
	type read struct {
		n   int
		err error
	}
	readMono := func(what string) (int, error) {
		t.Helper()
		done := make(chan read, 1)
		go func() {
			n, err := r.ReadMono(make([]float32, 16000))
			done <- read{n, err}
		}()
		select {
		case got := <-done:
			return got.n, got.err
		case <-time.After(testwait.Hang):
			pw.Close()
			t.Fatalf("waiting for ReadMono to return %s: it waited %v for a full buffer on a live pipe", what, testwait.Hang)
			return 0, nil
		}
	}
	if n, _ := readMono("the frame delivered"); n != 1 {
		t.Errorf("ReadMono = %d frames, want 1", n)
	}
	go pw.Write([]byte{0, 0, 0})
	if n, err := readMono("the half frame completed"); n != 2 || err != nil {
		t.Errorf("ReadMono = %d, %v; want 2 frames (the half frame completed)", n, err)
	}
	pw.Close()
	if _, err := r.ReadMono(make([]float32, 10)); err != io.EOF {
		t.Errorf("ReadMono after close: %v, want EOF", err)
	}
}
