// Package livestate holds yazsesd's live state for the watch socket method
// (daemonapi.MethodWatch): what the daemon is doing (a hold listening,
// decoding or typing; a question spoken or waiting), the counters a status
// bar shows (the ask_human budget, the last results' kinds) and, only with
// the owner's opt-in, the text decoded so far in a hold.
//
// The daemon reports what happens with the Set, Add and End methods; they
// never block on a watcher. Each change that alters the state makes a new
// daemonapi.WatchEvent with the next sequence number. Subscribe gives a
// channel that always holds the latest event only: a watcher that reads
// slowly skips the events it missed (the gap in Seq says so) and never
// reads a stale one. Serve is the watch method's jsonrpc.StreamHandler.
//
// Wiring it into the daemon:
//
//	live := livestate.New(livestate.Options{Preview: cfg.Dictation.Preview})
//	srv.HandleStream(daemonapi.MethodWatch, live.Serve)
//	go live.RunBudget(ctx, d.asker.Budget) // owned: wait for it at the end
//	defer live.Close()                     // ends every watch stream
//	// on reload: live.SetPreviewEnabled(cfg.Dictation.Preview); live.RefreshBudget()
//	// on gate (re)start, reserve, commit, release: live.RefreshBudget()
//	// hold: SetHold(listening) … SetPreview(text so far), SetPieces(live
//	//       pieces decided, typed) … SetHold(decoding),
//	//       SetHold(typing), EndHold(outcome)
//	// ask:  AddWaiting(+1/-1) around a wait for the hold; the question
//	//       being asked: SetAsk(speaking), SetAsk(listening),
//	//       SetAsk(decoding), SetAsk(idle); every call: EndAsk(outcome)
//
// Nothing here logs, and the preview text leaves only through Serve, on
// the owner's socket.
package livestate

import (
	"context"
	"encoding/json"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
)

// MaxPreviewRunes caps the preview: a longer text keeps its last
// MaxPreviewRunes characters (a status bar shows the end of what was said).
const MaxPreviewRunes = 1000

// nextFreeSlack is how far two reports of the time the next budget slot
// frees may differ and still count as the same (the gate counts whole
// seconds from the moment it is asked).
const nextFreeSlack = 2 * time.Second

