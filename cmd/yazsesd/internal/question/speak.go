package question

import (
	"context"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/tts"
	"github.com/yazses/yazses/lib/untrusted"
)

// settleWait bounds the wait for the speaker's final event after a skip.
const settleWait = 5 * time.Second

// speak plays the question. spoken is false when the call ends here. The
// slot's state follows what the speaker says: audible from its "started"
// on (or when it dies or falls silent without a final event), silent only
// when it proved that nothing was played.
func (a *asking) speak(ctx, dctx context.Context, barge Barge, q untrusted.Question) (r daemonapi.AskResult, spoken bool) {
	sp := a.env.Speaker
	if !sp.Ready(dctx) {
		a.slot.silent(daemonapi.ReasonTTSUnavailable)
		return result(daemonapi.Unavailable, daemonapi.ReasonTTSUnavailable), false
	}
	events, err := sp.Speak(Label + q.Text())
	if err != nil {
		a.slot.silent(daemonapi.ReasonTTSUnavailable)
		return result(daemonapi.Unavailable, daemonapi.ReasonTTSUnavailable), false
	}
	// why is set once the question is being stopped: interrupted,
	// timeout or cancelled.
	why := ""
	var settle <-chan time.Time
	stopNow := func(reason string) {
		if why == "" {
			why = reason
			sp.Skip()
			settle = time.After(settleWait)
		}
	}
	interrupted, done := barge.Done(), dctx.Done()
	started := false
	for {
		select {
		case ev, ok := <-events:
			switch {
			case !ok: // the speaker died without a final event: maybe heard
				a.charge(ctx)
				return stopped(ctx, why, daemonapi.ReasonSpeakFailed), false
			case ev.Event == tts.EventStarted:
				// Handed to the sound server, not heard yet: the server
				// may hold it back for a second or two. Listening waits
				// for "done".
				started = true
				a.charge(ctx)
			case ev.Event == tts.EventFailed && !ev.Audible && !started:
				a.slot.silent(daemonapi.ReasonTTSUnavailable)
				switch why {
				case "":
					return result(daemonapi.Unavailable, daemonapi.ReasonTTSUnavailable), false
				case daemonapi.ReasonInterrupted:
					return notAsked(ctx, daemonapi.ReasonHolding), false
				}
				return notAsked(ctx, daemonapi.ReasonTimeout), false
			case ev.Event == tts.EventFailed:
				a.charge(ctx)
				return stopped(ctx, why, daemonapi.ReasonSpeakFailed), false
			case ev.Event == tts.EventDone:
				// The device has played the question out (measured by
				// the speaker from the device's own requests for data,
				// before it closes the device): listen from now on,
				// after the guard.
				a.charge(ctx)
				if why != "" {
					return stopped(ctx, why, why), false
				}
				return daemonapi.AskResult{}, true
			}
		case <-interrupted:
			interrupted = nil // a nil channel blocks from now on
			stopNow(daemonapi.ReasonInterrupted)
		case <-done:
			done = nil
			if ctx.Err() != nil {
				stopNow(daemonapi.ReasonCancelled)
			} else {
				stopNow(daemonapi.ReasonTimeout)
			}
		case <-settle:
			// The speaker never said how it ended: charged.
			a.charge(ctx)
			return stopped(ctx, why, daemonapi.ReasonSpeakFailed), false
		}
	}
}
