// Package vadstream is yaz-decode's vad-stream mode, the daemon's Silero
// child (package vadwire): framed audio on stdin, Silero VAD's speech
// probability of every 512-sample window on stdout, one use after
// another. It loads no whisper model.
package vadstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/silero"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/voice"
	"github.com/yazses/yazses/lib/cli"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/vadwire"
)

// vadFrame is one frame for Run: the samples of an Audio frame, or an
// End (end true). err ends the stream: nil at EOF, else the read error.
type vadFrame struct {
	samples []float32
	end     bool
	err     error
	last    bool
}

// Run is the vad-stream command (package vadwire): frames on stdin, the speech
// probability of every 512-sample window on stdout, one use after another,
// the detector's state reset at each End. EOF ends the open use, as an End
// does, and returns nil; a frame other than Audio or End, or a malformed
// one, is an error (exit 1). A signal returns at once.
//
// The Silero model is --vad auto's or silero's, the file at --vad-model.
// Without a file, auto cannot fall back to the energy detector here: both
// are vad_model_missing, and a file that is no Silero VAD model is
// vad_model_invalid (startup errors, exit 125 under a supervisor). The
// gate is off and one thread runs, so the probabilities are whisper.cpp's
// to the bit.
func Run(ctx context.Context, log *slog.Logger, c voice.Config, stdin io.Reader, stdout io.Writer) error {
	m, err := voice.Load(c, silero.QuietSkip{})
	if err != nil {
		return err
	}
	defer m.Close()
	s, err := m.NewStream(c.Params())
	if err != nil {
		return fmt.Errorf("VAD stream: %w", err)
	}
	defer s.Close()
	// A daemon that closes its end of stdout has stopped listening: the
	// next answer then fails with EPIPE and the mode ends with exit 0,
	// instead of the runtime's death by SIGPIPE.
	signal.Ignore(syscall.SIGPIPE)
	if err := cli.Ready(); err != nil {
		return err
	}
	log.Info("serving", "mode", "vad-stream", "vad", "silero", "vad_model", c.Model, "kind", m.Describe())

	// The reader may sit in Read for as long as the daemon is quiet; a
	// signal ends the mode without waiting for it (the process exits).
	frames := make(chan vadFrame, 4)
	go readVADFrames(ctx, stdin, frames)

	w := vadwire.NewWriter(stdout)
	open := false // audio arrived since the last End
	uses := 0
	for {
		var f vadFrame
		select {
		case f = <-frames:
		case <-ctx.Done():
			return nil
		}
		switch {
		case f.last:
			if f.err != nil {
				return f.err
			}
			if open {
				if err := endUse(s, w); err != nil {
					return writeErr(err)
				}
				uses++
			}
			log.Debug("vad-stream ended", "uses", uses)
			return nil
		case f.end:
			if err := endUse(s, w); err != nil {
				return writeErr(err)
			}
			open = false
			uses++
		default:
			open = true
			if _, err := s.Write(f.samples); err != nil {
				return err
			}
			if err := w.Probs(s.Probs()); err != nil {
				return writeErr(err)
			}
		}
	}
}

// endUse runs the last partial window of the use, zero-padded, writes its
// probability and the E line, and resets the detector.
func endUse(s *silero.Stream, w *vadwire.Writer) error {
	if _, err := s.Flush(); err != nil {
		return err
	}
	if err := w.Probs(s.Probs()); err != nil {
		return err
	}
	if err := w.End(); err != nil {
		return err
	}
	s.Reset()
	return nil
}

// writeErr is nil when the reader of stdout has gone (the daemon closed
// its end: nothing is left to report to), else err.
func writeErr(err error) error {
	if errors.Is(err, syscall.EPIPE) {
		return nil
	}
	return err
}

// readVADFrames reads frames into out until EOF or an error, which it
// sends last. Each Audio frame's samples are a new slice.
func readVADFrames(ctx context.Context, stdin io.Reader, out chan<- vadFrame) {
	fr := frame.NewReader(bufio.NewReaderSize(stdin, 64<<10)) // small frames: fewer reads
	var i16 []int16
	for {
		f, err := fr.Next()
		var v vadFrame
		switch {
		case errors.Is(err, io.EOF):
			v = vadFrame{last: true}
		case err != nil:
			v = vadFrame{last: true, err: fmt.Errorf("read frame: %w", err)}
		case f.Type == frame.Audio:
			i16 = pcm.Decode(i16[:0], f.Payload)
			v = vadFrame{samples: pcm.ToFloat32(make([]float32, 0, len(i16)), i16)}
		case f.Type == frame.End:
			v = vadFrame{end: true}
		default:
			v = vadFrame{last: true, err: fmt.Errorf("read frame: %q frames are not part of --vad-stream (only A and E)", f.Type)}
		}
		select {
		case out <- v:
		case <-ctx.Done():
			return
		}
		if v.last {
			return
		}
	}
}