// Options configure a State.
type Options struct {
	// Preview is [dictation] preview: include the text decoded so far in
	// a hold in the events.
	Preview bool
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// State is the live state. Its methods are safe for concurrent use.
type State struct {
	now  func() time.Time
	kick chan struct{} // RefreshBudget's requests to RunBudget

	mu      sync.Mutex
	preview bool // the opt-in
	hold    string
	ask     string
	waiting int
	budget  daemonapi.WatchBudget
	last    struct{ hold, ask string }
	text    string // the preview, kept only with the opt-in
	pieces  daemonapi.WatchPieces
	ev      daemonapi.WatchEvent
	subs    map[chan daemonapi.WatchEvent]struct{}
	closed  bool
}

// New returns the state of a daemon that has just started: idle, event 1.
func New(opt Options) *State {
	s := &State{
		now:     opt.Now,
		kick:    make(chan struct{}, 1),
		preview: opt.Preview,
		hold:    daemonapi.StateIdle,
		ask:     daemonapi.StateIdle,
		subs:    make(map[chan daemonapi.WatchEvent]struct{}),
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.ev = s.derive()
	s.ev.Seq = 1
	s.ev.AtMs = s.now().UnixMilli()
	return s
}

// holdPhases and askPhases are the values SetHold and SetAsk take.
var (
	holdPhases = []string{daemonapi.StateIdle, daemonapi.StateListening, daemonapi.StateDecoding, daemonapi.StateTyping}
	askPhases  = []string{daemonapi.StateIdle, daemonapi.StateSpeaking, daemonapi.StateListening, daemonapi.StateDecoding}
)

func oneOf(v string, set []string) string {
	for _, s := range set {
		if v == s {
			return v
		}
	}
	return daemonapi.StateIdle
}

// SetHold sets the dictation's phase: daemonapi.StateIdle, StateListening,
// StateDecoding or StateTyping (any other value counts as idle). A hold
// that starts (listening after idle) or ends (idle) clears the preview.
func (s *State) SetHold(phase string) {
	s.update(func() {
		phase = oneOf(phase, holdPhases)
		if phase == daemonapi.StateIdle || s.hold == daemonapi.StateIdle {
			s.text, s.pieces = "", daemonapi.WatchPieces{}
		}
		s.hold = phase
	})
}

// EndHold ends the hold with its outcome (daemonapi.HoldResult.Outcome:
// "typed", "kept", "empty", …): the phase is idle and the preview cleared.
func (s *State) EndHold(outcome string) {
	s.update(func() {
		s.hold, s.text, s.last.hold = daemonapi.StateIdle, "", outcome
		s.pieces = daemonapi.WatchPieces{}
	})
}

// SetAsk sets the question's phase: daemonapi.StateIdle, StateSpeaking,
// StateListening (for the answer) or StateDecoding (the answer); any
// other value counts as idle.
func (s *State) SetAsk(phase string) {
	s.update(func() { s.ask = oneOf(phase, askPhases) })
}

// EndAsk records the kind of an ask_human call's result (LastAsk). It
// leaves the phase alone: the phase is the question's being asked, which
// SetAsk sets from its entry to its leaving, and a call that ends without
// being asked (refused, deferred, unavailable while another question is
// spoken) has none.
func (s *State) EndAsk(outcome daemonapi.Outcome) {
	s.update(func() { s.last.ask = string(outcome) })
}

// AddWaiting adds delta to the questions waiting for the hold to end
// (+1 when one starts waiting, -1 when it stops); the count never goes
// below zero.
func (s *State) AddWaiting(delta int) {
	s.update(func() { s.waiting = max(s.waiting+delta, 0) })
}

// SetBudget sets the ask_human budget from the gate's status.
func (s *State) SetBudget(b daemonapi.BudgetStatus) {
	s.update(func() {
		w := daemonapi.WatchBudget{
			PerHour:    b.PerHour,
			Used:       b.Used,
			Left:       max(b.PerHour-b.Used, 0),
			FailClosed: b.FailClosed,
			Available:  b.Available,
		}
		if b.NextFreeS > 0 {
			w.NextFreeAtMs = s.now().Add(time.Duration(b.NextFreeS) * time.Second).UnixMilli()
			// The same slot asked about again: keep the time first
			// reported, so a refresh alone makes no event.
			old := s.budget
			same := old
			same.NextFreeAtMs = w.NextFreeAtMs
			if same == w && old.NextFreeAtMs != 0 && absDuration(time.Duration(old.NextFreeAtMs-w.NextFreeAtMs)*time.Millisecond) <= nextFreeSlack {
				w.NextFreeAtMs = old.NextFreeAtMs
			}
		}
		s.budget = w
	})
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// SetPreview sets the text decoded so far in the current hold. It is
// dropped, never kept, unless the preview is enabled and a hold is active.
func (s *State) SetPreview(text string) {
	s.update(func() {
		if !s.preview || s.hold == daemonapi.StateIdle {
			return
		}
		s.text = tail(text, MaxPreviewRunes)
	})
}

// SetPieces sets the state of the current hold's live pieces (no text:
// every watcher sees it). Dropped while no hold is active.
func (s *State) SetPieces(p daemonapi.WatchPieces) {
	s.update(func() {
		if s.hold == daemonapi.StateIdle {
			return
		}
		s.pieces = p
	})
}

// SetPreviewEnabled turns the preview on or off (at a reload); off clears
// the text at once.
func (s *State) SetPreviewEnabled(on bool) {
	s.update(func() {
		s.preview = on
		if !on {
			s.text = ""
		}
	})
}

// tail returns the last n runes of text.
func tail(text string, n int) string {
	if utf8.RuneCountInString(text) <= n {
		return text
	}
	i := len(text)
	for range n {
		_, size := utf8.DecodeLastRuneInString(text[:i])
		i -= size
	}
	return text[i:]
}

// Current returns the latest event.
func (s *State) Current() daemonapi.WatchEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ev
}

// update applies f and, when the event it derives differs from the last
// one, publishes it with the next sequence number. It never blocks on a
// subscriber: each one's channel holds only the latest event.
func (s *State) update(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
	ev := s.derive()
	ev.Seq, ev.AtMs = s.ev.Seq, s.ev.AtMs
	if ev == s.ev {
		return
	}
	ev.Seq = s.ev.Seq + 1
	ev.AtMs = s.now().UnixMilli()
	s.ev = ev
	for ch := range s.subs {
		offer(ch, ev)
	}
}

// offer puts ev in ch (capacity 1) in place of any event still unread.
// Only update sends on ch, under s.mu, so the send never blocks.
func offer(ch chan daemonapi.WatchEvent, ev daemonapi.WatchEvent) {
	select {
	case <-ch:
	default:
	}
	ch <- ev
}

// derive makes the event of the current state (without Seq and AtMs);
// s.mu is held.
func (s *State) derive() daemonapi.WatchEvent {
	ev := daemonapi.WatchEvent{
		Hold:     s.hold,
		Ask:      s.ask,
		Waiting:  s.waiting,
		Budget:   s.budget,
		LastHold: s.last.hold,
		LastAsk:  s.last.ask,
		Pieces:   s.pieces,
	}
	if s.preview {
		ev.Preview = s.text
	}
	switch {
	case s.ask == daemonapi.StateSpeaking:
		ev.State = daemonapi.StateSpeaking
	case s.waiting > 0:
		ev.State = daemonapi.StateWaiting
	case s.hold != daemonapi.StateIdle:
		ev.State = s.hold
	default:
		ev.State = s.ask // idle, or listening for / decoding an answer
	}
	return ev
}

// Subscribe returns a channel that holds the latest event, starting with
// the current one, and a function that ends the subscription (it closes
// the channel; calling it again does nothing). Close closes every
// subscription's channel.
func (s *State) Subscribe() (<-chan daemonapi.WatchEvent, func()) {
	ch := make(chan daemonapi.WatchEvent, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		close(ch)
		return ch, func() {}
	}
	ch <- s.ev
	s.subs[ch] = struct{}{}
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.subs[ch]; ok {
			delete(s.subs, ch)
			close(ch)
		}
	}
}

// Close ends every subscription (and so every watch stream: the daemon is
// stopping). Later changes are still recorded, for Current.
func (s *State) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for ch := range s.subs {
		delete(s.subs, ch)
		close(ch)
	}
}

