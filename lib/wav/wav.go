// Package wav reads RIFF/WAVE audio as a stream and converts it to the mono
// float32 samples YazSes works with.
//
// Reader16k (NewReader16k, OpenFile16k) delivers a stream at 16 kHz in
// bounded blocks (read, mixed and resampled a block at a time), so a long
// file can be converted and used piece by piece with memory independent of
// its length, rate and sample width; ReadAll16k and ReadFile16k collect
// its output, so they cost memory for the 16 kHz output only.
//
// The reader parses chunk headers up to the "data" chunk, skipping LIST, fact
// and any other chunk by discarding it, then decodes samples as they arrive.
// Nothing is ever allocated from a size the file declares: a header that
// claims gigabytes over a tiny body ends quickly with ErrTruncated.
//
// Supported: integer PCM of 8 (unsigned), 16, 24 and 32 bits; IEEE float of
// 32 and 64 bits; WAVE_FORMAT_EXTENSIBLE with a PCM or float sub-format;
// 1 to 64 channels (mixed to mono by averaging); 8 000 to 192 000 Hz; RIFF,
// RF64 and BW64 containers. Everything else (MP3 or ADPCM in WAV, A-law,
// mu-law, odd sample sizes) is refused with ErrUnsupported naming what was
// found.
//
// Streams written to pipes do not know their length. A data size of 0 or
// 0xFFFFFFFF (ffmpeg, pcm.StreamWAVHeader) and the placeholders just under
// 2 GiB that espeak-ng and sox write on stdout (0x7FFFF000, rounded down to
// whole frames) mean "unknown": such a stream is read until EOF, and a
// partial frame at its end is dropped. A stream with a real declared size that
// ends early gives ErrTruncated.
package wav

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Info describes the audio of one WAV stream.
type Info struct {
	Format        int   // 1 PCM integer, 3 IEEE float (WAVE_FORMAT_EXTENSIBLE resolved to its sub-format)
	Channels      int   // 1..64
	SampleRate    int   // Hz, 8000..192000
	BitsPerSample int   // container size: 8, 16, 24, 32 or 64
	DataBytes     int64 // declared data size; -1 when unknown/streaming
}

// Sentinel errors. Every error from this package wraps one of them (or an
// error of the underlying reader or file system) with context.
var (
	// ErrNotWAV: the input is not a RIFF/WAVE stream, or its chunk structure
	// is broken.
	ErrNotWAV = errors.New("not a WAV stream")
	// ErrUnsupported: a WAV stream in an encoding or layout this package does
	// not decode.
	ErrUnsupported = errors.New("unsupported WAV encoding")
	// ErrTruncated: the stream ended inside its header, or before the data
	// size it declared.
	ErrTruncated = errors.New("truncated WAV stream")
	// ErrTooLarge: more samples than the caller allows.
	ErrTooLarge = errors.New("WAV audio too long")
	// ErrEmpty: the input holds no byte at all (it is ErrNotWAV too).
	ErrEmpty = errors.New("empty input")
)

// Limits on what a header may declare.
const (
	maxChannels = 64
	minRate     = 8000
	maxRate     = 192000
	// maxChunks bounds the non-data chunks before "data".
	maxChunks = 1024
	// maxSkip bounds the bytes of non-data chunks skipped before "data",
	// only against an endless stream of well-formed junk chunks.
	maxSkip = 1 << 30
	// maxDataBytes caps a 64-bit RF64 data size.
	maxDataBytes = 1 << 40
	// maxReadBytes bounds one read of the underlying reader in ReadMono.
	maxReadBytes = 256 << 10
)

// WAVE format tags.
const (
	tagPCM        = 0x0001
	tagFloat      = 0x0003
	tagExtensible = 0xFFFE
)

