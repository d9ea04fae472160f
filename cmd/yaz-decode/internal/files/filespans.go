package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/spans"
	"github.com/yazses/yazses/cmd/yaz-decode/internal/transcript"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/wav"
)

// fileBlock is how much of a file is read, and run through the detector,
// at a time (2 s).
const fileBlock = 2 * pcm.SampleRate

// fileSpans transcribes the speech of one file with Silero: the file is
// read in blocks through the detector, its speech spans are packed into
// groups of up to 29 s (package spans), and each group is decoded, with
// whisper's audio context trimmed to its length, as soon as no later span
// fits into it, while reading goes on. Whisper's segments are mapped back
// to the file's timeline. A file without speech decodes nothing. It
// returns the segments, the language decoded ("" when nothing was), the
// file's length and how many bytes it lacked (0: none; see fileAudio).
func (c *Config) fileSpans(ctx context.Context, log *slog.Logger, m Recognizer, path string, stderr io.Writer) ([]transcript.Segment, string, time.Duration, int64, error) {
	maxSamples := int(c.MaxDuration / time.Second * pcm.SampleRate)
	src, err := openFileAudio(path, maxSamples)
	if err != nil {
		return nil, "", 0, 0, explainRead(path, err, c.MaxDuration)
	}
	defer src.Close()
	c.Detector.Announce()
	info := src.Info()
	total := fileSamples(info)
	log.Debug("file opened", "rate", info.SampleRate, "channels", info.Channels, "bits", info.BitsPerSample,
		"audio_ms", pcm.Millis(int(total)))
	st, err := c.Detector.NewFileStream(c.VAD)
	if err != nil {
		return nil, "", 0, 0, fmt.Errorf("voice detector: %w", err)
	}
	defer st.Close()

	bar := newProgress(stderr, c.Progress, filepath.Base(path), pcm.Duration(int(total)))
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		segs   []transcript.Segment
		lang   string
		groups int
		ms     int64
		err    error
	}
	groups := make(chan *spans.Group, 1)
	done := make(chan result, 1)
	go func() {
		var r result
		for g := range groups {
			if r.err != nil {
				continue
			}
			from, to := g.Extent()
			opt := c.Options
			opt.TokenTimes = true // to split a segment at a long pause (MapSegments)
			if total > 0 {
				opt.Progress = func(pct int) { bar.set(int((from + (to-from)*int64(pct)/100) * 100 / total)) }
			}
			start := time.Now()
			res, err := m.Transcribe(gctx, g.Audio(), opt)
			if err != nil {
				r.err = fmt.Errorf("decode: %w", err)
				cancel()
				continue
			}
			r.groups++
			r.ms += time.Since(start).Milliseconds()
			if r.lang == "" {
				r.lang = res.Language
			}
			r.segs = append(r.segs, g.MapSegments(res.Segments)...)
			log.Debug("speech decoded", "from_ms", pcm.Millis(int(from)), "to_ms", pcm.Millis(int(to)),
				"audio_ms", pcm.Millis(len(g.Audio())), "spans", g.Spans(), "decode_ms", time.Since(start).Milliseconds(),
				"audio_ctx", res.AudioCtx, "retried", res.Retried, "segments", len(res.Segments))
		}
		done <- r
	}()

	gr := spans.NewGrouper(st, func(g *spans.Group) error {
		select {
		case groups <- g:
			return nil
		case <-gctx.Done():
			return gctx.Err()
		}
	})
	var rerr error
	block := make([]float32, fileBlock)
	for gctx.Err() == nil {
		n, err := src.Read(block)
		if n > 0 {
			if werr := gr.Write(block[:n]); werr != nil {
				rerr = fmt.Errorf("voice detector: %w", werr)
				break
			}
		}
		if errors.Is(err, io.EOF) {
			if ferr := gr.Flush(); ferr != nil {
				rerr = fmt.Errorf("voice detector: %w", ferr)
			}
			break
		}
		if err != nil {
			rerr = explainRead(path, err, c.MaxDuration)
			break
		}
	}
	close(groups)
	r := <-done
	if r.groups > 0 {
		bar.set(100)
	}
	bar.done()
	switch {
	case ctx.Err() != nil:
		return nil, "", 0, 0, ctx.Err()
	case r.err != nil:
		return nil, "", 0, 0, r.err
	case rerr != nil:
		return nil, "", 0, 0, rerr
	}
	audio := pcm.Duration(int(gr.Pos()))
	if r.groups == 0 {
		log.Debug("no speech in file: not decoded", "audio_ms", audio.Milliseconds())
	} else {
		log.Debug("file decoded", "audio_ms", audio.Milliseconds(), "speech_ms", gr.Speech().Milliseconds(),
			"spans", gr.Spans(), "groups", r.groups, "decode_ms", r.ms, "segments", len(r.segs))
	}
	return r.segs, r.lang, audio, src.Short(), nil
}

// fileSamples is the length of a file in 16 kHz samples from its header,
// or 0 when the header does not say.
func fileSamples(info wav.Info) int64 {
	frame := int64(info.Channels * info.BitsPerSample / 8)
	if info.DataBytes <= 0 || frame <= 0 || info.SampleRate <= 0 {
		return 0
	}
	return info.DataBytes / frame * pcm.SampleRate / int64(info.SampleRate)
}