// Serve is the watch method (a jsonrpc.StreamHandler): it sends the
// current event, then the latest one after each change, until ctx ends,
// the state is closed, or the connection breaks (a watcher that went away
// is not an error). It takes no parameters.
func (s *State) Serve(ctx context.Context, params json.RawMessage, send func(any) error) error {
	if !noParams(params) {
		return jsonrpc.Errorf(jsonrpc.InvalidParams, "watch takes no parameters")
	}
	ch, cancel := s.Subscribe()
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-ch:
			if !ok {
				return nil
			}
			if send(ev) != nil {
				return nil // the watcher is gone (the server said why)
			}
		}
	}
}

func noParams(p json.RawMessage) bool {
	switch string(p) {
	case "", "null", "{}", "[]":
		return true
	}
	return false
}

// RefreshBudget asks RunBudget to read the budget again now. It never
// blocks; requests made while one is pending are one.
func (s *State) RefreshBudget() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// RunBudget keeps the budget in the events current until ctx ends: it
// reads it with query at once, at each RefreshBudget, and when the next
// slot frees (the only change no call announces). query should return
// soon (the daemon's asks the gate with a short timeout).
func (s *State) RunBudget(ctx context.Context, query func(context.Context) daemonapi.BudgetStatus) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-timer.C:
		}
		b := query(ctx)
		if ctx.Err() != nil {
			return
		}
		s.SetBudget(b)
		timer.Stop()
		if b.NextFreeS > 0 {
			// The gate counts whole seconds: a second more and the
			// slot has freed.
			timer.Reset(time.Duration(b.NextFreeS)*time.Second + time.Second)
		}
	}
}
