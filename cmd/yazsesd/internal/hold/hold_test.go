package hold

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/yazses/yazses/cmd/yazsesd/internal/vadlink"
	"github.com/yazses/yazses/lib/pcm"
)

// Every hold's goroutines end with it: goleak after all the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// block is one block of audio as the microphone hands it: 32 ms, one
// detector window.
const block = vadWindow

// fakeAudio is the microphone: the test sends blocks.
type fakeAudio struct {
	ch       chan []int16
	failed   chan struct{}
	mu       sync.Mutex
	stopped  int
	restarts int
}

func (a *fakeAudio) Blocks() <-chan []int16  { return a.ch }
func (a *fakeAudio) Failed() <-chan struct{} { return a.failed }
func (a *fakeAudio) Stop()                   { a.mu.Lock(); a.stopped++; a.mu.Unlock() }
func (a *fakeAudio) Restart()                { a.mu.Lock(); a.restarts++; a.mu.Unlock() }
func (a *fakeAudio) restarted() int          { a.mu.Lock(); defer a.mu.Unlock(); return a.restarts }

// fakeDetector is a detector use the test scripts: it sends the events,
// and says how Wait and End answer.
type fakeDetector struct {
	engine string
	ev     chan vadlink.Event

	mu       sync.Mutex
	fed      int64
	feeds    int
	ended    bool
	released int
	restarts int
	waits    []int64
	// wait answers Wait(pos); nil: it never answers (until ctx ends, or
	// the use ended with End's default answer, as vadlink's Wait does).
	wait func(pos int64) (vadlink.State, error)
	// onEnd answers End; nil: Ended (Said as said, Since the fed audio),
	// and the channel closes. A second End does nothing.
	onEnd   func(d *fakeDetector)
	said    bool
	once    sync.Once
	endedCh chan struct{} // closed by End's default answer
}

func newDetector(engine string) *fakeDetector {
	return &fakeDetector{engine: engine, ev: make(chan vadlink.Event, 256), endedCh: make(chan struct{})}
}

func (d *fakeDetector) Engine() string               { return d.engine }
func (d *fakeDetector) Events() <-chan vadlink.Event { return d.ev }
func (d *fakeDetector) Feed(s []int16) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fed += int64(len(s))
	d.feeds++
}

func (d *fakeDetector) Wait(ctx context.Context, pos int64) (vadlink.State, error) {
	d.mu.Lock()
	d.waits = append(d.waits, pos)
	w := d.wait
	d.mu.Unlock()
	if w == nil {
		select {
		case <-ctx.Done():
			return vadlink.State{}, ctx.Err()
		case <-d.endedCh: // the use ended: the speaker was heard to the end
			return vadlink.State{Pos: pos, LastVoiced: pos, Ended: true}, nil
		}
	}
	return w(pos)
}

func (d *fakeDetector) End() {
	d.mu.Lock()
	again := d.ended
	d.ended = true
	onEnd, said, fed := d.onEnd, d.said, d.fed
	d.mu.Unlock()
	if onEnd != nil {
		onEnd(d)
		return
	}
	if again {
		return
	}
	d.emit(vadlink.Event{Kind: vadlink.Ended, At: fed, Since: fed, Said: said})
	close(d.endedCh)
	d.close()
}

func (d *fakeDetector) Release() { d.mu.Lock(); d.released++; d.mu.Unlock() }
func (d *fakeDetector) Restart() { d.mu.Lock(); d.restarts++; d.mu.Unlock() }

func (d *fakeDetector) emit(e vadlink.Event) { d.ev <- e }
func (d *fakeDetector) close()               { d.once.Do(func() { close(d.ev) }) }

// fail is the detector failing: Failed, the channel closes, Wait errs.
func (d *fakeDetector) fail() {
	d.mu.Lock()
	d.wait = func(int64) (vadlink.State, error) { return vadlink.State{}, errors.New("detector gone") }
	d.onEnd = func(*fakeDetector) {}
	d.mu.Unlock()
	d.emit(vadlink.Event{Kind: vadlink.Failed, Err: errors.New("detector gone")})
	d.close()
}

func (d *fakeDetector) setWait(w func(pos int64) (vadlink.State, error)) {
	d.mu.Lock()
	d.wait = w
	d.mu.Unlock()
}

// silentAt answers a Wait with the speaker quiet for q at the position.
func silentAt(q time.Duration) func(int64) (vadlink.State, error) {
	return func(pos int64) (vadlink.State, error) {
		return vadlink.State{Pos: pos, LastVoiced: max(0, pos-int64(pcm.Samples(q)))}, nil
	}
}

// call is one Decode.
type call struct {
	n        int // the call's number, from 1
	from     int // the first sample's value: where the audio starts
	samples  int
	said     string
	canceled bool
}

// fakeDecoder decodes: its answer is fn's, or "piece N" at once. Audio
// samples carry their own position (sample i is i mod 32768), so a call
// tells where its audio began.
type fakeDecoder struct {
	mu    sync.Mutex
	calls []*call
	fn    func(ctx context.Context, c *call) (string, error)
}

func (d *fakeDecoder) Decode(ctx context.Context, samples []int16, said string) (string, error) {
	d.mu.Lock()
	c := &call{n: len(d.calls) + 1, samples: len(samples), said: said}
	if len(samples) > 0 {
		c.from = int(samples[0])
	}
	d.calls = append(d.calls, c)
	fn := d.fn
	d.mu.Unlock()
	var text string
	var err error
	if fn != nil {
		text, err = fn(ctx, c)
	} else {
		text = fmt.Sprintf("piece%d", c.n)
	}
	if ctx.Err() != nil {
		d.mu.Lock()
		c.canceled = true
		d.mu.Unlock()
	}
	return text, err
}

func (d *fakeDecoder) snapshot() []call {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []call
	for _, c := range d.calls {
		out = append(out, *c)
	}
	return out
}

// block answers fn's calls: the test decides when each returns.
func blocking(ctx context.Context, _ *call) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}

