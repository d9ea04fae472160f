// Package filedecode is the one definition of how YazSes transcribes an
// audio file on its decoder, `yaz-decode serve`: yazsesd's transcribe (on
// its resident decoder) and yaz-mcp's own decoder (a yaz-decode serve
// child of its own when no daemon decodes) both go through Transcribe and
// Flags, so the same audio with the same settings gives the same text on
// either path.
//
// The definition:
//
//   - The decoder is yaz-decode serve with Flags: the model, language,
//     threads, beam size and device of [decode] and the voice detector of
//     [vad]. decode.prompt goes with every piece as a Prompt frame, never
//     on a command line.
//   - The file is read as a 16 kHz mono stream (wav.Reader16k: read, mixed
//     and resampled a block at a time) and cut by lib/piece into pieces of
//     at most PieceMax, each full piece cut at the quietest 100 ms of its
//     last PieceSearch: the cuts are a function of the audio alone, not of
//     the voice detector, and memory holds one piece whatever the file's
//     length.
//   - Each piece is one utterance, decoded alone: no text is carried from
//     one piece to the next (no Context frame). The decoder's voice
//     detector ([vad]: Silero or the energy detector) decides whether a
//     piece holds speech; one without is not decoded.
//   - The segments of each piece are moved onto the file's timeline; the
//     texts of the pieces are joined with single spaces.
package filedecode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/piece"
)

const (
	// PieceMax is the longest piece of a file sent as one utterance:
	// whisper's window (and below yaz-decode serve's cap on one
	// utterance).
	PieceMax = 30 * time.Second
	// PieceSearch is the end part of a full piece in which the cut is put
	// at the quietest moment.
	PieceSearch = 10 * time.Second
	// MaxAudio caps a transcribed file.
	MaxAudio = 4 * time.Hour
)

// Errors of Transcribe besides the Decoder's and the context's.
var (
	// ErrTooLong: the stream is longer than MaxAudio.
	ErrTooLong = errors.New("longer than the longest file transcribed")
	// ErrRead: the stream could not be read to its end.
	ErrRead = errors.New("read the audio")
)

// Decoder decodes one piece as one utterance of yaz-decode serve. A
// Result that carries an Error is returned as an error.
type Decoder interface {
	Decode(ctx context.Context, samples []int16) (frame.Result, error)
}

// Result is a file's transcript and how it was decoded.
type Result struct {
	daemonapi.TranscribeResult
	// Pieces is how many pieces the file was cut into.
	Pieces int
}

// Transcribe cuts the 16 kHz stream r into pieces and decodes them one by
// one on dec (see the package comment). done, if not nil, hears the
// milliseconds of audio decoded so far after each piece. The Result's
// DecodeMs is the sum of the decoder's own times for the pieces.
func Transcribe(ctx context.Context, r piece.Reader, dec Decoder, done func(ms int64)) (Result, error) {
	return transcribe(ctx, r, dec, done, int64(pcm.Samples(MaxAudio)))
}

// transcribe is Transcribe with a stream of at most limit samples.
func transcribe(ctx context.Context, r piece.Reader, dec Decoder, done func(ms int64), limit int64) (Result, error) {
	out := Result{TranscribeResult: daemonapi.TranscribeResult{Segments: []daemonapi.Segment{}}}
	c := piece.New(r, pcm.Samples(PieceMax), pcm.Samples(PieceSearch), limit)
	var (
		text strings.Builder
		s16  []int16
	)
	for {
		p, at, err := c.Next()
		switch {
		case errors.Is(err, io.EOF):
			out.Text = text.String()
			out.AudioMs = pcm.Millis(int(c.End()))
			return out, nil
		case errors.Is(err, piece.ErrTooLong):
			return out, fmt.Errorf("%w: %w", ErrTooLong, err)
		case err != nil:
			return out, fmt.Errorf("%w: %w", ErrRead, err)
		}
		if err := ctx.Err(); err != nil {
			return out, err
		}
		s16 = pcm.FromFloat32(s16[:0], p)
		res, err := dec.Decode(ctx, s16)
		if err != nil {
			return out, fmt.Errorf("decode piece %d: %w", out.Pieces+1, err)
		}
		out.Pieces++
		off := pcm.Millis(int(at))
		if t := strings.TrimSpace(res.Text); t != "" {
			if text.Len() > 0 {
				text.WriteByte(' ')
			}
			text.WriteString(t)
		}
		for _, s := range res.Segments {
			out.Segments = append(out.Segments, daemonapi.Segment{StartMs: s.StartMs + off, EndMs: s.EndMs + off, Text: s.Text})
		}
		out.DecodeMs += res.DecodeMs
		if done != nil {
			done(pcm.Millis(int(at) + len(p)))
		}
	}
}

// Flags are yaz-decode serve's flags for the decoder of d and v: what the
// daemon's decoder child runs with, and yaz-mcp's. A setting at its zero
// value (a configuration not filled in) is left out: yaz-decode's default
// applies. decode.prompt is not among them: it goes with each utterance (a
// Prompt frame), never on a command line.
func Flags(d config.Decode, v config.VAD) []string {
	f := []string{"--model=" + d.Model}
	add := func(name, value string) {
		if value != "" && value != "0" {
			f = append(f, "--"+name+"="+value)
		}
	}
	add("language", d.Language)
	add("threads", strconv.Itoa(d.Threads))
	add("beam-size", strconv.Itoa(d.BeamSize))
	add("device", d.Device)
	add("vad", v.Engine)
	add("vad-model", v.Model)
	add("vad-threshold", strconv.FormatFloat(v.Threshold, 'g', -1, 64))
	return f
}
