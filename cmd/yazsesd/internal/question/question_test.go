package question

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/yazses/yazses/cmd/yazsesd/internal/vadlink"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/gate"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/tts"
	"github.com/yazses/yazses/lib/untrusted"
	"github.com/yazses/yazses/lib/vadspan"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// chunk is the fake microphone's delivery: 100 ms every 100 ms.
const chunk = 1600

// world is one question's surroundings: the fakes' scripts and what they
// saw. Times are the bubble's fake clock from the call's start.
type world struct {
	mu       sync.Mutex
	timeline []string // "started", "commit", "release", "skip", … in order
	wg       sync.WaitGroup

	// house
	hold      chan struct{} // non-nil: a hold is open until closed
	holdFrom  int           // >0: the hold is seen from this WaitNoHold call on
	waits     int
	takeBlock bool    // the turn never comes
	enterErrs []error // Enter's errors before it succeeds
	tallyErr  error   // for ask.reserved
	barge     chan struct{}
	entered   int
	left      int
	taken     int
	given     int
	tallies   []string
	audits    []string

	// gate
	reserveErr  error
	reserveErrs []error // the errors of the reserves after the first, in turn
	reserves    int

	// reloads
	cut    context.Context
	endCut context.CancelFunc
	off    bool
	turn   chan struct{} // non-nil: the turn comes when it is closed

	// speaker
	notReady bool
	speakErr error
	startAt  time.Duration // "started" after this; 0: the default
	doneAt   time.Duration // "done" after this (from the start of the call)
	failAt   time.Duration // >0: "failed" at this time instead of done
	lateMute bool          // that "failed" says audible=false (no sample proven heard)
	unheard  bool          // "failed" audible=false at startAt instead of started
	dies     bool          // the channel closes at startAt, no final event
	mute     bool          // a skipped speech never says how it ended

	// microphone
	micEnds   bool // the stream ends (a nil chunk) at once
	micSilent bool // it never delivers
	listens   int
	stops     int

	// detector
	det        detScript // the first use's
	energy     detScript // energy uses'
	beginNil   bool
	energyNil  bool
	uses       []*fakeDetection
	restarts   int
	energyUses int

	// decoder
	text     string
	lost     int // the first lost calls lose the answer
	decErr   error
	decBlock bool
	decoded  []int
}

// detScript is where a fake detector hears speech, in samples of the
// answer: a span [start, end) reported once the audio reaches it (the
// end after the answer's silence).
type detScript struct {
	start, end int64 // end 0: no speech; end < 0: speech that does not end
	failAt     int64 // >0: Failed once this much audio was fed
	stuck      bool  // it never answers (Pos stays 0, End unanswered)
}

func (w *world) note(s string) {
	w.mu.Lock()
	w.timeline = append(w.timeline, s)
	w.mu.Unlock()
}

func (w *world) seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.timeline)
}

type fakeHouse struct{ *world }

func (h fakeHouse) WaitNoHold(ctx context.Context) bool {
	h.mu.Lock()
	hold := h.hold
	h.waits++
	if h.waits < h.holdFrom {
		hold = nil
	}
	h.mu.Unlock()
	if hold == nil {
		return true
	}
	select {
	case <-hold:
		return true
	case <-ctx.Done():
		return false
	}
}