// fakeOwner records what the hold tells.
type fakeOwner struct {
	mu      sync.Mutex
	told    []string
	preview []string
	pieces  []string
	guesses []string
}

func (o *fakeOwner) Stopping(why Why)  { o.tell(fmt.Sprint("stopping ", why)) }
func (o *fakeOwner) Collected(why Why) { o.tell(fmt.Sprint("collected ", why)) }
func (o *fakeOwner) Preview(text string) {
	o.mu.Lock()
	o.preview = append(o.preview, text)
	o.mu.Unlock()
}
func (o *fakeOwner) Piece(text string) {
	o.mu.Lock()
	o.pieces = append(o.pieces, text)
	o.mu.Unlock()
}
func (o *fakeOwner) Tentative(text string) {
	o.mu.Lock()
	o.guesses = append(o.guesses, text)
	o.mu.Unlock()
}
func (o *fakeOwner) shown() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.guesses)
}
func (o *fakeOwner) handed() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.pieces)
}
func (o *fakeOwner) tell(s string)  { o.mu.Lock(); o.told = append(o.told, s); o.mu.Unlock() }
func (o *fakeOwner) said() []string { o.mu.Lock(); defer o.mu.Unlock(); return slices.Clone(o.told) }

func (w Why) String() string {
	return [...]string{"?", "released", "at_limit", "auto_stopped", "cancelled", "shutdown"}[w]
}

// rig is one hold under test, in a synctest bubble.
type rig struct {
	t      *testing.T
	audio  *fakeAudio
	det    *fakeDetector
	energy *fakeDetector // the tail's energy detector, once asked for
	noEn   bool          // Energy gives none
	// energyWait answers the energy detector's Wait; nil: silentAt(0).
	energyWait func(pos int64) (vadlink.State, error)
	dec        *fakeDecoder
	owner      *fakeOwner
	ctl        *Control
	cancel     context.CancelFunc
	res        chan Result
	sent       int // samples sent
	start      time.Time
	tails      *tailLog // why each tail ended, from the hold's debug log
}

// tailLog is a slog handler that keeps the why of each "hold tail"
// record.
type tailLog struct {
	mu   sync.Mutex
	whys []string
}

func (l *tailLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *tailLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "hold tail" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "why" {
				l.mu.Lock()
				l.whys = append(l.whys, a.Value.String())
				l.mu.Unlock()
			}
			return true
		})
	}
	return nil
}
func (l *tailLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *tailLog) WithGroup(string) slog.Handler      { return l }
func (l *tailLog) said() []string                     { l.mu.Lock(); defer l.mu.Unlock(); return slices.Clone(l.whys) }

// params of a test hold: no tail unless asked, short utterances kept.
func params() Params {
	return Params{MaxHold: time.Minute, Ending: func() Ending { return Ending{Tail: 2 * time.Second} }}
}

func start(t *testing.T, p Params, setup func(r *rig)) *rig {
	r := &rig{t: t, audio: &fakeAudio{ch: make(chan []int16, 4096), failed: make(chan struct{}, 1)}, det: newDetector("silero"),
		dec: &fakeDecoder{}, owner: &fakeOwner{}, ctl: NewControl(), res: make(chan Result, 1), start: time.Now(),
		tails: &tailLog{}}
	if setup != nil {
		setup(r)
	}
	deps := Deps{Audio: r.audio, Detector: r.det, Decoder: r.dec, Owner: r.owner, Log: slog.New(r.tails),
		Energy: func() Detector {
			if r.noEn {
				return nil
			}
			r.energy = newDetector("energy")
			r.energy.wait = silentAt(0)
			if r.energyWait != nil {
				r.energy.wait = r.energyWait
			}
			return r.energy
		}}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.res <- Run(ctx, deps, p, r.ctl) }()
	return r
}

// speak sends n blocks of audio (samples number themselves) and waits
// until the hold has taken them.
func (r *rig) speak(n int) {
	for range n {
		b := make([]int16, block)
		for i := range b {
			b[i] = int16((r.sent + i) % 32768)
		}
		r.sent += block
		r.audio.ch <- b
	}
	synctest.Wait()
}

func (r *rig) emit(e vadlink.Event) { r.det.emit(e); synctest.Wait() }

// at is a position of the audio sent: blocks.
func at(blocks int) int64 { return int64(blocks * block) }

func (r *rig) release(want bool) {
	r.t.Helper()
	if got := r.ctl.Release(); got != want {
		r.t.Fatalf("Release() = %v, want %v", got, want)
	}
	synctest.Wait()
}

func (r *rig) result() Result {
	r.t.Helper()
	defer r.cancel()
	select {
	case res := <-r.res:
		return res
	case <-time.After(time.Hour): // fake time: the hold is stuck
		r.t.Fatalf("no Result within an hour of fake time; owner told %q", r.owner.said())
		return Result{}
	}
}

// check the end of every hold: it stopped listening once and released
// its detector use, and every decode it started has returned (Run
// returned).
func (r *rig) checkEnd(res Result) {
	r.t.Helper()
	r.audio.mu.Lock()
	stopped := r.audio.stopped
	r.audio.mu.Unlock()
	r.det.mu.Lock()
	released := r.det.released
	r.det.mu.Unlock()
	if stopped != 1 || released != 1 {
		r.t.Errorf("Audio.Stop %d times, Detector.Release %d times; want once each", stopped, released)
	}
	if r.energy != nil && r.energy.released != 1 {
		r.t.Errorf("energy detector released %d times, want once", r.energy.released)
	}
	select {
	case <-r.ctl.Done():
	default:
		r.t.Error("Control.Done open after Run returned")
	}
}

func secs(blocks int) time.Duration { return pcm.Duration(blocks * block) }

