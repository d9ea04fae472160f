// Package transcribe is the daemon's transcribe method: a file decoded on
// the resident decoder, without ever delaying dictation.
//
// How a file is cut and decoded is lib/filedecode's, which yaz-mcp's own
// decoder follows too (the same text for the same file on either path): a
// 16 kHz stream cut into pieces of at most 30 s, each cut at the quietest
// moment of its last 10 s, each piece one utterance of yaz-decode serve,
// decoded alone; the daemon holds one piece of a file at a time whatever
// the file's length, rate or sample width. Here each piece takes the
// decoder's turn at file priority again (turn.File), so a hold or an
// answer waits at most for the piece in progress, and gets it abandoned
// (contract 1; see child.Decoder): the piece is sent again after them.
//
// File work is bounded: one file decodes at a time and fileWaiting more
// may wait for their turn (a turn.Queue); a call beyond that is refused at
// once with daemonapi.CodeBusy. Errors are fixed sentences of
// daemonapi's codes, never a path or the decoder's output.
package transcribe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/child"
	"github.com/yazses/yazses/cmd/yazsesd/internal/turn"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/filedecode"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/jsonrpc"
	"github.com/yazses/yazses/lib/piece"
	"github.com/yazses/yazses/lib/wav"
)

// Decoder is the resident decoder at file priority.
type Decoder interface {
	// Decode decodes one piece. child.ErrYielded: the piece gave the
	// decoder up to a hold or an answer before it was decoded;
	// child.ErrLost: the decoder died with it. Its error once the decoder
	// is down for good or the daemon stops ends the file.
	Decode(ctx context.Context, samples []int16) (frame.Result, error)
	// WaitUp waits for a (re)started decoder.
	WaitUp(ctx context.Context) error
}

// Files transcribes files, one at a time, on a Decoder.
type Files struct {
	dec Decoder
	log *slog.Logger
	q   turn.Queue // one decodes, fileWaiting wait
}

const (
	// fileWaiting is how many transcribe calls may wait behind the one
	// that decodes.
	fileWaiting = 4
	// maxFileAudio caps a transcribed file, as yaz-mcp and yaz-decode do.
	maxFileAudio = filedecode.MaxAudio
	// pieceRetryWait is how long a piece waits, once, for a decoder that
	// died under it to come back.
	pieceRetryWait = 30 * time.Second
)

// Fixed sentences of transcribe's errors.
var (
	errBadFile     = &jsonrpc.Error{Code: daemonapi.CodeBadFile, Message: "not a WAV file this decoder reads"}
	errTooLong     = &jsonrpc.Error{Code: daemonapi.CodeBadFile, Message: "longer than 4 hours of audio"}
	errBusy        = &jsonrpc.Error{Code: daemonapi.CodeBusy, Message: "busy: as many files as the daemon takes are being transcribed or waiting; try again later"}
	errFileDecoder = &jsonrpc.Error{Code: daemonapi.CodeUnavailable, Message: "the decoder failed"}
	// errCancelled answers a caller that went away (a cancelled MCP
	// call): a normal end, not a handler failure (no WARN), and the
	// caller does not read it.
	errCancelled = &jsonrpc.Error{Code: daemonapi.CodeUnavailable, Message: "cancelled: the caller went away"}
)

// New returns Files that decode on dec.
func New(dec Decoder, log *slog.Logger) *Files {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Files{dec: dec, log: log, q: turn.Queue{MaxWaiting: fileWaiting}}
}

// Progress reports a file's progress: milliseconds of its audio decoded
// of its length (0 when its header does not say).
type Progress func(doneMs, totalMs int64)