func (h fakeHouse) Take(ctx context.Context) (func(), error) {
	if h.takeBlock {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if h.turn != nil {
		select {
		case <-h.turn:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	h.taken++
	return func() { h.given++ }, nil
}

func (h fakeHouse) Enter() (Barge, func(), error) {
	if len(h.enterErrs) > 0 {
		err := h.enterErrs[0]
		h.enterErrs = h.enterErrs[1:]
		return nil, nil, err
	}
	h.entered++
	return fakeBarge{h.barge}, func() { h.left++ }, nil
}

func (h fakeHouse) SetPhase(string) {}

func (h fakeHouse) Cut() context.Context {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cut == nil {
		h.cut, h.endCut = context.WithCancel(context.Background())
	}
	return h.cut
}

func (h fakeHouse) Off() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.off
}

// reload is a reload that lowers the cap (off: turns questions off).
func (w *world) reload(off bool) {
	w.mu.Lock()
	w.off = off
	end := w.endCut
	w.cut, w.endCut = context.WithCancel(context.Background())
	w.mu.Unlock()
	if end != nil {
		end()
	}
}

func (h fakeHouse) Tally(kind, reason string) error {
	h.note("tally " + kind)
	h.tallies = append(h.tallies, kind+" "+reason)
	if kind == "ask.reserved" {
		return h.tallyErr
	}
	return nil
}

func (h fakeHouse) Audit(kind, reason string) {
	h.note("audit " + kind)
	h.audits = append(h.audits, kind)
}

type fakeBarge struct{ c chan struct{} }

func (b fakeBarge) Done() <-chan struct{} { return b.c }
func (b fakeBarge) Reason() string        { return daemonapi.ReasonInterrupted }

type fakeGate struct{ *world }

func (g fakeGate) Reserve(context.Context) (string, error) {
	g.reserves++
	tok := fmt.Sprintf("t%d", g.reserves)
	g.note("reserve " + tok)
	if g.reserves == 1 {
		return tok, g.reserveErr
	}
	var err error
	if len(g.reserveErrs) > 0 {
		err, g.reserveErrs = g.reserveErrs[0], g.reserveErrs[1:]
	}
	return tok, err
}

func (g fakeGate) Commit(_ context.Context, tok string) error {
	g.note("commit " + tok)
	return nil
}

func (g fakeGate) Release(_ context.Context, tok string) error {
	g.note("release " + tok)
	return nil
}

type fakeSpeaker struct {
	*world
	skip chan struct{}
	once *sync.Once
}

func (s fakeSpeaker) Ready(context.Context) bool { return !s.notReady }

func (s fakeSpeaker) Skip() {
	s.note("skip")
	s.once.Do(func() { close(s.skip) })
}

// Speak plays as the script says, in a goroutine the test waits for.
func (s fakeSpeaker) Speak(text string) (<-chan tts.Event, error) {
	if text != Label+"Ship it?" {
		return nil, errors.New("wrong text")
	}
	if s.speakErr != nil {
		return nil, s.speakErr
	}
	s.note("speak")
	ch := make(chan tts.Event, 3)
	s.wg.Go(func() {
		started := false
		end := func(ev tts.Event) {
			if ev.Event != "" {
				ch <- ev
			}
			close(ch)
		}
		t := time.NewTimer(s.startAt)
		defer t.Stop()
		for {
			select {
			case <-s.skip:
				if !s.mute {
					end(tts.Event{Event: tts.EventFailed, Audible: started})
				}
				return
			case <-t.C:
			}
			switch {
			case started && s.failAt > 0:
				end(tts.Event{Event: tts.EventFailed, Audible: !s.lateMute})
				return
			case started:
				s.note("played") // the device played it out
				end(tts.Event{Event: tts.EventDone})
				return
			case s.dies:
				end(tts.Event{})
				return
			case s.unheard:
				end(tts.Event{Event: tts.EventFailed})
				return
			}
			started = true
			s.note("started") // audio reached the device
			ch <- tts.Event{Event: tts.EventStarted}
			if s.failAt > 0 {
				t.Reset(s.failAt - s.startAt)
			} else {
				t.Reset(s.doneAt - s.startAt)
			}
		}
	})
	return ch, nil
}

type fakeMic struct{ *world }

func (m fakeMic) Listen() (<-chan []int16, func()) {
	m.listens++
	m.note("listen")
	audio, stop := make(chan []int16), make(chan struct{})
	var once sync.Once
	m.wg.Go(func() {
		if m.micSilent {
			<-stop
			return
		}
		if m.micEnds {
			select {
			case audio <- nil:
			case <-stop:
			}
			<-stop
			return
		}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
			case <-stop:
				return
			}
			select {
			case audio <- make([]int16, chunk):
			case <-stop:
				return
			}
		}
	})
	return audio, func() {
		once.Do(func() {
			m.stops++
			close(stop)
		})
	}
}

type fakeDetector struct{ *world }