// The tail's outcomes: it ends when the detector heard the speaker stop
// before the release (quiet), when it hears them stop after it
// (silence), at the capture stream's end (ended), at its maximum (max);
// a detector that fails in the tail hands it to the energy detector.
func TestTail(t *testing.T) {
	for _, tc := range []struct {
		name string
		// script runs after 10 blocks of speech; it releases.
		script func(r *rig)
		// kept: the blocks of audio the hold kept; took: how long the
		// tail ran (fake time).
		kept int
		took time.Duration
		// energy: the energy detector decided, fed from this position.
		energyFrom int64
		failed     bool
		// atOnce: the hold's result comes with no time passing after the
		// script (not at the tail's maximum).
		atOnce bool
		// why the tail ended (its debug record): quiet, silence, ended,
		// max.
		why string
	}{
		{name: "quiet at the release: no tail", kept: 10, why: "quiet", script: func(r *rig) {
			r.det.setWait(silentAt(tailQuiet))
			r.release(true)
			r.speak(5) // after the tail: not kept
		}},
		{name: "speech into the tail, then silence", kept: 14, took: 0, why: "silence", script: func(r *rig) {
			r.det.setWait(silentAt(0))
			r.release(true)
			r.speak(4)
			r.emit(vadlink.Event{Kind: vadlink.Silence, At: at(14), Since: at(12), For: tailQuiet})
			r.speak(5)
		}},
		{name: "a silence from before the release does not end it", kept: 16, why: "silence", script: func(r *rig) {
			r.det.setWait(silentAt(0))
			r.release(true)
			r.emit(vadlink.Event{Kind: vadlink.Silence, At: at(9), Since: at(7), For: tailQuiet})
			r.speak(6)
			r.emit(vadlink.Event{Kind: vadlink.Silence, At: at(16), Since: at(14), For: tailQuiet})
		}},
		{name: "speech to the maximum", kept: 15, took: 2 * time.Second, why: "max", script: func(r *rig) {
			r.det.setWait(silentAt(0))
			r.release(true)
			r.speak(5)
			time.Sleep(2 * time.Second)
			synctest.Wait()
			r.speak(3) // after the maximum: not kept
		}},
		{name: "no answer from the detector: the maximum", kept: 12, took: 2 * time.Second, why: "max", script: func(r *rig) {
			r.release(true) // wait nil: it never answers
			r.speak(2)
			time.Sleep(3 * time.Second)
			synctest.Wait()
		}},
		{name: "the capture stream ends", kept: 13, why: "ended", script: func(r *rig) {
			r.det.setWait(silentAt(0))
			r.release(true)
			r.speak(3)
			r.audio.ch <- nil
			synctest.Wait()
		}},
		// The energy detector answers a window only once four more have
		// come (holdBack): when no more audio can come, the tail tells
		// the detector the audio ended (End), so that it answers at once
		// (a file played as the microphone ends before the release; a
		// microphone that went away).
		{name: "the capture stream ended before the release: no tail, answered at the end", kept: 10, atOnce: true, why: "ended", script: func(r *rig) {
			r.audio.ch <- nil
			synctest.Wait()
			r.release(true) // wait nil: it answers only once the use ended
		}},
		{name: "the capture stream ended after the speaker stopped: quiet", kept: 10, atOnce: true, why: "quiet", script: func(r *rig) {
			r.det.setWait(silentAt(tailQuiet))
			r.audio.ch <- nil
			synctest.Wait()
			r.release(true)
		}},
		{name: "the capture stream ends in the tail before the detector answers", kept: 13, atOnce: true, why: "ended", script: func(r *rig) {
			r.release(true) // wait nil: it answers only once the use ended
			r.speak(3)
			r.audio.ch <- nil
			synctest.Wait()
		}},
		{name: "the detector fails in the tail: the energy detector's silence", kept: 13, energyFrom: 0, failed: true, why: "silence", script: func(r *rig) {
			r.det.setWait(silentAt(0))
			r.release(true)
			r.speak(1)
			r.det.fail()
			synctest.Wait()
			r.speak(2)
			r.energy.emit(vadlink.Event{Kind: vadlink.Silence, At: at(13), Since: at(12), For: tailQuiet})
			synctest.Wait()
			r.speak(3)
		}},
		{name: "the detector failed before the release: the energy detector hears the speaker stopped", kept: 10, failed: true, why: "quiet", script: func(r *rig) {
			r.det.fail()
			synctest.Wait()
			r.release(true)
			// the energy detector's Wait answers 150 ms of silence
		}},
		{name: "no energy detector (the daemon stops): the tail ends", kept: 10, failed: true, why: "max", script: func(r *rig) {
			r.noEn = true
			r.det.fail()
			synctest.Wait()
			r.release(true)
			r.speak(4)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := start(t, params(), func(r *rig) { r.det.said = true })
				r.speak(10)
				if strings.HasPrefix(tc.name, "the detector failed before") {
					r.det.fail()
					synctest.Wait()
					r.energyWait = silentAt(tailQuiet) // its answer to the release
					r.release(true)
					synctest.Wait()
				} else {
					t0 := time.Now()
					tc.script(r)
					if tc.took > 0 && time.Since(t0) < tc.took {
						t.Errorf("the tail ran %v, want %v", time.Since(t0), tc.took)
					}
				}
				t1 := time.Now()
				res := r.result()
				if tc.atOnce && time.Since(t1) > 0 {
					t.Errorf("the hold ended %v after the script, want at once (nothing more could be recorded)", time.Since(t1))
				}
				if want := secs(tc.kept); res.Audio != want {
					t.Errorf("the hold kept %v of audio, want %v (%d blocks)", res.Audio, want, tc.kept)
				}
				if whys := r.tails.said(); len(whys) != 1 || whys[0] != tc.why {
					t.Errorf("the tail ended for %q, want once for %q", whys, tc.why)
				}
				if res.Outcome != Decoded || res.Why != Released || res.DetectorFailed != tc.failed {
					t.Errorf("Result %+v; want decoded, released, detector failed %v", res, tc.failed)
				}
				calls := r.dec.snapshot()
				if len(calls) != 1 || calls[0].samples != tc.kept*block {
					t.Errorf("decodes %+v; want one of all %d samples", calls, tc.kept*block)
				}
				if tc.failed && !r.noEn {
					if r.energy == nil {
						t.Fatal("the energy detector was not asked for")
					}
					// It heard the last second before the release (all 10
					// blocks here), and what came after.
					if r.energy.fed < at(10) {
						t.Errorf("the energy detector was fed %d samples, want the %d before the release at least", r.energy.fed, at(10))
					}
				}
				r.checkEnd(res)
			})
		})
	}
}

