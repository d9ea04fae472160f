// Package speaker runs the utterance loop of `yaz-speak --serve`, the
// supervised speak protocol (docs/design.md, "Supervised speak"; types in lib/tts): it reads
// requests, synthesizes and plays them one at a time, in order, and reports
// started/done/failed events.
//
// Synthesis and playback come in through a function and the Player interface,
// so the protocol logic is tested without espeak-ng or a sound device.
package speaker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/tts"
	"github.com/yazses/yazses/lib/untrusted"
)

// Player plays 16 kHz mono s16 samples. It calls started once, right after
// the first buffer was handed to the output device, and played once the
// device has played the last sample (both possibly from another goroutine;
// played only on a playback that then returns no error, and before the
// device is closed). It returns how many samples it handed to the device.
// When ctx is cancelled it stops at once and returns ctx's error. A Player
// that never calls played is still correct: done then follows its return.
type Player interface {
	Play(ctx context.Context, samples []int16, started, played func()) (int, error)
}

// SynthFunc turns sanitized text into 16 kHz mono s16 samples.
type SynthFunc func(ctx context.Context, text string) ([]int16, error)

// Server answers speak requests. Its fields are set before Serve is called.
type Server struct {
	Synthesize SynthFunc
	Player     Player
	Log        *slog.Logger
	// Skip cancels the utterance in progress each time it receives (the
	// daemon sends SIGUSR1). A skip that arrives between utterances is
	// dropped. May be nil.
	Skip <-chan struct{}
	// MaxText caps the runes of one text after sanitizing; <= 0 means
	// tts.MaxTextRunes.
	MaxText int
}

