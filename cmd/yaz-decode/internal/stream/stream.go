// Package stream is yaz-decode's stream mode: raw PCM or a WAV stream on
// stdin is cut into utterances by the voice detector (package voice), and
// each utterance is printed as soon as it is decoded, as text or one JSON
// object a line.
package stream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"syscall"
	"time"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/asr"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/transcript"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/voice"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/vad"
	"github.com/yazses/yazses/lib/wav"
)

// Recognizer is what stream mode needs of a model; a fake stands in for
// it in unit tests.
type Recognizer interface {
	Transcribe(ctx context.Context, samples []float32, opt asr.Options) (asr.Result, error)
}

// Config is what stream mode works with: the flags of the command, and
// the detector the run loaded.
type Config struct {
	Options  asr.Options     // how each utterance is decoded
	JSON     bool            // --format json: one JSON object per utterance
	Detector *voice.Detector // nil: the energy detector, unannounced
	VAD      voice.Config
}

// StreamLine is one utterance printed by stream mode with --json.
type StreamLine struct {
	StartMs  int64                    `json:"start_ms"`
	EndMs    int64                    `json:"end_ms"`
	Text     string                   `json:"text"`
	Segments []transcript.JSONSegment `json:"segments"`
}

// chunkSamples is how much audio stream mode reads at a time (100 ms).
const chunkSamples = pcm.SampleRate / 10

// Run cuts stdin into utterances and prints each as soon as it is decoded.
// EOF, SIGINT and SIGTERM flush the open utterance.
func (c *Config) Run(ctx context.Context, log *slog.Logger, m Recognizer, stdin io.Reader, stdout io.Writer) error {
	chunks := make(chan []int16, 64)
	readErr := make(chan error, 1)
	// Reading, the header sniff included, happens here: a signal must end
	// the stream even while stdin has nothing to say.
	go func() {
		defer close(chunks)
		src, err := newSource(stdin)
		if err != nil {
			readErr <- err
			return
		}
		for {
			s, err := src.read()
			if len(s) > 0 {
				select {
				case chunks <- s:
				case <-ctx.Done():
					readErr <- nil
					return
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
					if src.wav != nil && src.wav.Short() > 0 {
						log.Warn("the WAV stream on stdin is cut short: it ended before the audio its header declares; transcribed what it held",
							"missing_bytes", src.wav.Short())
					}
				} else {
					err = fmt.Errorf("read stdin: %w", err)
				}
				readErr <- err
				return
			}
		}
	}()

	utts := make(chan vad.Utterance, 16)
	decoded := make(chan error, 1)
	go func() { decoded <- c.decodeUtterances(ctx, log, m, utts, stdout) }()

	seg, err := c.Detector.NewCutter(c.VAD)
	if err != nil {
		close(utts)
		<-decoded
		return fmt.Errorf("voice detector: %w", err)
	}
	defer seg.Close()
	c.Detector.Announce()
	cut := 0
	send := func(us []vad.Utterance) {
		for _, u := range us {
			cut++
			// One record per utterance the detector cuts, whatever whisper
			// makes of it: noise that opens none is visible as none.
			log.Debug("utterance cut", "utt", cut, "start_ms", pcm.Millis(int(u.Start)), "end_ms", pcm.Millis(int(u.End)))
			utts <- u
		}
	}
	var rerr error
loop:
	for {
		select {
		case s, ok := <-chunks:
			if !ok {
				rerr = <-readErr
				break loop
			}
			send(seg.Write(s))
		case <-ctx.Done():
			// The reader may be blocked in Read on a live pipe: it ends when
			// the process exits. What was heard so far is still decoded.
			break loop
		}
	}
	send(seg.Flush())
	close(utts)
	derr := <-decoded
	log.Debug("stream ended", "utterances", cut)
	if err := seg.Err(); err != nil && rerr == nil {
		rerr = fmt.Errorf("voice detector: %w", err)
	}
	if rerr != nil {
		return rerr
	}
	return derr
}

func (c *Config) decodeUtterances(ctx context.Context, log *slog.Logger, m Recognizer, utts <-chan vad.Utterance, stdout io.Writer) error {
	// After SIGINT, the utterances already cut are still decoded, within a
	// bounded time: a person who pressed Ctrl-C wants what they said.
	dctx := context.WithoutCancel(ctx)
	enc := json.NewEncoder(stdout)
	var firstErr error
	n := 0
	for u := range utts {
		n++
		if firstErr != nil {
			continue
		}
		uctx, cancel := context.WithTimeout(dctx, 2*time.Minute)
		start := time.Now()
		res, err := m.Transcribe(uctx, pcm.ToFloat32(nil, u.Samples), c.Options)
		cancel()
		log.Debug("utterance decoded", "utt", n, "start_ms", pcm.Millis(int(u.Start)), "end_ms", pcm.Millis(int(u.End)),
			"decode_ms", time.Since(start).Milliseconds(), "audio_ctx", res.AudioCtx, "segments", len(res.Segments))
		if err != nil {
			firstErr = fmt.Errorf("decode utterance %d: %w", n, err)
			continue
		}
		text := strings.TrimSpace(res.Text())
		if text == "" {
			continue
		}
		if c.JSON {
			off := pcm.Duration(int(u.Start))
			segs := make([]transcript.Segment, len(res.Segments))
			for i, s := range res.Segments {
				segs[i] = transcript.Segment{Start: s.Start + off, End: s.End + off, Text: s.Text}
			}
			err = enc.Encode(StreamLine{StartMs: pcm.Millis(int(u.Start)), EndMs: pcm.Millis(int(u.End)), Text: text, Segments: transcript.ToJSON(segs)})
		} else {
			_, err = fmt.Fprintln(stdout, text)
		}
		if err != nil {
			if errors.Is(err, syscall.EPIPE) {
				return nil
			}
			firstErr = fmt.Errorf("write: %w", err)
		}
	}
	return firstErr
}

// source reads 16 kHz mono s16 samples from raw PCM or a WAV stream.
type source struct {
	raw  *bufio.Reader
	wav  *wav.Reader16k // resamples the stream as one signal
	buf  []byte
	fbuf []float32
	odd  []byte
}

func newSource(r io.Reader) (*source, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(12)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("read stdin: %w", err)
	}
	if len(head) >= 12 && wav.IsWAV(head) {
		wr, err := wav.NewReader16k(br)
		if err != nil {
			return nil, fmt.Errorf("read WAV header on stdin: %w", err)
		}
		wr.ShortOK() // a stream cut short ends where it does (a warning)
		return &source{wav: wr, fbuf: make([]float32, chunkSamples)}, nil
	}
	return &source{raw: br, buf: make([]byte, chunkSamples*pcm.FrameBytes)}, nil
}

func (s *source) read() ([]int16, error) {
	if s.wav != nil {
		n, err := s.wav.Read(s.fbuf)
		return pcm.FromFloat32(nil, s.fbuf[:n]), err
	}
	n, err := s.raw.Read(s.buf)
	b := s.buf[:n]
	if len(s.odd) > 0 {
		b = append(s.odd, b...)
		s.odd = nil
	}
	if len(b)%2 == 1 {
		s.odd = []byte{b[len(b)-1]}
		b = b[:len(b)-1]
	}
	return pcm.Decode(nil, b), err
}