// A tail cut short: the detector's tail ends at the release when it had
// heard the quiet; the next release is refused.
func TestReleaseTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, params(), func(r *rig) { r.det.said = true })
		r.det.setWait(silentAt(0))
		r.speak(3)
		r.release(true)
		r.release(false) // already in its tail
		r.audio.ch <- nil
		res := r.result()
		if res.Outcome != Decoded {
			t.Errorf("Result %+v, want decoded", res)
		}
		r.checkEnd(res)
	})
}

// Speculation: at the first tailQuiet of silence the hold so far is
// decoded; when no voice follows that silence, it is the hold's text (one
// decode); a later silence abandons it (the decode is cancelled), and
// when voice came after the last one, the hold is decoded whole.
func TestSpeculation(t *testing.T) {
	for _, tc := range []struct {
		name string
		// endSince: where the last voiced window ended at the use's end.
		script   func(r *rig)
		endSince int64
		text     string
		calls    int // decodes in all
		canceled int // of them cancelled
	}{
		{name: "kept", endSince: at(8), text: "piece1", calls: 1, script: func(r *rig) {
			r.emit(vadlink.Event{Kind: vadlink.SpeechStart, At: 0})
			r.emit(vadlink.Event{Kind: vadlink.Silence, At: at(10), Since: at(8), For: tailQuiet})
		}},
		{name: "abandoned for a later one, which is kept", endSince: at(14), text: "piece2", calls: 2, canceled: 1, script: func(r *rig) {
			r.dec.fn = func(ctx context.Context, c *call) (string, error) {
				if c.n == 1 {
					return blocking(ctx, c)
				}
				return fmt.Sprintf("piece%d", c.n), nil
			}
			r.emit(vadlink.Event{Kind: vadlink.SpeechStart, At: 0})
			r.emit(vadlink.Event{Kind: vadlink.Silence, At: at(10), Since: at(8), For: tailQuiet})
			r.speak(6)
			r.emit(vadlink.Event{Kind: vadlink.Silence, At: at(16), Since: at(14), For: tailQuiet})
		}},
		{name: "abandoned: voice after its silence, the whole decoded", endSince: at(15), text: "piece2", calls: 2, script: func(r *rig) {
			r.emit(vadlink.Event{Kind: vadlink.SpeechStart, At: 0})
			r.emit(vadlink.Event{Kind: vadlink.Silence, At: at(10), Since: at(8), For: tailQuiet})
			r.speak(6)
		}},
		{name: "failed: the whole decoded", endSince: at(8), text: "piece2", calls: 2, script: func(r *rig) {
			r.dec.fn = func(ctx context.Context, c *call) (string, error) {
				if c.n == 1 {
					return "", errors.New("decoder died")
				}
				return fmt.Sprintf("piece%d", c.n), nil
			}
			r.emit(vadlink.Event{Kind: vadlink.SpeechStart, At: 0})
			r.emit(vadlink.Event{Kind: vadlink.Silence, At: at(10), Since: at(8), For: tailQuiet})
		}},
		{name: "none with the energy detector", endSince: at(8), text: "piece1", calls: 1, script: func(r *rig) {
			r.emit(vadlink.Event{Kind: vadlink.SpeechStart, At: 0})
			r.emit(vadlink.Event{Kind: vadlink.Silence, At: at(10), Since: at(8), For: tailQuiet})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := params()
				p.Speculate = tc.name != "none with the energy detector"
				r := start(t, p, nil)
				r.det.onEnd = func(d *fakeDetector) {
					d.emit(vadlink.Event{Kind: vadlink.Ended, At: d.fed, Since: tc.endSince, Said: true})
					d.close()
				}
				r.speak(10)
				tc.script(r)
				r.det.setWait(silentAt(tailQuiet))
				r.release(true)
				res := r.result()
				if res.Outcome != Decoded || res.Text != tc.text {
					t.Errorf("Result %+v; want decoded %q", res, tc.text)
				}
				calls := r.dec.snapshot()
				canceled := 0
				for _, c := range calls {
					if c.canceled {
						canceled++
					}
				}
				if len(calls) != tc.calls || canceled != tc.canceled {
					t.Errorf("decodes %+v; want %d, %d of them cancelled", calls, tc.calls, tc.canceled)
				}
				if last := calls[len(calls)-1]; tc.text == "piece1" && last.samples != int(at(10)) {
					t.Errorf("the speculation decoded %d samples, want the %d up to its silence", last.samples, at(10))
				}
				r.checkEnd(res)
			})
		})
	}
}