// Serve reads requests from in until EOF and writes events to out, one
// compact JSON object per line, each in a single Write. It returns nil at
// EOF (after the current utterance ended), ctx's error when ctx is
// cancelled (after a best-effort failed event for the utterance in
// progress), or the error of a failed read or write.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	lines, readErr := Lines(ctx, in, tts.MaxLineBytes)
	for {
		var l Line
		var ok bool
		select {
		case <-ctx.Done():
			return ctx.Err()
		case l, ok = <-lines:
		}
		if !ok {
			return readErr()
		}
		if err := s.handle(ctx, l, out); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// handle answers one request line.
func (s *Server) handle(ctx context.Context, l Line, out io.Writer) error {
	if !l.TooLong && len(bytes.TrimSpace(l.Data)) == 0 {
		return nil // blank lines are no requests
	}
	req, err := parseRequest(l)
	if err != nil {
		s.Log.Warn("bad request", "id", req.ID, "err", err)
		return emit(out, tts.Event{ID: req.ID, Event: tts.EventFailed})
	}
	var text string
	if req.Cue == "" {
		max := s.MaxText
		if max <= 0 {
			max = tts.MaxTextRunes
		}
		text = untrusted.Line(req.Text, 0)
		if text == "" {
			s.Log.Warn("request has no text", "id", req.ID)
			return emit(out, tts.Event{ID: req.ID, Event: tts.EventFailed})
		}
		if utf8.RuneCountInString(text) > max {
			s.Log.Warn("text cut to the limit", "id", req.ID, "max_runes", max)
			text = untrusted.Line(text, max)
		}
	}

	uctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.drainSkip()
	stopWatch := s.watchSkip(uctx, cancel)
	defer stopWatch()

	t0 := time.Now()
	var samples []int16
	if req.Cue != "" {
		// A sound cue: a tone generated here, never espeak-ng.
		var ok bool
		if samples, ok = CueSamples(req.Cue); !ok {
			s.Log.Warn("unknown cue", "id", req.ID)
			return emit(out, tts.Event{ID: req.ID, Event: tts.EventFailed})
		}
	} else if samples, err = s.Synthesize(uctx, text); err != nil {
		s.Log.Warn("synthesis failed", "id", req.ID, "err", err)
		return emit(out, tts.Event{ID: req.ID, Event: tts.EventFailed})
	}
	if len(samples) == 0 {
		s.Log.Warn("synthesis gave no audio", "id", req.ID)
		return emit(out, tts.Event{ID: req.ID, Event: tts.EventFailed})
	}
	synthDur := time.Since(t0)

	// started and played may come from the device's goroutine: they only
	// close channels, and one goroutine writes the events, so a slow
	// reader of stdout never stalls the audio callback, "started" always
	// comes first, and "done" goes out as soon as the audio has been
	// played, while the player is still closing the device.
	startedCh, playedCh := make(chan struct{}), make(chan struct{})
	var startOnce, playOnce sync.Once
	started := func() { startOnce.Do(func() { close(startedCh) }) }
	played := func() { playOnce.Do(func() { close(playedCh) }) }
	playDone := make(chan struct{})
	emitted := make(chan playEvents, 1)
	audioMs := pcm.Millis(len(samples))
	go func() {
		var r playEvents
		select {
		case <-startedCh:
		case <-playedCh:
		case <-playDone:
		}
		if !isClosed(startedCh) && !isClosed(playedCh) {
			emitted <- r // ended without a sign of audio: decided below
			return
		}
		r.startedAt, r.started = time.Now(), true
		if r.err = emit(out, tts.Event{ID: req.ID, Event: tts.EventStarted, Audible: true, AudioMs: audioMs}); r.err != nil {
			emitted <- r
			return
		}
		select {
		case <-playedCh:
		case <-playDone:
		}
		if isClosed(playedCh) {
			r.playedAt, r.done = time.Now(), true
			r.err = emit(out, tts.Event{ID: req.ID, Event: tts.EventDone, Audible: true})
		}
		emitted <- r
	}()
	t1 := time.Now()
	n, playErr := s.Player.Play(uctx, samples, started, played)
	close(playDone)
	r := <-emitted
	if r.err != nil {
		return r.err
	}
	audible := r.started || n > 0
	if audible && !r.started {
		// The player handed samples over without saying so: still tell
		// the truth, in the protocol's order.
		if err := emit(out, tts.Event{ID: req.ID, Event: tts.EventStarted, Audible: true, AudioMs: audioMs}); err != nil {
			return err
		}
	}
	attrs := []any{"id", req.ID, "samples", len(samples), "played", n,
		"audio_ms", audioMs, "synth_ms", synthDur.Milliseconds(),
		"play_ms", time.Since(t1).Milliseconds()}
	if r.done {
		// How long after "started" the device had played the audio out:
		// its length plus what the sound server held it back (late_ms).
		after := r.playedAt.Sub(r.startedAt)
		attrs = append(attrs, "played_after_ms", after.Milliseconds(), "late_ms", after.Milliseconds()-audioMs)
		if playErr != nil {
			// done is out: the audio was played; only the close failed.
			s.Log.Warn("playback ended with an error after the audio was played", append(attrs, "err", playErr)...)
			return nil
		}
		s.Log.Debug("spoken", attrs...)
		return nil
	}
	switch {
	case playErr != nil:
		s.Log.Warn("playback failed", append(attrs, "audible", audible, "err", playErr)...)
		return emit(out, tts.Event{ID: req.ID, Event: tts.EventFailed, Audible: audible})
	case !audible:
		s.Log.Warn("playback handed no audio to the device", attrs...)
		return emit(out, tts.Event{ID: req.ID, Event: tts.EventFailed})
	}
	s.Log.Debug("spoken", attrs...)
	return emit(out, tts.Event{ID: req.ID, Event: tts.EventDone, Audible: true})
}

// playEvents is what the event goroutine of one utterance sent.
type playEvents struct {
	started, done       bool
	startedAt, playedAt time.Time
	err                 error
}

func (s *Server) drainSkip() {
	for {
		select {
		case <-s.Skip:
		default:
			return
		}
	}
}

// watchSkip cancels the utterance when a skip arrives, until ctx ends or the
// returned stop is called (which waits for the watcher to end).
func (s *Server) watchSkip(ctx context.Context, cancel context.CancelFunc) (stop func()) {
	if s.Skip == nil {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-s.Skip:
			s.Log.Info("utterance skipped")
			cancel()
		case <-ctx.Done():
		case <-quit:
		}
	})
	return func() {
		close(quit)
		wg.Wait()
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// parseRequest decodes a request line. On error the returned request still
// carries the id when one could be read.
func parseRequest(l Line) (tts.Request, error) {
	if l.TooLong {
		return tts.Request{}, fmt.Errorf("request longer than %d bytes", tts.MaxLineBytes)
	}
	var raw struct {
		ID   *string `json:"id"`
		Text *string `json:"text"`
		Cue  *string `json:"cue"`
	}
	if err := json.Unmarshal(l.Data, &raw); err != nil {
		return tts.Request{ID: looseID(l.Data)}, errors.New("request is not a JSON object with string id and text")
	}
	var req tts.Request
	if raw.ID != nil {
		req.ID = *raw.ID
	}
	if raw.ID == nil {
		return req, errors.New("request has no id")
	}
	if raw.Cue != nil && *raw.Cue != "" {
		req.Cue = *raw.Cue
		return req, nil
	}
	if raw.Text == nil {
		return req, errors.New("request has no text")
	}
	req.Text = *raw.Text
	return req, nil
}

// looseID returns the string id of a JSON object whose other members are
// wrong, or "".
func looseID(b []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	var id string
	if json.Unmarshal(m["id"], &id) != nil {
		return ""
	}
	return id
}

// emit writes one event as one line in one Write call.
func emit(out io.Writer, ev tts.Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	b = append(b, '\n')
	if _, err := out.Write(b); err != nil {
		return fmt.Errorf("write event: %w", err)
	}
	if f, ok := out.(interface{ Flush() error }); ok {
		if err := f.Flush(); err != nil {
			return fmt.Errorf("write event: %w", err)
		}
	}
	return nil
}