func (d fakeDetector) Begin(vadspan.Params) Detection {
	if d.beginNil {
		return nil
	}
	u := &fakeDetection{s: d.det, ev: make(chan vadlink.Event, 16), w: d.world}
	d.uses = append(d.uses, u)
	return u
}

func (d fakeDetector) BeginEnergy(vadspan.Params) Detection {
	if d.energyNil {
		return nil
	}
	d.energyUses++
	u := &fakeDetection{s: d.energy, energy: true, ev: make(chan vadlink.Event, 16), w: d.world}
	d.uses = append(d.uses, u)
	return u
}

// silenceN is the answer's pause (ask.answer_silence_ms in testConfig).
var silenceN = int64(pcm.Samples(800 * time.Millisecond))

type fakeDetection struct {
	w                *world
	s                detScript
	energy           bool
	ev               chan vadlink.Event
	fed              int64
	said, over, done bool // a span started, ended; the use ended or failed
	released         bool
}

func (u *fakeDetection) Feed(s []int16) {
	if u.done || u.s.stuck {
		return
	}
	u.fed += int64(len(s))
	if u.s.failAt > 0 && u.fed >= u.s.failAt {
		u.done = true
		u.ev <- vadlink.Event{Kind: vadlink.Failed, Err: errors.New("child exited")}
		close(u.ev)
		return
	}
	if u.s.end != 0 && !u.said && u.fed >= u.s.start {
		u.said = true
		u.ev <- vadlink.Event{Kind: vadlink.SpeechStart, At: u.s.start}
	}
	if u.said && !u.over && u.s.end > 0 && u.fed >= u.s.end+silenceN {
		u.over = true
		u.ev <- vadlink.Event{Kind: vadlink.SpeechEnd, At: u.s.end}
	}
}

func (u *fakeDetection) End() {
	if u.done || u.s.stuck {
		return
	}
	u.done = true
	if u.said && !u.over {
		u.ev <- vadlink.Event{Kind: vadlink.SpeechEnd, At: u.fed}
	}
	u.ev <- vadlink.Event{Kind: vadlink.Ended, At: u.fed}
	close(u.ev)
}

func (u *fakeDetection) Events() <-chan vadlink.Event { return u.ev }

func (u *fakeDetection) State() vadlink.State {
	if u.s.stuck {
		return vadlink.State{}
	}
	return vadlink.State{Pos: u.fed - u.fed%vadspan.Window, Ended: u.done && !u.s.stuck && u.s.failAt == 0}
}

func (u *fakeDetection) Energy() bool { return u.energy }
func (u *fakeDetection) Engine() string {
	if u.energy {
		return "energy"
	}
	return "silero"
}
func (u *fakeDetection) Restart() { u.w.restarts++ }
func (u *fakeDetection) Release() { u.released = true }

type fakeDecoder struct{ *world }

func (d fakeDecoder) Decode(ctx context.Context, samples []int16) (string, error) {
	d.note("decode")
	d.decoded = append(d.decoded, len(samples))
	switch {
	case d.decBlock:
		<-ctx.Done()
		return "", ctx.Err()
	case d.lost > 0:
		d.lost--
		return "", ErrLost
	case d.decErr != nil:
		return "", d.decErr
	}
	return d.text, nil
}

func (d fakeDecoder) WaitUp(context.Context) error { return nil }

func testConfig() config.Config {
	cfg := config.Default()
	cfg.Ask = config.Ask{MaxTimeoutS: 45, DefaultTimeoutS: 45, AnswerSilenceMs: 800, MaxAnswerS: 10, GuardMs: 300}
	cfg.VAD.Threshold = 0.5
	return cfg
}

// samples of the answer: a second is 16 000.
func at(d time.Duration) int64 { return int64(pcm.Samples(d)) }

// event is something the test does at a time of the fake clock.
type event struct {
	at time.Duration
	do string // "barge", "cancel", "hold ends"
}