// Eager pieces: each span end is decoded at once, after the text so far;
// the pieces join; a piece that fails makes the whole hold decode at the
// end; a speculation of the last piece is the piece when no voice came
// after its silence.
func TestEagerPieces(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fn      func(ctx context.Context, c *call) (string, error)
		script  func(r *rig)
		text    string
		calls   []call // from, samples, said of each decode
		preview []string
	}{
		{name: "two pieces and the last at the release", text: "piece1 piece2 piece3",
			calls: []call{{from: 0, samples: 10 * block}, {from: 10 * block, samples: 10 * block, said: "piece1"},
				{from: 20 * block, samples: 5 * block, said: "piece1 piece2"}},
			preview: []string{"piece1", "piece1 piece2", "piece1 piece2 piece3"},
			script: func(r *rig) {
				r.speak(10)
				r.emit(vadlink.Event{Kind: vadlink.SpeechEnd, At: at(10), Since: at(9)})
				r.speak(10)
				r.emit(vadlink.Event{Kind: vadlink.SpeechEnd, At: at(20), Since: at(19)})
				r.speak(5)
			}},
		{name: "a piece fails: the whole", text: "piece3",
			fn: func(ctx context.Context, c *call) (string, error) {
				if c.n == 2 {
					return "", errors.New("decoder died")
				}
				return fmt.Sprintf("piece%d", c.n), nil
			},
			calls: []call{{from: 0, samples: 10 * block}, {from: 10 * block, samples: 10 * block, said: "piece1"},
				{from: 0, samples: 25 * block}},
			preview: []string{"piece1"},
			script: func(r *rig) {
				r.speak(10)
				r.emit(vadlink.Event{Kind: vadlink.SpeechEnd, At: at(10), Since: at(9)})
				r.speak(10)
				r.emit(vadlink.Event{Kind: vadlink.SpeechEnd, At: at(20), Since: at(19)})
				r.speak(5)
			}},
		{name: "the last piece speculated", text: "piece1 piece2",
			calls:   []call{{from: 0, samples: 10 * block}, {from: 10 * block, samples: 5 * block, said: "piece1"}},
			preview: []string{"piece1", "piece1 piece2"},
			script: func(r *rig) {
				r.speak(10)
				r.emit(vadlink.Event{Kind: vadlink.SpeechEnd, At: at(10), Since: at(9)})
				r.speak(7)
				r.emit(vadlink.Event{Kind: vadlink.Silence, At: at(15), Since: at(13), For: tailQuiet})
				r.det.onEnd = func(d *fakeDetector) { // no voice after the silence began
					d.emit(vadlink.Event{Kind: vadlink.SpeechEnd, At: d.fed, Since: at(13)})
					d.emit(vadlink.Event{Kind: vadlink.Ended, At: d.fed, Since: at(13), Said: true})
					d.close()
				}
			}},
		{name: "events wait for the piece being decoded", text: "piece1 piece2 piece3",
			fn: func(ctx context.Context, c *call) (string, error) {
				if c.n == 1 {
					time.Sleep(time.Second) // a slow decoder
				}
				return fmt.Sprintf("piece%d", c.n), nil
			},
			calls: []call{{from: 0, samples: 4 * block}, {from: 4 * block, samples: 4 * block, said: "piece1"},
				{from: 8 * block, samples: 4 * block, said: "piece1 piece2"}},
			preview: []string{"piece1", "piece1 piece2", "piece1 piece2 piece3"},
			script: func(r *rig) {
				r.speak(4)
				r.emit(vadlink.Event{Kind: vadlink.SpeechEnd, At: at(4), Since: at(3)})
				r.speak(4)
				r.emit(vadlink.Event{Kind: vadlink.SpeechEnd, At: at(8), Since: at(7)})
				r.speak(4)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := params()
				p.Pieces, p.Speculate = true, true
				r := start(t, p, func(r *rig) { r.dec.fn = tc.fn })
				r.det.onEnd = func(d *fakeDetector) { // the flush ends the open span
					d.emit(vadlink.Event{Kind: vadlink.SpeechEnd, At: d.fed, Since: d.fed - block})
					d.emit(vadlink.Event{Kind: vadlink.Ended, At: d.fed, Since: d.fed - block, Said: true})
					d.close()
				}
				r.emit(vadlink.Event{Kind: vadlink.SpeechStart, At: 0})
				tc.script(r)
				r.det.setWait(silentAt(tailQuiet))
				r.release(true)
				res := r.result()
				if res.Outcome != Decoded || res.Text != tc.text {
					t.Errorf("Result %+v; want decoded %q", res, tc.text)
				}
				var got []call
				for _, c := range r.dec.snapshot() {
					got = append(got, call{from: c.from, samples: c.samples, said: c.said})
				}
				if !slices.Equal(got, tc.calls) {
					t.Errorf("decodes\n%+v, want\n%+v", got, tc.calls)
				}
				if !slices.Equal(r.owner.preview, tc.preview) {
					t.Errorf("previews %q, want %q", r.owner.preview, tc.preview)
				}
				r.checkEnd(res)
			})
		})
	}
}

// Cancel at every state: taken while the hold records (also during a
// piece's decode, which is cancelled) and in its tail; refused once it
// stopped listening (settling, decoding), and the hold goes on to its text.
func TestCancel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(r *rig)
		at    func(r *rig)
		taken bool
	}{
		{name: "recording", taken: true, at: func(r *rig) {}},
		{name: "recording, a piece being decoded", taken: true, setup: func(r *rig) { r.dec.fn = blocking }, at: func(r *rig) {
			r.emit(vadlink.Event{Kind: vadlink.SpeechEnd, At: at(5), Since: at(4)})
		}},
		{name: "recording, a speculation being decoded", taken: true, setup: func(r *rig) { r.dec.fn = blocking }, at: func(r *rig) {
			r.emit(vadlink.Event{Kind: vadlink.Silence, At: at(5), Since: at(3), For: tailQuiet})
		}},
		{name: "in the tail", taken: true, at: func(r *rig) {
			r.det.setWait(silentAt(0))
			r.release(true)
			r.speak(2)
		}},
		{name: "in the tail, the energy detector deciding", taken: true, at: func(r *rig) {
			r.det.setWait(silentAt(0))
			r.release(true)
			r.det.fail()
			synctest.Wait()
			r.energy.setWait(nil)
		}},
		{name: "settling: the detector has not answered the end", at: func(r *rig) {
			r.det.onEnd = func(*fakeDetector) {}
			r.det.setWait(silentAt(tailQuiet))
			r.release(true)
		}},
		{name: "decoding", setup: func(r *rig) {
			r.dec.fn = func(ctx context.Context, c *call) (string, error) {
				time.Sleep(time.Second)
				return "the text", nil
			}
		}, at: func(r *rig) {
			r.det.setWait(silentAt(tailQuiet))
			r.release(true)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := params()
				p.Pieces, p.Speculate = true, true
				r := start(t, p, func(r *rig) {
					r.det.said = true
					if tc.setup != nil {
						tc.setup(r)
					}
				})
				r.emit(vadlink.Event{Kind: vadlink.SpeechStart, At: 0})
				r.speak(5)
				tc.at(r)
				if got := r.ctl.Cancel(); got != tc.taken {
					t.Fatalf("Cancel() = %v, want %v", got, tc.taken)
				}
				res := r.result()
				told := r.owner.said()
				if tc.taken {
					if res.Why != Cancelled || res.Outcome != Dropped {
						t.Errorf("Result %+v, want cancelled", res)
					}
					if !slices.Equal(told, []string{"collected cancelled"}) {
						t.Errorf("owner told %q, want collected cancelled", told)
					}
					for _, c := range r.dec.snapshot() {
						if !c.canceled {
							t.Errorf("decode %+v not cancelled", c)
						}
					}
				} else if res.Why != Released || res.Outcome != Decoded || !slices.Equal(told, []string{"collected released"}) {
					t.Errorf("Result %+v, owner told %q; want the hold decoded after a release", res, told)
				}
				if r.ctl.Cancel() || r.ctl.Release() {
					t.Error("Cancel or Release took a hold that had ended")
				}
				r.checkEnd(res)
			})
		})
	}
}

