package hold

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/vadlink"
)

// The capture child failing during a hold: it dies (the stream ends and
// the failure is told) or stalls (no block for CaptureStall while the
// hold listens). The hold keeps what was heard before and, once the child
// is back, after; the Result says that the capture failed and how much
// audio was lost (the time without audio: from the last block to the
// next, less that block, or to the end of the recording). A stalled child
// is restarted once. A stream that ends without a failure (a replayed
// file ran out) is no failure, and no stall is counted after it.
func TestCaptureFails(t *testing.T) {
	for _, tc := range []struct {
		name     string
		script   func(r *rig)
		blocks   int // the decoded audio
		failed   bool
		lost     time.Duration
		restarts int
	}{
		{name: "died and came back", blocks: 20, failed: true, lost: time.Second - secs(1), script: func(r *rig) {
			r.audio.ch <- nil
			r.audio.failed <- struct{}{}
			time.Sleep(time.Second) // the supervisor's backoff
			r.speak(10)
		}},
		{name: "died and not back by the release", blocks: 10, failed: true, lost: 700 * time.Millisecond, script: func(r *rig) {
			r.audio.failed <- struct{}{}
			r.audio.ch <- nil
			time.Sleep(700 * time.Millisecond)
		}},
		{name: "stalled, restarted and back", blocks: 20, failed: true, lost: CaptureStall + 300*time.Millisecond - secs(1), restarts: 1, script: func(r *rig) {
			time.Sleep(CaptureStall - time.Nanosecond)
			synctest.Wait()
			if n := r.audio.restarted(); n != 0 {
				r.t.Errorf("capture restarted %d times before the stall bound, want 0", n)
			}
			time.Sleep(300*time.Millisecond + time.Nanosecond)
			synctest.Wait()
			if n := r.audio.restarted(); n != 1 {
				r.t.Errorf("capture restarted %d times once stalled, want 1", n)
			}
			r.speak(10)
		}},
		{name: "stalled until the release", blocks: 10, failed: true, lost: 3 * time.Second, restarts: 1, script: func(r *rig) {
			time.Sleep(3 * time.Second)
		}},
		{name: "a replayed file ended", blocks: 10, script: func(r *rig) {
			r.audio.ch <- nil
			time.Sleep(3 * CaptureStall)
		}},
		{name: "blocks slower than usual but within the bound", blocks: 20, script: func(r *rig) {
			for range 10 {
				time.Sleep(CaptureStall - time.Millisecond)
				r.speak(1)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := start(t, params(), func(r *rig) { r.det.said = true })
				r.speak(10)
				tc.script(r)
				synctest.Wait()
				r.det.setWait(silentAt(tailQuiet))
				r.release(true)
				res := r.result()
				if res.Outcome != Decoded || res.CaptureFailed != tc.failed || res.CaptureLost != tc.lost {
					t.Errorf("Result %+v; want decoded, capture failed %v, %v lost", res, tc.failed, tc.lost)
				}
				if calls := r.dec.snapshot(); len(calls) != 1 || calls[0].samples != tc.blocks*block || calls[0].from != 0 {
					t.Errorf("decodes %+v; want one of all %d blocks heard", calls, tc.blocks)
				}
				if n := r.audio.restarted(); n != tc.restarts {
					t.Errorf("capture restarted %d times, want %d", n, tc.restarts)
				}
				r.checkEnd(res)
			})
		})
	}
}

// A frozen decoder fails the hold DecodeBound of its audio after its
// recording ended, wherever the hold waits for it: for the whole hold's
// decode, or for a speculation begun during the hold that the whole would
// otherwise wait for first (with its own bound, and then the whole's,
// from the speculation's end: twice the bound).
func TestDecodeBoundFromRecordingEnd(t *testing.T) {
	for _, speculate := range []bool{false, true} {
		name := map[bool]string{false: "whole", true: "speculation"}[speculate]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := params()
				p.Speculate = speculate
				r := start(t, p, func(r *rig) { r.det.said = true; r.dec.fn = blocking })
				r.speak(10)
				if speculate {
					r.emit(vadlink.Event{Kind: vadlink.Silence, For: tailQuiet, At: at(10), Since: at(8)})
					r.det.onEnd = func(d *fakeDetector) {
						d.emit(vadlink.Event{Kind: vadlink.Ended, At: at(10), Since: at(8), Said: true})
						d.close()
					}
				}
				r.det.setWait(silentAt(tailQuiet))
				r.release(true)
				t0 := time.Now()
				res := r.result()
				bound := DecodeBound(secs(10))
				if res.Outcome != Failed || !res.Hung || res.Bound != bound {
					t.Errorf("Result %+v; want failed, hung, bound %v", res, bound)
				}
				if took := time.Since(t0); took != bound {
					t.Errorf("failed %v after the recording ended, want the bound %v", took, bound)
				}
				r.checkEnd(res)
			})
		})
	}
}

// The daemon stopping (Run's context ends) while the hold is decoded does
// not end the decode: the decoder's owner bounds it, so that a stop lets
// the dictation in flight finish.
func TestShutdownWhileDecoding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		answer := make(chan struct{})
		r := start(t, params(), func(r *rig) {
			r.det.said = true
			r.dec.fn = func(ctx context.Context, c *call) (string, error) {
				select {
				case <-answer:
					return "the words", nil
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}
		})
		r.speak(10)
		r.det.setWait(silentAt(tailQuiet))
		r.release(true)
		r.cancel()
		synctest.Wait()
		time.Sleep(10 * time.Second) // the decoding takes its time
		close(answer)
		res := r.result()
		if res.Outcome != Decoded || res.Text != "the words" {
			t.Errorf("Result %+v; want the decode finished after the stop", res)
		}
		if calls := r.dec.snapshot(); len(calls) != 1 || calls[0].canceled {
			t.Errorf("decodes %+v; want one, not cancelled", calls)
		}
		r.checkEnd(res)
	})
}
