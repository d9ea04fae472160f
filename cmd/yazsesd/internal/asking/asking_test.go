package asking

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/yazses/yazses/cmd/yazsesd/internal/livestate"
	"github.com/yazses/yazses/cmd/yazsesd/internal/question"
	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
	"github.com/yazses/yazses/lib/untrusted"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeDaemon is a Daemon of the test's: its settings, whether a hold is
// open or the daemon closes, the marker's fate, and what it was told.
type fakeDaemon struct {
	cfg       config.Config
	holding   bool
	closing   bool
	unmarked  bool // the crash marker cannot be written
	mu        sync.Mutex
	asked     *Asked
	audited   []audit.Event
	tallied   []audit.Event
	notified  []string
	markTries int
}

func (f *fakeDaemon) Config() config.Config { return f.cfg }
func (f *fakeDaemon) Holding() (bool, <-chan struct{}) {
	return f.holding, make(chan struct{})
}

func (f *fakeDaemon) Enter(r *Asked, show func()) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.closing:
		return question.ErrClosing
	case f.holding:
		return question.ErrHolding
	}
	f.asked = r
	show()
	return nil
}

func (f *fakeDaemon) Leave(r *Asked, show func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.asked == r {
		f.asked = nil
		show()
	}
}

func (f *fakeDaemon) WhileAsked(r *Asked, show func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.asked == r {
		show()
	}
}

func (f *fakeDaemon) MarkRunning() bool {
	f.markTries++
	return !f.unmarked
}
func (f *fakeDaemon) Audit(e audit.Event)       { f.audited = append(f.audited, e) }
func (f *fakeDaemon) Tally(e audit.Event) error { f.tallied = append(f.tallied, e); return nil }
func (f *fakeDaemon) Notify(kind string)        { f.notified = append(f.notified, kind) }

func newAsker(f *fakeDaemon) (*Asker, *livestate.State) {
	live := livestate.New(livestate.Options{})
	return New(Deps{Daemon: f, Live: live, Life: context.Background(), Log: slog.New(slog.DiscardHandler)}), live
}

func mustQuestion(t *testing.T, s string) untrusted.Question {
	t.Helper()
	q, err := daemonapi.CheckQuestion(s)
	if err != nil {
		t.Fatalf("CheckQuestion(%q): %v", s, err)
	}
	return q
}

// TestAskNotAsked: a question refused before it could be asked (questions
// off, the crash marker not written: tried again at each call) asks the
// person nothing, is counted in the audit log (Tally) with its reason,
// and is the watch stream's last ask; a negative or too short timeout is
// invalid params, before anything is counted.
func TestAskNotAsked(t *testing.T) {
	q := mustQuestion(t, "Ship it?")
	ctx := context.Background()

	off := &fakeDaemon{cfg: config.Default()}
	off.cfg.MCP.AskHuman = false
	a, live := newAsker(off)
	r, err := a.Ask(ctx, q, 0)
	if err != nil || r.Result != daemonapi.Refused || r.Reason != daemonapi.ReasonDisabled {
		t.Errorf("Ask with questions off = %+v, %v; want refused disabled", r, err)
	}
	if len(off.tallied) != 1 || off.tallied[0].Kind != "ask.refused" || off.tallied[0].Reason != daemonapi.ReasonDisabled {
		t.Errorf("tallied %+v, want one ask.refused disabled", off.tallied)
	}
	if got := live.Current().LastAsk; got != string(daemonapi.Refused) {
		t.Errorf("watch's last ask = %q, want refused", got)
	}

	unmarked := &fakeDaemon{cfg: config.Default(), unmarked: true}
	unmarked.cfg.MCP.AskHuman = true
	a, _ = newAsker(unmarked)
	for range 2 {
		r, err = a.Ask(ctx, q, 0)
		if err != nil || r.Result != daemonapi.Unavailable || r.Reason != daemonapi.ReasonStateUnavailable {
			t.Errorf("Ask with no crash marker = %+v, %v; want unavailable state_unavailable", r, err)
		}
	}
	if unmarked.markTries != 2 {
		t.Errorf("the marker was written %d times for 2 questions, want 2 (each tries again)", unmarked.markTries)
	}
	if len(unmarked.tallied) != 2 || unmarked.tallied[0].Kind != "ask.unavailable" {
		t.Errorf("tallied %+v, want two ask.unavailable", unmarked.tallied)
	}
	if len(unmarked.audited) != 0 || unmarked.asked != nil {
		t.Errorf("a question never asked wrote %+v and left %v asked", unmarked.audited, unmarked.asked)
	}

	least := daemonapi.AskTimingOf(unmarked.cfg).MinTimeoutS()
	for _, timeoutS := range []int{-1, least - 1} {
		before := len(unmarked.tallied)
		r, err := a.Ask(ctx, q, timeoutS)
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.InvalidParams {
			t.Errorf("Ask with timeout_s %d = %+v, %v; want invalid params", timeoutS, r, err)
		}
		if len(unmarked.tallied) != before {
			t.Errorf("Ask with timeout_s %d was counted: %+v", timeoutS, unmarked.tallied[before:])
		}
	}
	if _, err := a.Ask(ctx, q, least-1); err == nil || !strings.Contains(err.Error(), "at least") {
		t.Errorf("Ask with timeout_s %d = %v; want the least named", least-1, err)
	}
}