// The hold's limit ends it as a release does (tail, text); the auto stop
// of a toggled hold after its silence too; both tell the owner first, and
// a release after is refused.
func TestEndsByItself(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    func(p *Params)
		run  func(r *rig)
		why  Why
	}{
		{name: "limit", why: AtLimit, p: func(p *Params) { p.MaxHold = 5 * time.Second }, run: func(r *rig) {
			time.Sleep(5 * time.Second)
			synctest.Wait()
		}},
		{name: "auto stop", why: AutoStopped, p: func(p *Params) { p.AutoStop = time.Second }, run: func(r *rig) {
			r.emit(vadlink.Event{Kind: vadlink.Silence, At: at(5), Since: at(5) - int64(pcm.Samples(time.Second)), For: time.Second})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := params()
				tc.p(&p)
				r := start(t, p, func(r *rig) { r.det.said = true })
				r.det.setWait(silentAt(0))
				r.speak(5)
				t0 := time.Now()
				tc.run(r)
				if got := r.owner.said(); !slices.Equal(got, []string{"stopping " + tc.why.String()}) {
					t.Fatalf("owner told %q, want stopping %s", got, tc.why)
				}
				r.release(false)
				r.speak(3) // the tail goes on: kept
				time.Sleep(2 * time.Second)
				res := r.result()
				if res.Why != tc.why || res.Outcome != Decoded || res.Audio != secs(8) {
					t.Errorf("Result %+v; want %s, decoded, %v of audio", res, tc.why, secs(8))
				}
				if got := r.owner.said(); !slices.Equal(got, []string{"stopping " + tc.why.String(), "collected " + tc.why.String()}) {
					t.Errorf("owner told %q", got)
				}
				if tc.why == AtLimit && time.Since(t0) < 5*time.Second {
					t.Errorf("the limit came after %v, want 5s", time.Since(t0))
				}
				r.checkEnd(res)
			})
		})
	}
}

// An auto stop's silence is not one: a hold not toggled (AutoStop 0)
// ignores silences of any length, and a released one a late auto stop.
func TestAutoStopOnlyToggled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := params()
		p.AutoStop = time.Second
		r := start(t, p, func(r *rig) { r.det.said = true })
		r.speak(5)
		r.emit(vadlink.Event{Kind: vadlink.Silence, At: at(5), For: 2 * time.Second}) // not its length
		if got := r.owner.said(); len(got) != 0 {
			t.Fatalf("owner told %q after another silence", got)
		}
		r.det.setWait(silentAt(0))
		r.release(true)
		r.emit(vadlink.Event{Kind: vadlink.Silence, At: at(5), For: time.Second})
		r.audio.ch <- nil
		res := r.result()
		if res.Why != Released {
			t.Errorf("Result %+v, want released", res)
		}
		if got := r.owner.said(); !slices.Equal(got, []string{"collected released"}) {
			t.Errorf("owner told %q", got)
		}
		r.checkEnd(res)
	})
}

// The settling of a hold: a hold in which the detector heard nothing is
// empty, without a decode; one held too briefly too short; one whose
// detector died, or did not answer its end in time (restarted), is
// decoded whole and says so.
func TestSettle(t *testing.T) {
	for _, tc := range []struct {
		name     string
		script   func(r *rig)
		outcome  Outcome
		failed   bool
		silent   bool
		restarts int
		decodes  int
	}{
		{name: "nothing said", outcome: Empty, script: func(r *rig) {}},
		{name: "speech", outcome: Decoded, decodes: 1, script: func(r *rig) {
			r.emit(vadlink.Event{Kind: vadlink.SpeechStart, At: 0})
		}},
		{name: "speech said at the end", outcome: Decoded, decodes: 1, script: func(r *rig) { r.det.said = true }},
		{name: "the detector died mid-hold", outcome: Decoded, failed: true, decodes: 1, script: func(r *rig) {
			r.det.fail()
			synctest.Wait()
			r.speak(3)
		}},
		{name: "the detector does not answer the end", outcome: Decoded, silent: true, restarts: 1, decodes: 1, script: func(r *rig) {
			r.det.onEnd = func(*fakeDetector) {}
		}},
		{name: "too short", outcome: TooShort, script: func(r *rig) { r.det.said = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := params()
				if tc.outcome == TooShort {
					p.Ending = func() Ending { return Ending{MinUtterance: time.Hour} }
				}
				r := start(t, p, nil)
				r.speak(10)
				tc.script(r)
				r.det.setWait(silentAt(tailQuiet))
				if tc.failed {
					r.energy = nil
				}
				r.release(true)
				t0 := time.Now()
				res := r.result()
				if res.Outcome != tc.outcome || res.DetectorFailed != tc.failed || res.DetectorSilent != tc.silent {
					t.Errorf("Result %+v; want %s, detector failed %v, silent %v", res, tc.outcome, tc.failed, tc.silent)
				}
				if tc.silent && time.Since(t0) < settleWait {
					t.Errorf("given up after %v, want %v", time.Since(t0), settleWait)
				}
				if n := len(r.dec.snapshot()); n != tc.decodes {
					t.Errorf("%d decodes, want %d", n, tc.decodes)
				}
				if r.det.restarts != tc.restarts {
					t.Errorf("%d detector restarts, want %d", r.det.restarts, tc.restarts)
				}
				r.checkEnd(res)
			})
		})
	}
}

