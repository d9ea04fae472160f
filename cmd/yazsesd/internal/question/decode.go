package question

import (
	"context"
	"errors"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/untrusted"
)

// Bounds of the answer's decoding.
const (
	decodeTimeout = 2 * time.Minute  // at most, whatever the deadline
	decoderWait   = 30 * time.Second // for a restarted decoder, once
	// answerDecodeGrace is the least time an answer's decoding gets
	// after the answer ended, past the caller's deadline if need be.
	answerDecodeGrace = 5 * time.Second
)

// decode decodes the answer utt and makes the result. It waits no longer
// than the caller's deadline, or answerDecodeGrace after the answer ended
// if that is later (an answer that ran into the deadline still gets its
// chance), and never more than decodeTimeout: a stopped or overloaded
// decoder makes the call end no_answer in time. If the decoder dies
// meanwhile the answer is tried once more on the restarted decoder (the
// audio is still here), within the same deadline.
func (a *asking) decode(ctx context.Context, utt []int16) daemonapi.AskResult {
	now := time.Now()
	until := now.Add(answerDecodeGrace)
	if a.deadline.After(until) {
		until = a.deadline
	}
	if limit := now.Add(decodeTimeout); until.After(limit) {
		until = limit
	}
	dctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	a.env.House.SetPhase(daemonapi.StateDecoding)
	dec := a.env.Decoder
	text, err := dec.Decode(dctx, utt)
	if errors.Is(err, ErrLost) {
		a.log.Warn("decoder lost during an answer: retrying once on the restarted decoder")
		wctx, wcancel := context.WithTimeout(dctx, decoderWait)
		err = dec.WaitUp(wctx)
		wcancel()
		if err == nil {
			text, err = dec.Decode(dctx, utt)
		}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return result(daemonapi.NoAnswer, daemonapi.ReasonCancelled)
	case err != nil:
		a.log.Error("answer lost: the decoder failed")
		return result(daemonapi.NoAnswer, daemonapi.ReasonDecodeFail)
	}
	// Answers are untrusted data for the host and are never scrubbed
	// beyond control characters and white space (invariant 9).
	if text = untrusted.Transcript(text); text == "" {
		return result(daemonapi.NoAnswer, daemonapi.ReasonSilence)
	}
	return daemonapi.AskResult{Result: daemonapi.Answered, Answer: text}
}
