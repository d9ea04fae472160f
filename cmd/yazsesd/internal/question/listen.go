package question

import (
	"context"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/vadlink"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/vadspan"
)

// An answer's detector use: a span needs answerMinSpeech of speech, ends
// after ask.answer_silence_ms without a voiced window (hysteresis: once
// speech started, a window stays voiced down to vad.threshold − 0.15, so a
// soft word end or a thinking pause shorter than that keeps the answer
// open), and keeps answerPad of audio on each side. answerSettle bounds
// the wait for the detector's last answers once the audio ended, and for
// a detector that stopped answering. maxAnswerAudio is whisper's window.
const (
	answerMinSpeech = daemonapi.AnswerMinSpeech
	answerPad       = 300 * time.Millisecond
	answerSettle    = 5 * time.Second
	maxAnswerAudio  = 29 * time.Second
)

// answerParams are the detector's parameters for an answer: [vad]'s
// (vadlink.FromConfig) with an answer's own span lengths.
func answerParams(cfg config.Config) vadspan.Params {
	p := vadlink.FromConfig(cfg.VAD)
	p.MinSpeech = answerMinSpeech
	p.MinSilence = time.Duration(cfg.Ask.AnswerSilenceMs) * time.Millisecond
	p.SpeechPad = answerPad
	return p
}

// answer is the answer being recorded: samples is its audio, and the
// detector's positions are indexes into it. The answer is
// samples[from:to]: from the first span's start to its end (a pause of
// ask.answer_silence_ms), or to the end of the audio when it ended first.
type answer struct {
	p        vadspan.Params
	det      Detection
	samples  []int16
	from, to int64
	reason   string // why there is no answer, if there is none
	heard    int    // samples the microphone delivered
	audio    <-chan []int16
	events   <-chan vadlink.Event
	settle   <-chan time.Time // after End: the detector's last answers
	lastPos  int64            // the detector's progress …
	moved    time.Time        // … and when it last moved
}

// end ends the audio: the detector answers the rest, within answerSettle.
func (w *answer) end() {
	w.audio = nil
	if w.settle == nil {
		w.det.End()
		w.settle = time.After(answerSettle)
	}
}

// listen records the answer after the guard pause and decodes it.
func (a *asking) listen(ctx, dctx context.Context, barge Barge) daemonapi.AskResult {
	cfg := a.cfg
	a.env.House.SetPhase(daemonapi.StateListening)
	guard := time.NewTimer(time.Duration(cfg.Ask.GuardMs) * time.Millisecond)
	select {
	case <-guard.C:
	case <-barge.Done():
		guard.Stop()
		return stopped(ctx, barge.Reason(), barge.Reason())
	case <-dctx.Done():
		guard.Stop()
		return stopped(ctx, daemonapi.ReasonTimeout, daemonapi.ReasonTimeout)
	}

	w := &answer{p: answerParams(cfg), from: -1, to: -1, reason: daemonapi.ReasonSilence}
	if w.det = a.env.Detector.Begin(w.p); w.det == nil {
		return result(daemonapi.NoAnswer, daemonapi.ReasonCancelled) // the daemon is stopping
	}
	defer func() {
		if w.det != nil { // nil: the energy detector could not begin
			w.det.Release()
		}
	}()
	audio, stop := a.env.Mic.Listen() // only what is said from now on
	defer stop()
	a.log.Debug("listening for the answer", "guard_ms", cfg.Ask.GuardMs, "detector", w.det.Engine())
	w.audio, w.events, w.moved = audio, w.det.Events(), time.Now()
	if r, ok := a.collect(ctx, dctx, barge, w); !ok {
		return r
	}
	if w.from < 0 || w.from >= int64(len(w.samples)) {
		return result(daemonapi.NoAnswer, w.reason)
	}
	if w.to < 0 || w.to > int64(len(w.samples)) {
		w.to = int64(len(w.samples))
	}
	utt := w.samples[w.from:w.to]
	stop()
	return a.decode(ctx, utt)
}

// step is where an answer's recording is after one of its events.
type step int

const (
	recording step = iota // it goes on
	ended                 // the answer ended: it is decoded
	gone                  // the daemon is stopping: the question is cancelled
)