// Transcribe decodes the file at path, piece by piece, each after any hold
// or answer that is waiting. A caller that goes away abandons the piece in
// progress (contract 1); a decoder that is down for good fails the call at
// once with CodeUnavailable, so the caller can decode elsewhere. progress,
// if not nil, hears 0 once the file is opened and the end of each piece
// once it is decoded, ending at the total: the decoder says nothing within
// a piece (yaz-decode serve answers a piece whole), so neither does
// this.
func (f *Files) Transcribe(ctx context.Context, path string, progress Progress) (daemonapi.TranscribeResult, error) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return daemonapi.TranscribeResult{}, &jsonrpc.Error{Code: daemonapi.CodeBadFile, Message: "not a readable regular file"}
	}
	r, err := wav.OpenFile16k(path)
	if err != nil {
		return daemonapi.TranscribeResult{}, errBadFile
	}
	defer r.Close()
	// A file cut short (an interrupted download) is transcribed as far as
	// it goes, as yaz-decode does, with WarningCutShort.
	r.ShortOK()
	info := r.Info()
	var totalMs int64 // the file's length, as yaz-mcp computes it; 0: not said
	if info.DataBytes > 0 {
		perFrame := int64(info.Channels * info.BitsPerSample / 8)
		data := min(info.DataBytes, fi.Size()) // a file cut short holds less than it declares
		if data/perFrame/int64(info.SampleRate) > int64(maxFileAudio/time.Second) {
			return daemonapi.TranscribeResult{}, errTooLong
		}
		totalMs = data / perFrame * 1000 / int64(info.SampleRate)
	}
	var prog *fileProgress
	if progress != nil {
		prog = &fileProgress{f: progress, total: totalMs, last: -1}
		prog.report(0)
	}
	t, err := f.q.Take(ctx, turn.File)
	if err != nil {
		if errors.Is(err, turn.ErrFull) {
			f.log.Debug("transcribe refused: busy", "decoding", 1, "waiting", fileWaiting)
			return daemonapi.TranscribeResult{}, errBusy
		}
		if ctx.Err() != nil {
			return daemonapi.TranscribeResult{}, errCancelled
		}
		return daemonapi.TranscribeResult{}, err
	}
	defer t.Release()

	out, err := f.decodeFile(ctx, r, prog)
	switch {
	case err == nil:
		if short := r.Short(); short > 0 {
			out.Warning = daemonapi.WarningCutShort
			f.log.Warn("file transcribed as far as it goes: it is cut short", "audio_ms", out.AudioMs, "missing_bytes", short)
			if prog != nil {
				prog.total = out.AudioMs // what it holds: the header's length (and its size) said more
			}
		}
		prog.finish(out.AudioMs)
		return out, nil
	case ctx.Err() != nil:
		f.log.Debug("transcribe cancelled: the caller went away")
		return daemonapi.TranscribeResult{}, errCancelled
	case errors.Is(err, filedecode.ErrTooLong):
		return daemonapi.TranscribeResult{}, errTooLong
	case errors.Is(err, filedecode.ErrRead):
		return daemonapi.TranscribeResult{}, errBadFile
	}
	f.log.Warn("transcribe failed: the decoder failed", "err_kind", fmt.Sprintf("%T", errors.Unwrap(err)))
	return daemonapi.TranscribeResult{}, errFileDecoder
}

// fileProgress reports a file's progress, rising, never past its total.
type fileProgress struct {
	f     Progress
	total int64 // 0: not known
	last  int64
}

// report reports done ms of audio decoded (nil p: nothing).
func (p *fileProgress) report(done int64) {
	if p == nil {
		return
	}
	if p.total > 0 {
		done = min(done, p.total)
	}
	if done <= p.last {
		return
	}
	p.last = done
	p.f(done, p.total)
}

// finish reports the whole file done: its total, or audioMs (what was
// read) when the header did not say (then the total too).
func (p *fileProgress) finish(audioMs int64) {
	if p == nil {
		return
	}
	if p.total <= 0 {
		p.total = max(audioMs, 1)
	}
	p.report(p.total)
}

// decodeFile decodes the 16 kHz stream r as lib/filedecode says, its
// pieces at file priority, reporting the end of each to prog.
func (f *Files) decodeFile(ctx context.Context, r piece.Reader, prog *fileProgress) (daemonapi.TranscribeResult, error) {
	pd := &pieceDecoder{dec: f.dec}
	out, err := filedecode.Transcribe(ctx, r, pd, prog.report)
	if err != nil {
		return out.TranscribeResult, err
	}
	f.log.Info("file transcribed", "audio_ms", out.AudioMs, "decode_ms", out.DecodeMs, "pieces", out.Pieces, "gave_way", pd.yields)
	return out.TranscribeResult, nil
}

// pieceDecoder decodes a file's pieces at file priority. A piece that gave
// way to a hold or an answer is sent again after them; one whose decoder
// died under it is sent once more to the restarted decoder.
type pieceDecoder struct {
	dec    Decoder
	yields int // how many times a piece gave way
}

func (p *pieceDecoder) Decode(ctx context.Context, piece []int16) (frame.Result, error) {
	retried := false
	for {
		r, err := p.dec.Decode(ctx, piece)
		switch {
		case err == nil:
			return r, nil
		case errors.Is(err, child.ErrYielded) && ctx.Err() == nil:
			p.yields++
			continue
		case errors.Is(err, child.ErrLost) && !retried && ctx.Err() == nil:
			retried = true
			wctx, cancel := context.WithTimeout(ctx, pieceRetryWait)
			err = p.dec.WaitUp(wctx)
			cancel()
			if err == nil {
				continue
			}
		}
		return r, err
	}
}