// TestEnterShowsPhase: a question enters only while no hold is open and
// the daemon is not closing; entered, the watch stream shows it speaking
// and then its phases, until it leaves (idle); an interrupt closes its
// Barge once, with the first reason.
func TestEnterShowsPhase(t *testing.T) {
	for _, tc := range []struct {
		name             string
		holding, closing bool
		want             error
	}{
		{"holding", true, false, question.ErrHolding},
		{"closing", false, true, question.ErrClosing},
	} {
		f := &fakeDaemon{cfg: config.Default(), holding: tc.holding, closing: tc.closing}
		a, live := newAsker(f)
		h := &house{a: a}
		if _, _, err := h.Enter(); !errors.Is(err, tc.want) {
			t.Errorf("%s: Enter = %v, want %v", tc.name, err, tc.want)
		}
		h.SetPhase(daemonapi.StateListening) // not asked: changes nothing
		if got := live.Current().Ask; got != daemonapi.StateIdle {
			t.Errorf("%s: watch's ask phase = %q, want idle", tc.name, got)
		}
	}

	f := &fakeDaemon{cfg: config.Default()}
	a, live := newAsker(f)
	h := &house{a: a}
	b, leave, err := h.Enter()
	if err != nil {
		t.Fatalf("Enter = %v", err)
	}
	if got := live.Current().Ask; got != daemonapi.StateSpeaking {
		t.Errorf("entered: watch's ask phase = %q, want speaking", got)
	}
	h.SetPhase(daemonapi.StateListening)
	if got := live.Current().Ask; got != daemonapi.StateListening {
		t.Errorf("SetPhase(listening): watch's ask phase = %q", got)
	}
	f.asked.Interrupt(daemonapi.ReasonInterrupted)
	f.asked.Interrupt("another")
	select {
	case <-b.Done():
	default:
		t.Errorf("the Barge is not done after Interrupt")
	}
	if b.Reason() != daemonapi.ReasonInterrupted {
		t.Errorf("Reason = %q, want the first interrupt's %q", b.Reason(), daemonapi.ReasonInterrupted)
	}
	leave()
	if got := live.Current().Ask; got != daemonapi.StateIdle || f.asked != nil {
		t.Errorf("left: watch's ask phase = %q, asked %v; want idle, none", got, f.asked)
	}
	h.SetPhase(daemonapi.StateDecoding) // left: changes nothing
	if got := live.Current().Ask; got != daemonapi.StateIdle {
		t.Errorf("SetPhase after leaving: watch's ask phase = %q, want idle", got)
	}
}