// The question plays from 0.1 s to 2.05 s; the answer is listened for
// from 2.35 s on (a 300 ms guard), 100 ms of audio every 100 ms. It is
// said from 0.5 s to 1.5 s of the answer, whose end the detector reports
// 800 ms later: decoded 1 s of audio, answered at 4.65 s. (The times keep
// clear of whole seconds, where the timeouts fall.)
func TestQuestion(t *testing.T) {
	answered := daemonapi.AskResult{Result: daemonapi.Answered, Answer: "yes, ship it"}
	noAnswer := func(reason string) daemonapi.AskResult {
		return daemonapi.AskResult{Result: daemonapi.NoAnswer, Reason: reason}
	}
	deferred := func(reason string) daemonapi.AskResult {
		return daemonapi.AskResult{Result: daemonapi.Deferred, Reason: reason}
	}
	unavailable := func(reason string) daemonapi.AskResult {
		return daemonapi.AskResult{Result: daemonapi.Unavailable, Reason: reason}
	}
	const (
		charged  = "commit t1"
		refunded = "release t1"
		none     = ""
	)
	speech := detScript{start: at(500 * time.Millisecond), end: at(1500 * time.Millisecond)}
	for _, tc := range []struct {
		name     string
		timeoutS int
		set      func(w *world)
		events   []event
		want     daemonapi.AskResult
		settled  string // the settlements, in order ("commit t1"), or none
		decoded  []int  // sample counts handed to the decoder
		silent   bool   // nothing was sent to the speaker
	}{
		{name: "answered", want: answered, settled: charged, decoded: []int{int(at(time.Second))}},
		{name: "answer window ends in silence", set: func(w *world) { w.det = detScript{} },
			want: noAnswer(daemonapi.ReasonSilence), settled: charged},
		{name: "no sample in the answer window", set: func(w *world) { w.micSilent = true },
			want: noAnswer(daemonapi.ReasonCaptureFailed), settled: charged},
		{name: "microphone stream ends at once", set: func(w *world) { w.micEnds = true },
			want: noAnswer(daemonapi.ReasonCaptureFailed), settled: charged},
		{name: "an answer into the deadline is still decoded", timeoutS: 5,
			set:  func(w *world) { w.det = detScript{start: at(500 * time.Millisecond), end: -1} },
			want: answered, settled: charged, decoded: []int{26*chunk - int(at(500*time.Millisecond))}}, // 26 chunks by 5 s
		{name: "a hold began as it entered: waits again", set: func(w *world) { w.enterErrs = []error{ErrHolding} },
			want: answered, settled: charged, decoded: []int{int(at(time.Second))}},
		{name: "hold outlasts the timeout: nothing reserved", timeoutS: 3, set: func(w *world) { w.hold = make(chan struct{}) },
			want: deferred(daemonapi.ReasonHolding), settled: none},
		{name: "hold ends: asked", set: func(w *world) { w.hold = make(chan struct{}) }, events: []event{{time.Second, "hold ends"}},
			want: answered, settled: charged, decoded: []int{int(at(time.Second))}},

		// The gate, the audit log, the daemon.
		{name: "budget exhausted", set: func(w *world) {
			w.reserveErr = &gate.Refused{Reason: gate.ReasonBudgetExhausted, RetryAfter: 90 * time.Second}
		}, want: daemonapi.AskResult{Result: daemonapi.Refused, Reason: daemonapi.ReasonBudgetExhausted, RetryAfterS: 90}, settled: none},
		{name: "no gate", set: func(w *world) { w.reserveErr = errors.New("gate down") },
			want: unavailable(daemonapi.ReasonGateUnavailable), settled: none},
		{name: "audit log fails: refunded", set: func(w *world) { w.tallyErr = errors.New("disk full") },
			want: unavailable(daemonapi.ReasonAuditUnavailable), settled: refunded},
		{name: "daemon closing: refunded", set: func(w *world) { w.enterErrs = []error{ErrClosing} },
			want: unavailable(daemonapi.ReasonShuttingDown), settled: refunded},

		// The speaker, before and after the first sample.
		{name: "speaker down: refunded", set: func(w *world) { w.notReady = true },
			want: unavailable(daemonapi.ReasonTTSUnavailable), settled: refunded},
		{name: "speak request not sent: refunded", set: func(w *world) { w.speakErr = errors.New("not running") },
			want: unavailable(daemonapi.ReasonTTSUnavailable), settled: refunded},
		{name: "speaker failed before any sample: refunded", set: func(w *world) { w.unheard = true },
			want: unavailable(daemonapi.ReasonTTSUnavailable), settled: refunded},
		{name: "speaker died without a final event: charged", set: func(w *world) { w.dies = true },
			want: noAnswer(daemonapi.ReasonSpeakFailed), settled: charged},
		{name: "speaker failed after the first sample: charged", set: func(w *world) { w.failAt = time.Second },
			want: noAnswer(daemonapi.ReasonSpeakFailed), settled: charged},
		{name: "speaker started, then failed saying unheard: charged", set: func(w *world) { w.failAt, w.lateMute = time.Second, true },
			want: noAnswer(daemonapi.ReasonSpeakFailed), settled: charged},

		// Barge-in: a hold starts.
		{name: "barge-in before the first sample: refunded", set: func(w *world) { w.startAt = time.Second },
			events: []event{{500 * time.Millisecond, "barge"}}, want: deferred(daemonapi.ReasonHolding), settled: refunded},
		{name: "barge-in during speech", events: []event{{time.Second, "barge"}},
			want: noAnswer(daemonapi.ReasonInterrupted), settled: charged},
		{name: "barge-in, the speaker never says how it ended", set: func(w *world) { w.mute = true },
			events: []event{{time.Second, "barge"}}, want: noAnswer(daemonapi.ReasonInterrupted), settled: charged},
		{name: "barge-in during the guard", events: []event{{2100 * time.Millisecond, "barge"}},
			want: noAnswer(daemonapi.ReasonInterrupted), settled: charged},
		{name: "barge-in during the answer", events: []event{{3 * time.Second, "barge"}},
			want: noAnswer(daemonapi.ReasonInterrupted), settled: charged},

		// The timeout and cancel at every state.
		{name: "timeout before the first sample: refunded", timeoutS: 4, set: func(w *world) { w.startAt = 4500 * time.Millisecond },
			want: deferred(daemonapi.ReasonTimeout), settled: refunded},
		{name: "timeout during speech", timeoutS: 4, set: func(w *world) { w.doneAt = 5 * time.Second },
			want: noAnswer(daemonapi.ReasonTimeout), settled: charged},

		// Too little time left to speak the question (6 words at 170 a
		// minute: 2.12 s) and hear the shortest answer (the 300 ms guard,
		// 250 ms of speech, the 800 ms pause): 3.47 s. Not started, given
		// back unspent.
		{name: "a timeout shorter than the question needs: nothing reserved", timeoutS: 3,
			want: deferred(daemonapi.ReasonTimeout), settled: none, silent: true},
		{name: "the turn comes too late: not started", set: func(w *world) { w.turn = make(chan struct{}) },
			events: []event{{42*time.Second + 500*time.Millisecond, "turn"}},
			want:   deferred(daemonapi.ReasonTimeout), settled: refunded, silent: true},
		{name: "the turn comes in time: asked", set: func(w *world) { w.turn = make(chan struct{}) },
			events: []event{{40 * time.Second, "turn"}},
			want:   answered, settled: charged, decoded: []int{int(at(time.Second))}},
		{name: "a hold ends too late: nothing reserved", set: func(w *world) { w.hold = make(chan struct{}) },
			events: []event{{42*time.Second + 500*time.Millisecond, "hold ends"}},
			want:   deferred(daemonapi.ReasonTimeout), settled: none, silent: true},
		{name: "a hold after the turn ends too late: not started, refunded", set: func(w *world) { w.hold, w.holdFrom = make(chan struct{}), 2 },
			events: []event{{42*time.Second + 500*time.Millisecond, "hold ends"}},
			want:   deferred(daemonapi.ReasonTimeout), settled: refunded, silent: true},

		// A reload that lowers the cap or turns questions off, before the
		// question is asked and while it is.
		{name: "reload turns questions off while the turn is awaited: refused, refunded", set: func(w *world) { w.turn = make(chan struct{}) },
			events: []event{{time.Second, "off"}},
			want:   daemonapi.AskResult{Result: daemonapi.Refused, Reason: daemonapi.ReasonDisabled}, settled: refunded, silent: true},
		{name: "reload lowers the cap to none left: refused, refunded", set: func(w *world) {
			w.turn = make(chan struct{})
			w.reserveErrs = []error{&gate.Refused{Reason: gate.ReasonBudgetExhausted, RetryAfter: 90 * time.Second}}
		}, events: []event{{time.Second, "cut"}},
			want: daemonapi.AskResult{Result: daemonapi.Refused, Reason: daemonapi.ReasonBudgetExhausted, RetryAfterS: 90}, settled: refunded, silent: true},
		{name: "reload lowers the cap to 0: refused disabled, refunded", set: func(w *world) {
			w.turn = make(chan struct{})
			w.reserveErrs = []error{&gate.Refused{Reason: gate.ReasonDisabled}}
		}, events: []event{{time.Second, "cut"}},
			want: daemonapi.AskResult{Result: daemonapi.Refused, Reason: daemonapi.ReasonDisabled}, settled: refunded, silent: true},
		{name: "reload lowers the cap, a slot is left: reserved again and asked", set: func(w *world) { w.turn = make(chan struct{}) },
			events: []event{{time.Second, "cut"}, {2 * time.Second, "turn"}},
			want:   answered, settled: "release t1, commit t2", decoded: []int{int(at(time.Second))}},
		{name: "reload turns questions off after the turn, while a hold is awaited: refunded", set: func(w *world) {
			w.hold, w.holdFrom = make(chan struct{}), 2
		}, events: []event{{time.Second, "off"}},
			want: daemonapi.AskResult{Result: daemonapi.Refused, Reason: daemonapi.ReasonDisabled}, settled: refunded, silent: true},
		{name: "reload turns questions off while a hold is awaited: refused, nothing reserved", set: func(w *world) { w.hold = make(chan struct{}) },
			events: []event{{time.Second, "off"}, {2 * time.Second, "hold ends"}},
			want:   daemonapi.AskResult{Result: daemonapi.Refused, Reason: daemonapi.ReasonDisabled}, settled: none, silent: true},
		{name: "reload turns questions off during speech: the question goes on", events: []event{{time.Second, "off"}},
			want: answered, settled: charged, decoded: []int{int(at(time.Second))}},
		{name: "cancel while a hold is open", set: func(w *world) { w.hold = make(chan struct{}) },
			events: []event{{time.Second, "cancel"}}, want: deferred(daemonapi.ReasonCancelled), settled: none},
		{name: "cancel waiting for the turn: refunded", set: func(w *world) { w.takeBlock = true },
			events: []event{{time.Second, "cancel"}}, want: deferred(daemonapi.ReasonCancelled), settled: refunded},
		{name: "cancel before the first sample: refunded", set: func(w *world) { w.startAt = time.Second },
			events: []event{{500 * time.Millisecond, "cancel"}}, want: deferred(daemonapi.ReasonCancelled), settled: refunded},
		{name: "cancel during speech", events: []event{{time.Second, "cancel"}},
			want: noAnswer(daemonapi.ReasonCancelled), settled: charged},
		{name: "cancel during the guard", events: []event{{2100 * time.Millisecond, "cancel"}},
			want: noAnswer(daemonapi.ReasonCancelled), settled: charged},
		{name: "cancel during the answer", events: []event{{3 * time.Second, "cancel"}},
			want: noAnswer(daemonapi.ReasonCancelled), settled: charged},
		{name: "cancel during decoding", set: func(w *world) { w.decBlock = true }, events: []event{{10 * time.Second, "cancel"}},
			want: noAnswer(daemonapi.ReasonCancelled), settled: charged, decoded: []int{int(at(time.Second))}},

		// The detector failing or changing mid-answer.
		{name: "detector fails mid-answer: the energy detector goes on", set: func(w *world) {
			w.det = detScript{failAt: at(time.Second)}
			w.energy = speech
		}, want: answered, settled: charged, decoded: []int{int(at(time.Second))}},
		{name: "detector stops answering: restarted, the energy detector goes on", set: func(w *world) {
			w.det = detScript{stuck: true}
			w.energy = speech
		}, want: answered, settled: charged, decoded: []int{int(at(time.Second))}},
		{name: "energy detector fails: stopping", set: func(w *world) {
			w.det = detScript{failAt: at(time.Second)}
			w.energy = detScript{failAt: 1}
		}, want: noAnswer(daemonapi.ReasonCancelled), settled: charged},
		{name: "energy detector cannot begin after a failure", set: func(w *world) {
			w.det = detScript{failAt: at(time.Second)}
			w.energyNil = true
		}, want: noAnswer(daemonapi.ReasonCancelled), settled: charged},
		{name: "no detector at all: the daemon is stopping", set: func(w *world) { w.beginNil = true },
			want: noAnswer(daemonapi.ReasonCancelled), settled: charged},
		{name: "energy detector silent: the whole recording is decoded", set: func(w *world) {
			w.det = detScript{failAt: at(time.Second)}
			w.energy = detScript{stuck: true}
		}, want: answered, settled: charged, decoded: []int{int(at(6 * time.Second))}}, // given up 5 s after it took over at 3.35 s

		// The decoder.
		{name: "decoder lost the answer: tried again", set: func(w *world) { w.lost = 1 },
			want: answered, settled: charged, decoded: []int{int(at(time.Second)), int(at(time.Second))}},
		{name: "decoder failed", set: func(w *world) { w.decErr = errors.New("exit 1") },
			want: noAnswer(daemonapi.ReasonDecodeFail), settled: charged, decoded: []int{int(at(time.Second))}},
		{name: "nothing decoded", set: func(w *world) { w.text = " \n" },
			want: noAnswer(daemonapi.ReasonSilence), settled: charged, decoded: []int{int(at(time.Second))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := &world{barge: make(chan struct{}), startAt: 100 * time.Millisecond, doneAt: 2050 * time.Millisecond,
					det: speech, energy: speech, text: "yes, ship it\n"}
				if tc.set != nil {
					tc.set(w)
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				env := Env{
					House: fakeHouse{w}, Gate: fakeGate{w}, Mic: fakeMic{w}, Detector: fakeDetector{w}, Decoder: fakeDecoder{w},
					Speaker: fakeSpeaker{world: w, skip: make(chan struct{}), once: new(sync.Once)},
					Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
				}
				q, err := untrusted.CheckQuestion("Ship\x07 it?")
				if err != nil {
					t.Fatal(err)
				}
				res := make(chan daemonapi.AskResult, 1)
				w.wg.Go(func() { res <- Run(ctx, env, testConfig(), q, tc.timeoutS) })
				var now time.Duration
				for _, e := range tc.events {
					time.Sleep(e.at - now) // the bubble's clock
					now = e.at
					synctest.Wait() // everything due by now has happened
					switch e.do {
					case "barge":
						close(w.barge)
					case "cancel":
						cancel()
					case "hold ends":
						close(w.hold)
					case "turn":
						close(w.turn)
					case "off":
						w.reload(true)
					case "cut":
						w.reload(false)
					}
				}
				got := <-res
				w.wg.Wait() // the fakes' goroutines: the speech, the microphone
				if got != tc.want {
					t.Errorf("Run = %+v, want %+v", got, tc.want)
				}
				w.check(t, tc.settled)
				if tc.silent && slices.Contains(w.seen(), "speak") {
					t.Errorf("sent to the speaker, want nothing sent (timeline %q)", w.seen())
				}
				if !slices.Equal(w.decoded, tc.decoded) {
					t.Errorf("decoded %v samples, want %v", w.decoded, tc.decoded)
				}
			})
		})
	}
}