// The detector dies after two pieces: the pieces stay, the audio after
// the last one is decoded once, after their text.
func TestDetectorDiesAfterPieces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := params()
		p.Pieces = true
		r := start(t, p, nil)
		r.emit(vadlink.Event{Kind: vadlink.SpeechStart, At: 0})
		r.speak(10)
		r.emit(vadlink.Event{Kind: vadlink.SpeechEnd, At: at(10), Since: at(9)})
		r.speak(5)
		r.det.fail()
		synctest.Wait()
		r.speak(5)
		r.release(true)
		synctest.Wait()
		r.energy.setWait(silentAt(tailQuiet))
		res := r.result()
		if !res.DetectorFailed || res.Text != "piece1 piece2" {
			t.Errorf("Result %+v; want the detector failed, text \"piece1 piece2\"", res)
		}
		calls := r.dec.snapshot()
		if len(calls) != 2 || calls[1].from != 10*block || calls[1].said != "piece1" {
			t.Errorf("decodes %+v; want the rest from %d after \"piece1\"", calls, 10*block)
		}
		r.checkEnd(res)
	})
}

// The decoder failing: the Result says so; one that does not answer
// within DecodeBound is hung.
func TestDecoderFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(ctx context.Context, c *call) (string, error)
		hung bool
	}{
		{name: "error", fn: func(context.Context, *call) (string, error) { return "", errors.New("decoder died") }},
		{name: "hung", fn: blocking, hung: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := start(t, params(), func(r *rig) { r.det.said = true; r.dec.fn = tc.fn })
				r.speak(10)
				r.det.setWait(silentAt(tailQuiet))
				r.release(true)
				t0 := time.Now()
				res := r.result()
				bound := DecodeBound(secs(10))
				if res.Outcome != Failed || res.Err == nil || res.Hung != tc.hung || res.Bound != bound {
					t.Errorf("Result %+v; want failed, hung %v, bound %v", res, tc.hung, bound)
				}
				if tc.hung && time.Since(t0) < bound {
					t.Errorf("taken for hung after %v, want %v", time.Since(t0), bound)
				}
				r.checkEnd(res)
			})
		})
	}
}

// Run's context ending (the daemon stops): a recording hold is dropped;
// a tail is cut short and the hold goes on to its end.
func TestShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, params(), nil)
		r.speak(3)
		r.cancel()
		res := r.result()
		if res.Why != Shutdown || res.Outcome != Dropped {
			t.Errorf("Result %+v, want shutdown", res)
		}
		if got := r.owner.said(); !slices.Equal(got, []string{"collected shutdown"}) {
			t.Errorf("owner told %q", got)
		}
		r.checkEnd(res)
	})
	synctest.Test(t, func(t *testing.T) {
		r := start(t, params(), func(r *rig) { r.det.said = true })
		r.speak(3)
		r.det.setWait(silentAt(0))
		r.release(true)
		t0 := time.Now()
		r.cancel()
		res := r.result()
		if res.Why != Released || time.Since(t0) != 0 {
			t.Errorf("Result %+v after %v; want released, the tail cut at once", res, time.Since(t0))
		}
		r.checkEnd(res)
	})
}

// The hold keeps at most its bound of audio.
func TestAudioBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := params()
		p.MaxHold = time.Second
		r := start(t, p, func(r *rig) { r.det.said = true })
		r.speak(400) // 12.8 s delivered at once (a backlog)
		r.det.setWait(silentAt(tailQuiet))
		r.release(true)
		res := r.result()
		if want := maxPreRoll + p.MaxHold + maxTail + time.Second; res.Audio != want {
			t.Errorf("kept %v, want the bound %v", res.Audio, want)
		}
		r.checkEnd(res)
	})
}