// collect records until the answer ended (ok), or the question stopped
// (the result).
func (a *asking) collect(ctx, dctx context.Context, barge Barge, w *answer) (r daemonapi.AskResult, ok bool) {
	maxAnswer := time.Duration(a.cfg.Ask.MaxAnswerS) * time.Second
	capN := pcm.Samples(min(maxAnswer, maxAnswerAudio))
	window := time.NewTimer(maxAnswer)
	defer window.Stop()
	cancelled := result(daemonapi.NoAnswer, daemonapi.ReasonCancelled)
	done := dctx.Done()
	for {
		st := recording
		select {
		case s := <-w.audio:
			st = a.onAudio(w, s, capN)
		case e, ok := <-w.events:
			st = a.onEvent(w, e, ok)
		case <-w.settle:
			st = a.detectorSilent(w) // it did not answer the end of the audio
		case <-barge.Done():
			return stopped(ctx, barge.Reason(), barge.Reason()), false
		case <-window.C:
			if w.heard == 0 {
				w.reason = daemonapi.ReasonCaptureFailed // a whole answer window without a sample
			}
			w.end()
		case <-done:
			if ctx.Err() != nil {
				return cancelled, false
			}
			// The timeout: what was said so far is the answer. A
			// caller that leaves meanwhile still cancels it.
			done = ctx.Done()
			w.reason = daemonapi.ReasonTimeout
			w.end()
		}
		switch st {
		case ended:
			return r, true
		case gone:
			return cancelled, false
		}
	}
}

// onAudio keeps a block of the answer's audio (up to capN samples) and
// feeds it to the detector; a nil block: the microphone's stream ended.
func (a *asking) onAudio(w *answer, s []int16, capN int) step {
	if s == nil { // what was said is all
		if w.heard == 0 {
			// It never delivered a sample: not silence, a microphone
			// that did not open (the sound server is gone, the device
			// is missing).
			w.reason = daemonapi.ReasonCaptureFailed
		}
		w.end()
		return recording
	}
	w.heard += len(s)
	s = s[:min(len(s), capN-len(w.samples))]
	w.samples = append(w.samples, s...)
	w.det.Feed(s)
	if !a.keepsUp(w) {
		if st := a.detectorSilent(w); st != recording {
			return st
		}
	}
	if len(w.samples) >= capN {
		w.end()
	}
	return recording
}

// onEvent takes one of the detector's events; ok false: its channel
// closed (the use ended, or failed).
func (a *asking) onEvent(w *answer, e vadlink.Event, ok bool) step {
	if !ok && w.det.State().Ended {
		return ended
	}
	if !ok { // it failed with its Failed event dropped
		e.Kind = vadlink.Failed
	}
	switch e.Kind {
	case vadlink.SpeechStart:
		if w.from < 0 {
			w.from = max(e.At, 0)
		}
	case vadlink.SpeechEnd:
		w.to = e.At
		return ended
	case vadlink.Failed:
		// The detector child is gone: the energy detector goes on from
		// the audio so far (fail open).
		a.log.Warn("voice detector failed during an answer: the energy detector takes over", "err", e.Err)
		if w.det.Energy() || !a.toEnergy(w) { // the energy detector ends only with the daemon
			return gone
		}
	}
	return recording
}

// detectorSilent: the detector did not answer, audio waiting for it or
// the end of the audio. The energy detector's silence ends the answer
// (all of it is decoded); the child's hands it to the energy detector.
func (a *asking) detectorSilent(w *answer) step {
	if a.giveUp(w) {
		return ended
	}
	if !a.toEnergy(w) {
		return gone
	}
	return recording
}

// keepsUp reports whether the detector answers the audio fed to it: it
// moved since the last look, or less than a window waits for it, or it
// has not been still for answerSettle yet.
func (a *asking) keepsUp(w *answer) bool {
	if st := w.det.State(); st.Pos != w.lastPos || int64(len(w.samples))-st.Pos < vadspan.Window {
		w.lastPos, w.moved = st.Pos, time.Now()
		return true
	}
	return time.Since(w.moved) < answerSettle
}

// Every wait on the detector is bounded. One that answers nothing for
// answerSettle while audio waits for it (a stopped child), or does not
// answer the end within answerSettle, is given up, as one that failed is:
// the Silero child is restarted (a silent one) and the energy detector
// decides from the audio so far (fail open). If the energy detector
// itself did not answer, all of the recording is the answer and the
// decoder decides.

// giveUp handles a detector that did not answer: true when it was the
// energy detector (the answer is then all of the recording), else the
// child is restarted and the energy detector is to take over.
func (a *asking) giveUp(w *answer) bool {
	if w.det.Energy() {
		a.log.Warn("the energy detector did not answer during an answer: all of the answer is decoded")
		w.from = max(w.from, 0)
		return true
	}
	a.log.Warn("the voice detector did not answer during an answer: the energy detector takes over",
		"settle_ms", answerSettle.Milliseconds())
	w.det.Restart()
	return false
}

// toEnergy goes on with the energy detector from the audio so far; false
// when the daemon is stopping.
func (a *asking) toEnergy(w *answer) bool {
	w.det.Release()
	if w.det = a.env.Detector.BeginEnergy(w.p); w.det == nil {
		return false
	}
	w.from, w.lastPos, w.moved = -1, 0, time.Now()
	w.det.Feed(w.samples)
	w.events = w.det.Events()
	if w.audio == nil {
		w.settle = nil
		w.end()
	}
	return true
}