// check holds on every way out: one settlement at most, commit only once
// audio may have reached the device, release only when none did, each
// with its audit; everything begun is ended.
func (w *world) check(t *testing.T, settled string) {
	t.Helper()
	tl := w.seen()
	var settles []string
	for _, s := range tl {
		if strings.HasPrefix(s, "commit ") || strings.HasPrefix(s, "release ") {
			settles = append(settles, s)
		}
	}
	want := []string{}
	if settled != "" {
		want = strings.Split(settled, ", ")
	}
	if !slices.Equal(settles, want) && !(len(settles) == 0 && len(want) == 0) {
		t.Errorf("settled %q, want %q (timeline %q)", settles, want, tl)
	}
	started := slices.Index(tl, "started")
	commit := slices.IndexFunc(tl, func(s string) bool { return strings.HasPrefix(s, "commit ") })
	release := slices.IndexFunc(tl, func(s string) bool { return strings.HasPrefix(s, "release ") })
	if commit >= 0 && started >= 0 && commit < started {
		t.Errorf("committed before audio reached the device: %q", tl)
	}
	// Charged as soon as it plays, not when it ends: a daemon that dies
	// mid-question has already committed.
	if played := slices.Index(tl, "played"); played >= 0 && (commit < 0 || commit > played) {
		t.Errorf("not committed while the question played: %q", tl)
	}
	if release >= 0 && started >= 0 && release > started {
		t.Errorf("released a slot whose audio reached the device: %q", tl)
	}
	if (commit >= 0) != slices.Contains(w.audits, "ask.spoken") {
		t.Errorf("commit without its ask.spoken line, or the line without it: %q, audits %q", tl, w.audits)
	}
	if (release >= 0) != slices.ContainsFunc(w.tallies, func(s string) bool { return strings.HasPrefix(s, "ask.released") }) {
		t.Errorf("release without its ask.released line, or the line without it: %q, tallies %q", tl, w.tallies)
	}
	if w.entered != w.left {
		t.Errorf("entered %d times, left %d", w.entered, w.left)
	}
	if w.taken != w.given {
		t.Errorf("took the turn %d times, gave it back %d", w.taken, w.given)
	}
	if w.listens != w.stops {
		t.Errorf("listened %d times, stopped %d", w.listens, w.stops)
	}
	for i, u := range w.uses {
		if !u.released {
			t.Errorf("detector use %d (energy %v) not released", i, u.energy)
		}
	}
}

