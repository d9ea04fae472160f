// Package serve is yaz-decode's serve mode, the daemon's resident
// decoder: framed audio on stdin (package frame: audio, the end of an
// utterance, a prompt, the text said before, an abandon), one JSON result
// per utterance on stdout, the model loaded once and warmed up before the
// readiness line. Reading goes on while an utterance decodes, so an
// Abandon frame stops the decode in progress.
package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/asr"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/transcript"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/voice"
	"github.com/yazses/yazses/lib/cli"
	"github.com/yazses/yazses/lib/devices"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
)

// Recognizer is what serve needs of a model; a fake stands in for it in
// unit tests.
type Recognizer interface {
	Transcribe(ctx context.Context, samples []float32, opt asr.Options) (asr.Result, error)
}

// Config is what serve works with: the flags of the command, and what
// loading the model found out.
type Config struct {
	// Options are every utterance's; a Prompt frame replaces Prompt for
	// its utterance.
	Options  asr.Options
	VADGate  bool            // --vad-gate: decode only an utterance that holds speech
	Detector *voice.Detector // nil: the energy detector, unannounced
	VAD      voice.Config
	// Ready is the readiness line: the device the model loaded on, why a
	// GPU backend installed is not available, and a device that is not
	// what --device meant (yazsesd status shows them).
	Ready devices.Ready
	// PromptUnused, when set, is called for a prompt the engine has no
	// use for (a Prompt frame with a Parakeet model).
	PromptUnused func()
}

// maxUtterance caps the audio one utterance may buffer in serve mode.
const maxUtterance = 5 * time.Minute

type job struct {
	utt     int
	samples []int16
	tooLong bool
	prompt  *string // from a Prompt frame; nil: --prompt
	context string  // from a Context frame: said just before (whisper reads it after the prompt)
	// ctx is the utterance's own: an Abandon frame that names it cancels
	// it with errAbandoned, which stops whisper at its next check.
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// errAbandoned is the cause of an utterance's context cancelled by an
// Abandon frame.
var errAbandoned = errors.New("utterance abandoned")

// abandoned reports whether an Abandon frame cancelled j.
func (j job) abandoned() bool { return errors.Is(context.Cause(j.ctx), errAbandoned) }

// Run runs the framed supervised mode: frames on stdin, one JSON result per
// ended utterance on stdout. Reading goes on while an utterance decodes, so a
// writer is never blocked for long.
func (c *Config) Run(ctx context.Context, log *slog.Logger, m Recognizer, stdin io.Reader, stdout io.Writer) error {
	// A supervisor that waits for the readiness line (yazsesd's resident
	// decoder) gets a warmed-up model; a one-shot serve (yaz-mcp's own
	// decoder of one file) would pay for the warm-up and gain nothing.
	if os.Getenv(cli.ReadyEnv) != "" {
		c.warmUp(ctx, log, m)
		if ctx.Err() != nil {
			return nil
		}
	}
	// The readiness line names the device, why a GPU backend installed is
	// not available, and a device that is not what --device meant
	// (yazsesd status shows them).
	if err := cli.ReadyWith(c.Ready); err != nil {
		return err
	}
	c.Detector.Announce()
	log.Info("serving", "mode", "frames")
	jobs := make(chan job, 8)
	readDone := make(chan error, 1)
	// The reader may sit in Read for as long as the supervisor is quiet; a
	// signal ends serving without waiting for it.
	go func() {
		// The error goes out before jobs closes: once serveDecode sees
		// the close, the reader's verdict is already there to read.
		readDone <- readFrames(ctx, stdin, jobs)
		close(jobs)
	}()
	derr := c.serveDecode(ctx, log, m, jobs, stdout)
	select {
	case rerr := <-readDone:
		if rerr != nil {
			return rerr
		}
	default:
	}
	return derr
}

// warmer is a Recognizer that can warm up (asr.Model.WarmUp).
type warmer interface {
	WarmUp(ctx context.Context, threads int) (time.Duration, error)
}

// warmUpLimit bounds the warm-up, well inside the minute yazsesd waits
// for the decoder's readiness (a model's load comes first).
const warmUpLimit = 20 * time.Second

// warmUp runs the model once on silence before serve says it is ready
// (under a supervisor that waits for its readiness line):
// the first utterance after a start would otherwise pay for what the
// first call of a process sets up (seconds on a loaded machine, and a GPU
// backend's pipelines). A warm-up that fails, or is stopped at
// warmUpLimit, is said on a WARN line and serving goes on: the first
// utterance pays for the rest.
func (c *Config) warmUp(ctx context.Context, log *slog.Logger, m Recognizer) {
	w, ok := m.(warmer)
	if !ok {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, warmUpLimit)
	defer cancel()
	d, err := w.WarmUp(wctx, c.Options.Threads)
	switch {
	case ctx.Err() != nil:
	case err != nil:
		log.Warn("warm-up failed: the first utterance sets the model up instead", "err", err)
	default:
		log.Info("model warmed up", "ms", d.Milliseconds())
	}
}

// readFrames turns frames into jobs. An Abandon frame discards what has
// arrived of the next utterance; when nothing has (no Audio, Prompt or Context frame
// since the last End), it abandons the utterance that End ended instead,
// whether it is queued or decoding (see package frame).
func readFrames(ctx context.Context, stdin io.Reader, jobs chan<- job) error {
	fr := frame.NewReader(stdin)
	var cur []int16
	var prompt *string
	var said string
	tooLong := false
	open := false // an Audio, Prompt or Context frame arrived since the last End or Abandon
	var abandonLast context.CancelCauseFunc
	utt := 0
	limit := pcm.Samples(maxUtterance)
	for ctx.Err() == nil {
		f, err := fr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read frame: %w", err)
		}
		switch f.Type {
		case frame.Audio:
			open = true
			if len(cur)+len(f.Payload)/2 > limit {
				tooLong = true
				continue
			}
			cur = pcm.Decode(cur, f.Payload)
		case frame.End:
			utt++
			jctx, cancel := context.WithCancelCause(ctx)
			select {
			case jobs <- job{utt: utt, samples: cur, tooLong: tooLong, prompt: prompt, context: said, ctx: jctx, cancel: cancel}:
			case <-ctx.Done():
				cancel(nil)
				return nil
			}
			abandonLast = cancel
			cur, tooLong, prompt, said, open = nil, false, nil, "", false
		case frame.Abandon:
			if !open && abandonLast != nil {
				// A no-op once its result is out.
				abandonLast(errAbandoned)
				abandonLast = nil
			}
			cur, tooLong, prompt, said, open = nil, false, nil, "", false
		case frame.Prompt:
			open = true
			p := strings.ToValidUTF8(string(f.Payload), "")
			prompt = &p
		case frame.Context:
			open = true
			said = strings.ToValidUTF8(string(f.Payload), "")
		}
	}
	return nil
}