// Live text: each piece decided while the key is held is handed to the
// owner at once, in order, and never again; what is decided after the
// release is the Result's Rest. A piece that fails does not make the
// hold decode its whole audio again (the pieces handed out are typed):
// the audio after the last piece is decoded once, after their text.
func TestLivePieces(t *testing.T) {
	for _, tc := range []struct {
		name         string
		fn           func(ctx context.Context, c *call) (string, error)
		handedBefore []string // handed out before the release
		text, rest   string
		calls        []call
	}{
		{name: "two pieces held, the last at the release", handedBefore: []string{"piece1", "piece2"},
			text: "piece1 piece2 piece3", rest: "piece3",
			calls: []call{{from: 0, samples: 10 * block}, {from: 10 * block, samples: 10 * block, said: "piece1"},
				{from: 20 * block, samples: 5 * block, said: "piece1 piece2"}}},
		{name: "the second piece fails: the rest after the first", handedBefore: []string{"piece1"},
			fn: func(ctx context.Context, c *call) (string, error) {
				if c.n == 2 {
					return "", errors.New("decoder died")
				}
				return fmt.Sprintf("piece%d", c.n), nil
			},
			text: "piece1 piece3", rest: "piece3",
			calls: []call{{from: 0, samples: 10 * block}, {from: 10 * block, samples: 10 * block, said: "piece1"},
				{from: 10 * block, samples: 15 * block, said: "piece1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := params()
				p.Pieces, p.Speculate, p.Live = true, true, true
				r := start(t, p, func(r *rig) { r.dec.fn = tc.fn })
				r.det.onEnd = func(d *fakeDetector) { // the flush ends the open span
					d.emit(vadlink.Event{Kind: vadlink.SpeechEnd, At: d.fed, Since: d.fed - block})
					d.emit(vadlink.Event{Kind: vadlink.Ended, At: d.fed, Since: d.fed - block, Said: true})
					d.close()
				}
				r.emit(vadlink.Event{Kind: vadlink.SpeechStart, At: 0})
				r.speak(10)
				r.emit(vadlink.Event{Kind: vadlink.SpeechEnd, At: at(10), Since: at(9)})
				r.speak(10)
				r.emit(vadlink.Event{Kind: vadlink.SpeechEnd, At: at(20), Since: at(19)})
				r.speak(5)
				if got := r.owner.handed(); !slices.Equal(got, tc.handedBefore) {
					t.Errorf("pieces handed out while held: %q, want %q", got, tc.handedBefore)
				}
				r.det.setWait(silentAt(tailQuiet))
				r.release(true)
				res := r.result()
				if res.Outcome != Decoded || res.Text != tc.text || !slices.Equal(res.Pieces, tc.handedBefore) || res.Rest != tc.rest {
					t.Errorf("Result %+v; want decoded %q, pieces %q, rest %q", res, tc.text, tc.handedBefore, tc.rest)
				}
				if got := r.owner.handed(); !slices.Equal(got, tc.handedBefore) {
					t.Errorf("pieces handed out: %q, want only those held %q", got, tc.handedBefore)
				}
				var got []call
				for _, c := range r.dec.snapshot() {
					got = append(got, call{from: c.from, samples: c.samples, said: c.said})
				}
				if !slices.Equal(got, tc.calls) {
					t.Errorf("decodes %+v, want %+v", got, tc.calls)
				}
				r.checkEnd(res)
			})
		})
	}
}

// Tentative text: while a piece is spoken its audio so far is decoded
// as a guess, once per TentativeEvery of audio at most and only while
// no other decode runs, and shown; a piece's decode abandons a guess
// running (its late text is never shown), no guess is made between
// spans, and the release abandons a guess running, so the rest's decode
// waits for none.
func TestLiveTentative(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := params()
		p.Pieces, p.Speculate, p.Live, p.Tentative = true, true, true, true
		// Guesses 2 and 4 hang until abandoned; every other decode
		// answers at once.
		r := start(t, p, func(r *rig) {
			r.dec.fn = func(ctx context.Context, c *call) (string, error) {
				if c.n == 2 || c.n == 4 {
					return blocking(ctx, c)
				}
				return fmt.Sprintf("piece%d", c.n), nil
			}
		})
		r.det.onEnd = func(d *fakeDetector) {
			d.emit(vadlink.Event{Kind: vadlink.SpeechEnd, At: d.fed, Since: d.fed - block})
			d.emit(vadlink.Event{Kind: vadlink.Ended, At: d.fed, Since: d.fed - block, Said: true})
			d.close()
		}
		every := int(pcm.Samples(TentativeEvery)+block-1) / block // blocks
		r.speak(every)                                            // no span open yet: no guess
		if n := len(r.dec.snapshot()); n != 0 {
			t.Fatalf("%d decodes before any voice, want none", n)
		}
		r.emit(vadlink.Event{Kind: vadlink.SpeechStart, At: at(every)})
		r.speak(every + 8)
		if got := r.owner.shown(); !slices.Equal(got, []string{"piece1"}) {
			t.Fatalf("guesses shown %q, want the first guess only", got)
		}
		r.speak(every) // guess 2 starts and hangs
		r.emit(vadlink.Event{Kind: vadlink.SpeechEnd, At: at(3*every + 8), Since: at(3*every + 7)})
		if got := r.owner.handed(); !slices.Equal(got, []string{"piece3"}) {
			t.Fatalf("pieces %q, want piece3 (the piece's decode did not wait for the guess)", got)
		}
		r.speak(2 * every) // between spans: no guess
		r.emit(vadlink.Event{Kind: vadlink.SpeechStart, At: at(5*every + 8)})
		r.speak(every + 2) // guess 4 starts and hangs
		r.det.setWait(silentAt(tailQuiet))
		r.release(true)
		res := r.result()
		calls := r.dec.snapshot()
		if len(calls) != 5 {
			t.Fatalf("%d decodes %+v, want 5 (guess, guess, piece, guess, rest)", len(calls), calls)
		}
		if !calls[1].canceled || !calls[3].canceled || calls[0].canceled || calls[2].canceled || calls[4].canceled {
			t.Errorf("decodes %+v: want guesses 2 and 4 abandoned, none else", calls)
		}
		if calls[2].from != 0 || calls[4].from != calls[2].samples%32768 || calls[3].from != calls[4].from ||
			calls[4].said != "piece3" || calls[3].said != "piece3" {
			t.Errorf("decodes %+v: want the piece from 0, the guess and the rest after it with its text", calls)
		}
		if got := r.owner.shown(); !slices.Equal(got, []string{"piece1"}) {
			t.Errorf("guesses shown %q, want only piece1 (abandoned ones never)", got)
		}
		if res.Outcome != Decoded || res.Text != "piece3 piece5" || res.Rest != "piece5" {
			t.Errorf("Result %+v; want piece3 piece5 with the rest piece5", res)
		}
		r.checkEnd(res)
	})
}

// Live text off: nothing is handed out while the key is held.
func TestLiveOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := params()
		p.Pieces = true
		r := start(t, p, nil)
		r.emit(vadlink.Event{Kind: vadlink.SpeechStart, At: 0})
		r.speak(10)
		r.emit(vadlink.Event{Kind: vadlink.SpeechEnd, At: at(10), Since: at(9)})
		r.speak(5)
		r.det.said = true
		r.det.setWait(silentAt(tailQuiet))
		r.release(true)
		res := r.result()
		if got := r.owner.handed(); len(got) != 0 || len(res.Pieces) != 0 {
			t.Errorf("handed out %q, Result.Pieces %q; want none without live text", got, res.Pieces)
		}
		r.checkEnd(res)
	})
}
