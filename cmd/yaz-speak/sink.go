package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/yazses/yazses/cmd/yaz-speak/internal/speaker"
	"github.com/yazses/yazses/lib/pcm"
)

// sink is where spoken audio goes: a device, stdout or a file.
type sink interface {
	Write(ctx context.Context, samples []int16) error
	// Close finishes the output; it may be called more than once.
	Close() error
}

func (c *CLI) openSink(log *slog.Logger, stdout io.Writer, single bool) (sink, error) {
	if c.Out == "" {
		return playSink{c.player(log), log}, nil
	}
	s := &pcmSink{w: stdout, wav: c.Format == "wav" || c.Format == "auto" && wavName(c.Out), single: single}
	if c.Out != "-" {
		f, err := os.OpenFile(c.Out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("open output: %w", err)
		}
		s.w, s.f = f, f
	}
	s.fw = pcm.NewFrameWriter(s.w)
	return s, nil
}

// playSink plays each utterance to its end.
type playSink struct {
	p   speaker.Player
	log *slog.Logger
}

func (s playSink) Write(ctx context.Context, samples []int16) error {
	s.log.Debug("playing", "samples", len(samples), "audio_ms", pcm.Millis(len(samples)))
	_, err := s.p.Play(ctx, samples, nil, nil)
	return err
}

func (playSink) Close() error { return nil }

// pcmSink writes wire-format PCM, with a WAV header for --format wav. The
// header carries the real length when it is known before the first sample
// (one utterance from the arguments) or can be patched afterwards (a regular
// file); on a pipe with several utterances it is the streaming header, with
// unknown sizes.
type pcmSink struct {
	w      io.Writer
	f      *os.File // nil for stdout
	fw     *pcm.FrameWriter
	wav    bool
	single bool
	header bool // header written
	closed bool
}

func (s *pcmSink) writeHeader(samples int) error {
	if !s.wav || s.header {
		return nil
	}
	s.header = true
	h := pcm.StreamWAVHeader()
	if s.single {
		h = pcm.WAVHeader(int64(samples) * pcm.FrameBytes)
	}
	if _, err := s.w.Write(h); err != nil {
		return fmt.Errorf("write wav header: %w", err)
	}
	return nil
}

func (s *pcmSink) Write(_ context.Context, samples []int16) error {
	if err := s.writeHeader(len(samples)); err != nil {
		return err
	}
	return s.fw.Write(samples)
}

func (s *pcmSink) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.writeHeader(0)
	if s.f == nil {
		return err
	}
	if err == nil && s.wav && !s.single {
		// A regular file gets its real sizes; a FIFO keeps the stream header.
		if _, serr := s.f.Seek(0, io.SeekStart); serr == nil {
			_, err = s.f.Write(pcm.WAVHeader(s.fw.Samples() * pcm.FrameBytes))
		}
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// wavName reports whether an output file's name asks for a WAV file: it
// ends in .wav, in any case (--format auto writes WAV there).
func wavName(path string) bool {
	return path != "-" && strings.EqualFold(filepath.Ext(path), ".wav")
}