func (c *Config) serveDecode(ctx context.Context, log *slog.Logger, m Recognizer, jobs <-chan job, stdout io.Writer) error {
	enc := json.NewEncoder(stdout)
	for {
		var j job
		var ok bool
		select {
		case j, ok = <-jobs:
			if !ok {
				return nil
			}
		case <-ctx.Done():
			return nil
		}
		res := frame.Result{Utt: j.utt, Segments: []frame.Segment{}, AudioMs: pcm.Millis(len(j.samples))}
		start := time.Now()
		promptChars := -1 // not decoded
		contextChars := 0 // of the prompt, from a Context frame
		switch {
		case j.abandoned():
			res.Error = frame.ErrorAbandoned // abandoned while it waited
		case j.tooLong:
			res.Error = frame.ErrorTooLong
		case len(j.samples) == 0 || (c.VADGate && !c.speechIn(log, j)):
			// No speech: nothing to decode, and nothing to hallucinate.
		default:
			opt := c.Options
			if j.prompt != nil {
				opt.Prompt = *j.prompt
				if c.PromptUnused != nil && opt.Prompt != "" {
					c.PromptUnused()
				}
			}
			if j.context != "" && c.PromptUnused == nil { // an engine without prompts ignores it: no setting of the person's
				opt.Prompt = strings.TrimSpace(opt.Prompt + " " + j.context)
				contextChars = utf8.RuneCountInString(j.context)
			}
			promptChars = utf8.RuneCountInString(opt.Prompt)
			r, err := m.Transcribe(j.ctx, pcm.ToFloat32(nil, j.samples), opt)
			if ctx.Err() != nil {
				j.cancel(nil)
				return nil
			}
			if err != nil && j.abandoned() {
				res.Error = frame.ErrorAbandoned // stopped at whisper's next check
				break
			}
			if err != nil {
				log.Error("decode failed", "utt", j.utt, "err", err)
				res.Error = frame.ErrorDecodeFailed
				break
			}
			res.Text = r.Text()
			for _, s := range transcript.ToJSON(r.Segments) {
				res.Segments = append(res.Segments, frame.Segment{StartMs: s.StartMs, EndMs: s.EndMs, Text: s.Text})
			}
		}
		j.cancel(nil)
		res.DecodeMs = time.Since(start).Milliseconds()
		log.Info("utterance", "utt", j.utt, "audio_ms", res.AudioMs, "decode_ms", res.DecodeMs, "segments", len(res.Segments), "error", res.Error,
			"prompt_chars", promptChars, "context_chars", contextChars) // counts: the text itself is private
		if err := enc.Encode(res); err != nil {
			if errors.Is(err, syscall.EPIPE) {
				return nil
			}
			return fmt.Errorf("write result: %w", err)
		}
	}
}

// speechIn reports whether j holds speech by the run's detector.
// A detector failure counts as speech: the utterance is decoded rather
// than dropped.
func (c *Config) speechIn(log *slog.Logger, j job) bool {
	ok, err := c.Detector.HasSpeech(j.ctx, c.VAD, j.samples)
	if err != nil {
		if j.ctx.Err() == nil {
			log.Warn("voice detector failed: decoding the utterance", "utt", j.utt, "err", err)
		}
		return true
	}
	return ok
}