// The detector that stops answering is restarted once, and the energy
// detector takes over with the audio so far.
func TestStuckDetectorRestarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &world{barge: make(chan struct{}), startAt: 100 * time.Millisecond, doneAt: 2050 * time.Millisecond,
			det:    detScript{stuck: true},
			energy: detScript{start: at(500 * time.Millisecond), end: at(1500 * time.Millisecond)}, text: "yes"}
		env := Env{House: fakeHouse{w}, Gate: fakeGate{w}, Mic: fakeMic{w}, Detector: fakeDetector{w}, Decoder: fakeDecoder{w},
			Speaker: fakeSpeaker{world: w, skip: make(chan struct{}), once: new(sync.Once)},
			Log:     slog.New(slog.NewTextHandler(io.Discard, nil))}
		q, _ := untrusted.CheckQuestion("Ship it?")
		start := time.Now()
		got := Run(t.Context(), env, testConfig(), q, 0)
		w.wg.Wait()
		if got.Result != daemonapi.Answered || w.restarts != 1 || w.energyUses != 1 {
			t.Errorf("Run = %+v with %d restarts and %d energy uses, want answered, 1, 1", got, w.restarts, w.energyUses)
		}
		// It is given up after answerSettle of audio it did not answer,
		// not before: listening begins at 2.3 s.
		if took := time.Since(start); took < 2350*time.Millisecond+answerSettle {
			t.Errorf("answered after %v: the detector was given up before answerSettle", took)
		}
	})
}

// The timeout is the daemon's policy alone: 0 takes the default, more than
// the maximum is cut to it.
func TestTimeout(t *testing.T) {
	ask := config.Ask{DefaultTimeoutS: 30, MaxTimeoutS: 40}
	for _, tc := range []struct {
		in   int
		want time.Duration
	}{
		{0, 30 * time.Second}, {5, 5 * time.Second}, {40, 40 * time.Second}, {999, 40 * time.Second}, {1 << 31, 40 * time.Second},
	} {
		if got := Timeout(ask, tc.in); got != tc.want {
			t.Errorf("Timeout(%d) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