// formatNames names the format tags one may meet, for error messages.
var formatNames = map[int]string{
	0x0000: "unknown",
	0x0001: "PCM",
	0x0002: "Microsoft ADPCM",
	0x0003: "IEEE float",
	0x0006: "A-law",
	0x0007: "mu-law",
	0x0011: "IMA ADPCM",
	0x0022: "TrueSpeech",
	0x0031: "GSM 6.10",
	0x0040: "G.721 ADPCM",
	0x0050: "MPEG",
	0x0055: "MPEG Layer 3",
	0x0092: "Dolby AC-3 SPDIF",
	0x00FF: "AAC",
	0x0161: "Windows Media Audio",
	0x1610: "HE-AAC",
	0x2000: "AC-3",
	0x6750: "Ogg Vorbis",
	0xF1AC: "FLAC",
	0xFFFE: "extensible",
}

func formatName(tag int) string {
	if n, ok := formatNames[tag]; ok {
		return fmt.Sprintf("0x%04X (%s)", tag, n)
	}
	return fmt.Sprintf("0x%04X", tag)
}

// guidSuffix is bytes 2..16 of every KSDATAFORMAT_SUBTYPE GUID derived from a
// format tag (00000000-0000-0010-8000-00AA00389B71 with the tag in the first
// two bytes).
var guidSuffix = [14]byte{0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71}

// IsWAV reports whether b (at least 12 bytes) starts a RIFF/WAVE header, or
// an RF64 or BW64 one.
func IsWAV(b []byte) bool {
	if len(b) < 12 {
		return false
	}
	switch string(b[0:4]) {
	case "RIFF", "RF64", "BW64":
		return string(b[8:12]) == "WAVE"
	}
	return false
}

// prefixOfHeader reports whether b could be the start of a WAV header that
// was cut short.
func prefixOfHeader(b []byte) bool {
	for _, magic := range []string{"RIFF", "RF64", "BW64"} {
		h := []byte(magic + "\x00\x00\x00\x00WAVE")
		ok := true
		for i, c := range b {
			if i >= 4 && i < 8 {
				continue
			}
			if i >= len(h) || h[i] != c {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// Reader reads the samples of one WAV stream, chunk headers parsed up to
// "data". It is not safe for concurrent use.
type Reader struct {
	r     io.Reader
	info  Info
	frame int   // bytes per frame (all channels)
	left  int64 // data bytes not yet read from r; -1 when unknown
	buf   []byte
	have  int // bytes of an incomplete frame at the start of buf
	err   error
	dec   func(dst []float32, b []byte, ch int)
}

// NewReader reads the header of a WAV stream from r up to the start of its
// data chunk, skipping every other chunk, and returns a Reader positioned on
// the first sample. It reads no further than that, so r may be a live pipe.
func NewReader(r io.Reader) (*Reader, error) {
	var h [12]byte
	n, err := io.ReadFull(r, h[:])
	switch {
	case n == 0 && (err == io.EOF || err == nil):
		return nil, fmt.Errorf("read wav header: %w: %w", ErrNotWAV, ErrEmpty)
	case err == io.ErrUnexpectedEOF:
		if prefixOfHeader(h[:n]) {
			return nil, fmt.Errorf("read wav header: %w: %d bytes", ErrTruncated, n)
		}
		return nil, fmt.Errorf("read wav header: %w: no RIFF/WAVE signature", ErrNotWAV)
	case err != nil:
		return nil, fmt.Errorf("read wav header: %w", err)
	}
	if !IsWAV(h[:]) {
		return nil, fmt.Errorf("read wav header: %w: no RIFF/WAVE signature", ErrNotWAV)
	}
	rf64 := string(h[0:4]) != "RIFF"

	var (
		wr      = &Reader{r: r}
		haveFmt bool
		ds64    int64 = -1 // data size from an RF64 ds64 chunk
		skipped int64
	)
	for chunk := 0; ; chunk++ {
		var ch [8]byte
		if _, err := io.ReadFull(r, ch[:]); err != nil {
			return nil, headerErr(err, "before the data chunk")
		}
		id := ch[0:4]
		size := binary.LittleEndian.Uint32(ch[4:8])
		if !fourCC(id) {
			return nil, fmt.Errorf("read wav header: %w: malformed chunk id %q", ErrNotWAV, id)
		}
		if string(id) == "data" {
			if !haveFmt {
				return nil, fmt.Errorf("read wav header: %w: data chunk before fmt chunk", ErrNotWAV)
			}
			wr.left = dataSize(size, rf64, ds64)
			wr.info.DataBytes = wr.left
			return wr, nil
		}
		if chunk >= maxChunks {
			return nil, fmt.Errorf("read wav header: %w: more than %d chunks before the data chunk", ErrNotWAV, maxChunks)
		}
		body := int64(size) + int64(size&1) // odd-sized chunks are padded to even
		switch {
		case string(id) == "fmt " && !haveFmt:
			if size < 16 {
				return nil, fmt.Errorf("read wav header: %w: fmt chunk of %d bytes", ErrNotWAV, size)
			}
			var f [40]byte
			k := min(int(size), len(f))
			if _, err := io.ReadFull(r, f[:k]); err != nil {
				return nil, headerErr(err, "in the fmt chunk")
			}
			if err := wr.parseFmt(f[:k]); err != nil {
				return nil, err
			}
			haveFmt = true
			body -= int64(k)
		case string(id) == "ds64" && rf64 && chunk == 0:
			if size < 24 {
				return nil, fmt.Errorf("read wav header: %w: ds64 chunk of %d bytes", ErrNotWAV, size)
			}
			var d [24]byte
			if _, err := io.ReadFull(r, d[:]); err != nil {
				return nil, headerErr(err, "in the ds64 chunk")
			}
			ds64 = int64(binary.LittleEndian.Uint64(d[8:16]) & math.MaxInt64)
			body -= int64(len(d))
		}
		skipped += body
		if skipped > maxSkip {
			return nil, fmt.Errorf("read wav header: %w: more than %d bytes of chunks before the data chunk", ErrNotWAV, int64(maxSkip))
		}
		if _, err := io.CopyN(io.Discard, r, body); err != nil {
			return nil, headerErr(err, fmt.Sprintf("in a %q chunk", id))
		}
	}
}

// headerErr turns a read error inside the header into ErrTruncated for EOF.
func headerErr(err error, where string) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("read wav header: %w: stream ended %s", ErrTruncated, where)
	}
	return fmt.Errorf("read wav header: %w", err)
}

// fourCC reports whether a chunk id is four printable ASCII characters.
func fourCC(id []byte) bool {
	for _, c := range id {
		if c < 0x20 || c > 0x7E {
			return false
		}
	}
	return true
}

// dataSize interprets the declared size of the data chunk: -1 for the
// placeholders of streaming writers.
func dataSize(size uint32, rf64 bool, ds64 int64) int64 {
	if rf64 && size == 0xFFFFFFFF {
		if ds64 <= 0 || ds64 > maxDataBytes {
			return -1
		}
		return ds64
	}
	switch {
	case size == 0, size == 0xFFFFFFFF:
		return -1
	case size >= 0x7FFF0000 && size <= 0x7FFFFFFF:
		// espeak-ng and sox write 0x7FFFF000 (rounded down to whole
		// frames) when their output cannot be seeked back to.
		return -1
	}
	return int64(size)
}

// parseFmt checks a fmt chunk (16 to 40 bytes of it) and sets the format.
func (wr *Reader) parseFmt(f []byte) error {
	le := binary.LittleEndian
	tag := int(le.Uint16(f[0:2]))
	channels := int(le.Uint16(f[2:4]))
	rate := le.Uint32(f[4:8])
	align := int(le.Uint16(f[12:14]))
	bits := int(le.Uint16(f[14:16]))
	format := tag
	if tag == tagExtensible {
		if len(f) < 40 || le.Uint16(f[16:18]) < 22 {
			return fmt.Errorf("read wav header: %w: extensible fmt chunk of %d bytes", ErrNotWAV, len(f))
		}
		valid := int(le.Uint16(f[18:20]))
		format = int(le.Uint16(f[24:26]))
		if [14]byte(f[26:40]) != guidSuffix {
			return fmt.Errorf("read wav header: %w: extensible sub-format GUID %x", ErrUnsupported, f[24:40])
		}
		if valid > bits {
			return fmt.Errorf("read wav header: %w: %d valid bits in %d-bit samples", ErrUnsupported, valid, bits)
		}
		if format != tagPCM && format != tagFloat {
			return fmt.Errorf("read wav header: %w: extensible sub-format %s", ErrUnsupported, formatName(format))
		}
	}
	if format != tagPCM && format != tagFloat {
		return fmt.Errorf("read wav header: %w: format %s", ErrUnsupported, formatName(format))
	}
	if channels < 1 || channels > maxChannels {
		return fmt.Errorf("read wav header: %w: %d channels", ErrUnsupported, channels)
	}
	if rate < minRate || rate > maxRate {
		return fmt.Errorf("read wav header: %w: sample rate %d Hz", ErrUnsupported, rate)
	}
	var dec func([]float32, []byte, int)
	switch {
	case format == tagPCM && bits == 8:
		dec = decodeU8
	case format == tagPCM && bits == 16:
		dec = decodeS16
	case format == tagPCM && bits == 24:
		dec = decodeS24
	case format == tagPCM && bits == 32:
		dec = decodeS32
	case format == tagFloat && bits == 32:
		dec = decodeF32
	case format == tagFloat && bits == 64:
		dec = decodeF64
	default:
		return fmt.Errorf("read wav header: %w: %d-bit %s samples", ErrUnsupported, bits, formatNames[format])
	}
	if want := channels * bits / 8; align != want {
		return fmt.Errorf("read wav header: %w: block align %d, want %d for %d channels of %d bits", ErrUnsupported, align, want, channels, bits)
	}
	wr.info = Info{Format: format, Channels: channels, SampleRate: int(rate), BitsPerSample: bits}
	wr.frame = align
	wr.dec = dec
	return nil
}

// Info describes the stream.
func (r *Reader) Info() Info { return r.info }

// ReadMono reads up to len(dst) frames, mixes their channels to mono by
// averaging and stores them in dst as float32 in [-1, 1], at the source
// sample rate. It returns as soon as a read of the underlying reader
// completes at least one frame, so on a live pipe it delivers what has
// arrived rather than waiting for len(dst) frames.
//
// At the end of the data it returns io.EOF. A stream that ends before its
// declared data size gives ErrTruncated (after the whole frames before that
// point); a stream of unknown size simply ends at EOF, and a partial trailing
// frame is dropped.
func (r *Reader) ReadMono(dst []float32) (int, error) {
	if len(dst) == 0 {
		return 0, nil
	}
	if r.err != nil {
		return 0, r.err
	}
	frames := min(len(dst), max(1, maxReadBytes/r.frame))
	if r.left >= 0 {
		if f := (int64(r.have) + r.left) / int64(r.frame); f < int64(frames) {
			frames = int(f)
		}
		if frames == 0 {
			// Declared size reached; a partial frame it may end with is dropped.
			r.err = io.EOF
			return 0, r.err
		}
	}
	need := frames * r.frame
	if len(r.buf) < need {
		nb := make([]byte, need)
		copy(nb, r.buf[:r.have])
		r.buf = nb
	}
	for empty := 0; ; {
		n, err := r.r.Read(r.buf[r.have:need])
		r.have += n
		if r.left >= 0 {
			r.left -= int64(n)
		}
		if err != nil {
			r.err = r.endErr(err)
		}
		if whole := r.have / r.frame; whole > 0 {
			b := r.buf[:whole*r.frame]
			r.dec(dst[:whole], b, r.info.Channels)
			r.have = copy(r.buf, r.buf[len(b):r.have])
			return whole, nil
		}
		if r.err != nil {
			return 0, r.err
		}
		if n == 0 {
			if empty++; empty >= 100 {
				return 0, fmt.Errorf("read wav data: %w", io.ErrNoProgress)
			}
		}
	}
}

// endErr maps an error of the underlying reader to the one ReadMono reports
// once the whole frames before it are delivered.
func (r *Reader) endErr(err error) error {
	if err != io.EOF {
		return fmt.Errorf("read wav data: %w", err)
	}
	if r.left > 0 {
		return fmt.Errorf("read wav data: %w: stream ended %d bytes before its declared data size", ErrTruncated, r.left)
	}
	return io.EOF
}
