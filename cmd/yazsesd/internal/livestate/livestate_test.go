package livestate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestStates: the state is derived from the hold, the question and the
// questions waiting, in that order of precedence.
func TestStates(t *testing.T) {
	const (
		idle      = daemonapi.StateIdle
		listening = daemonapi.StateListening
		decoding  = daemonapi.StateDecoding
		typing    = daemonapi.StateTyping
		speaking  = daemonapi.StateSpeaking
		waiting   = daemonapi.StateWaiting
	)
	s := New(Options{})
	steps := []struct {
		name string
		do   func()
		want string
	}{
		{"start", func() {}, idle},
		{"hold starts", func() { s.SetHold(listening) }, listening},
		{"a question arrives during the hold", func() { s.AddWaiting(1) }, waiting},
		{"released: decoding, the question still waits", func() { s.SetHold(decoding) }, waiting},
		{"the question stops waiting", func() { s.AddWaiting(-1) }, decoding},
		{"typing", func() { s.SetHold(typing) }, typing},
		{"hold over", func() { s.EndHold("typed") }, idle},
		{"question spoken", func() { s.SetAsk(speaking) }, speaking},
		{"answer listened for", func() { s.SetAsk(listening) }, listening},
		{"a hold barges in", func() { s.SetHold(listening) }, listening},
		{"question over", func() { s.SetAsk(idle); s.EndAsk(daemonapi.NoAnswer) }, listening},
		{"hold cancelled", func() { s.EndHold("cancelled") }, idle},
		{"answer decoding", func() { s.SetAsk(decoding) }, decoding},
		{"an unknown hold phase is idle", func() { s.SetAsk(idle); s.SetHold("sideways") }, idle},
		{"an unknown ask phase is idle", func() { s.SetAsk("typing") }, idle},
		{"waiting never goes below zero", func() { s.AddWaiting(-3); s.SetHold(listening) }, listening},
	}
	for _, st := range steps {
		st.do()
		if got := s.Current().State; got != st.want {
			t.Errorf("%s: State = %q, want %q", st.name, got, st.want)
		}
	}
	ev := s.Current()
	if ev.LastHold != "cancelled" || ev.LastAsk != string(daemonapi.NoAnswer) {
		t.Errorf("last = %q, %q; want cancelled, no_answer", ev.LastHold, ev.LastAsk)
	}
	for _, st := range []string{ev.State, ev.Hold, ev.Ask} {
		known := false
		for _, k := range daemonapi.States {
			known = known || st == k
		}
		if !known {
			t.Errorf("state %q is not one of %v", st, daemonapi.States)
		}
	}
}

// TestOtherCallEndsDuringAQuestion: the question's phase is the one being
// asked's alone. A call that ends without being asked (another client's,
// refused while a question is spoken) records its result kind and leaves
// the phase as it is: the state stays speaking until the question itself
// moves on. (It went idle at the refusal, and a listener keyed on the
// state played over the question.)
func TestOtherCallEndsDuringAQuestion(t *testing.T) {
	s := New(Options{})
	s.SetAsk(daemonapi.StateSpeaking)
	s.EndAsk(daemonapi.Refused)
	if ev := s.Current(); ev.State != daemonapi.StateSpeaking || ev.Ask != daemonapi.StateSpeaking || ev.LastAsk != string(daemonapi.Refused) {
		t.Errorf("after another call was refused during a question: state %q, ask %q, last %q; want speaking, speaking, refused",
			ev.State, ev.Ask, ev.LastAsk)
	}
	s.SetAsk(daemonapi.StateIdle) // the question left
	s.EndAsk(daemonapi.NoAnswer)
	if ev := s.Current(); ev.State != daemonapi.StateIdle || ev.LastAsk != string(daemonapi.NoAnswer) {
		t.Errorf("after the question ended: state %q, last %q; want idle, no_answer", ev.State, ev.LastAsk)
	}
}

// TestSeq: each change takes the next number; a call that changes nothing
// makes no event.
func TestSeq(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := New(Options{Now: func() time.Time { return now }})
	if ev := s.Current(); ev.Seq != 1 || ev.AtMs != now.UnixMilli() || ev.State != daemonapi.StateIdle {
		t.Fatalf("first event = %+v, want seq 1, idle, at now", ev)
	}
	s.SetHold(daemonapi.StateListening)
	s.SetHold(daemonapi.StateListening)
	s.SetHold(daemonapi.StateIdle)
	s.SetHold("nonsense") // idle again: no change
	if got := s.Current().Seq; got != 3 {
		t.Errorf("Seq after two changes and two repeats = %d, want 3", got)
	}
	b := daemonapi.BudgetStatus{PerHour: 3, Used: 1, NextFreeS: 100, Available: true}
	s.SetBudget(b)
	ev := s.Current()
	want := daemonapi.WatchBudget{PerHour: 3, Used: 1, Left: 2, NextFreeAtMs: now.Add(100 * time.Second).UnixMilli(), Available: true}
	if ev.Seq != 4 || ev.Budget != want {
		t.Fatalf("after SetBudget: seq %d, budget %+v; want 4, %+v", ev.Seq, ev.Budget, want)
	}
	// The same slot read again a second later: the gate says 99 s; no event.
	now = now.Add(time.Second + 300*time.Millisecond)
	b.NextFreeS = 99
	s.SetBudget(b)
	if got := s.Current(); got.Seq != 4 || got.Budget != want {
		t.Errorf("the same budget read again = seq %d, %+v; want no event", got.Seq, got.Budget)
	}
	// A slot freed: an event.
	b.Used, b.NextFreeS = 0, 0
	s.SetBudget(b)
	if got := s.Current(); got.Seq != 5 || got.Budget.Left != 3 || got.Budget.NextFreeAtMs != 0 {
		t.Errorf("after a slot freed: %+v, want seq 5 and 3 left", got)
	}
	// Over-used (a lowered cap): none left, not a negative count.
	s.SetBudget(daemonapi.BudgetStatus{PerHour: 1, Used: 2, Available: true})
	if got := s.Current().Budget.Left; got != 0 {
		t.Errorf("Left with 2 used of 1 = %d, want 0", got)
	}
}

// marker is a distinctive text given as a preview: with the preview off,
// it must appear nowhere.
const marker = "Zebra-Quokka-7719 said <b>&amp;"

// TestPreviewOptIn: without the opt-in the text is never kept nor sent;
// with it, it is sent during the hold only, and turning it off (a reload)
// clears it at once.
func TestPreviewOptIn(t *testing.T) {
	off := New(Options{})
	ch, cancel := off.Subscribe()
	defer cancel()
	var seen []daemonapi.WatchEvent
	collect := func() {
		for {
			select {
			case ev := <-ch:
				seen = append(seen, ev)
			default:
				return
			}
		}
	}
	off.SetHold(daemonapi.StateListening)
	collect()
	off.SetPreview(marker)
	collect()
	off.SetHold(daemonapi.StateDecoding)
	collect()
	off.SetPreview(marker + " more")
	collect()
	off.EndHold("typed")
	collect()
	seen = append(seen, off.Current())
	for _, ev := range seen {
		b, _ := json.Marshal(ev)
		if strings.Contains(string(b), "Zebra") || ev.Preview != "" {
			t.Errorf("preview off: event %s carries the text", b)
		}
	}
	if len(seen) < 3 {
		t.Errorf("saw %d events, want the hold's changes", len(seen))
	}
	off.mu.Lock()
	kept := off.text
	off.mu.Unlock()
	if kept != "" {
		t.Errorf("preview off: the state keeps the text %q", kept)
	}

	on := New(Options{Preview: true})
	on.SetPreview(marker)
	if got := on.Current().Preview; got != "" {
		t.Errorf("preview with no hold = %q, want none", got)
	}
	on.SetHold(daemonapi.StateListening)
	on.SetPreview(marker)
	if got := on.Current().Preview; got != marker {
		t.Errorf("preview during a hold = %q, want %q", got, marker)
	}
	on.SetHold(daemonapi.StateDecoding)
	if got := on.Current().Preview; got != marker {
		t.Errorf("preview while decoding = %q, want it kept", got)
	}
	on.SetPreviewEnabled(false)
	if got := on.Current().Preview; got != "" {
		t.Errorf("preview after it was turned off = %q, want none", got)
	}
	on.SetPreviewEnabled(true)
	on.SetPreview("again")
	on.EndHold("typed")
	if got := on.Current().Preview; got != "" {
		t.Errorf("preview after the hold = %q, want none", got)
	}
	on.SetHold(daemonapi.StateListening)
	if got := on.Current().Preview; got != "" {
		t.Errorf("preview at a new hold = %q, want none", got)
	}
	long := strings.Repeat("é", MaxPreviewRunes) + "ω🙂"
	on.SetPreview(long)
	want := strings.Repeat("é", MaxPreviewRunes-2) + "ω🙂"
	if got := on.Current().Preview; got != want {
		t.Errorf("a long preview keeps %d bytes, want its last %d characters", len(got), MaxPreviewRunes)
	}
}

// TestSlowSubscriber: a subscriber that does not read never holds up the
// daemon; when it reads, it gets the latest event. One that reads slowly
// sees the numbers rise and ends on the latest, never a stale one.
func TestSlowSubscriber(t *testing.T) {
	s := New(Options{})
	stuck, cancelStuck := s.Subscribe()
	defer cancelStuck()
	slow, cancelSlow := s.Subscribe()
	const changes = 2000
	var wg sync.WaitGroup
	last := make(chan daemonapi.WatchEvent, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		var prev daemonapi.WatchEvent
		for ev := range slow {
			if ev.Seq <= prev.Seq {
				t.Errorf("slow subscriber: seq %d after %d", ev.Seq, prev.Seq)
			}
			prev = ev
			// The scenario, not a wait: a reader slower than the
			// changes, so that it misses some.
			time.Sleep(100 * time.Microsecond)
		}
		last <- prev
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range changes {
			s.AddWaiting(1 - 2*(i%2)) // 1, 0, 1, 0, …: each a change
		}
	}()
	select {
	case <-done:
	case <-time.After(testwait.Hang):
		t.Fatalf("the daemon's updates were held up by subscribers that do not read: %d changes not made within %v", changes, testwait.Hang)
	}
	final := s.Current()
	if final.Seq != changes+1 {
		t.Fatalf("Seq = %d after %d changes, want %d", final.Seq, changes, changes+1)
	}
	got := testwait.Recv(t, stuck, "the latest event on a subscription never read")
	if got != final {
		t.Errorf("a subscriber that never read gets %+v, want the latest %+v", got, final)
	}
	select {
	case ev := <-stuck:
		t.Errorf("a second event %+v after the latest", ev)
	default:
	}
	cancelSlow()
	testwait.Group(t, &wg, "the slow subscriber to end after its cancel")
	// The slow reader's last event is the latest, unless its subscription
	// ended before it took that one.
	if ev := testwait.Recv(t, last, "the slow subscriber's last event"); ev.Seq > final.Seq {
		t.Errorf("slow subscriber ended on seq %d beyond the latest %d", ev.Seq, final.Seq)
	}
	cancelSlow() // twice: nothing
}

// TestSlowSubscriberEndsOnLatest: a reader slower than the changes still
// ends on the latest event once the changes stop.
func TestSlowSubscriberEndsOnLatest(t *testing.T) {
	s := New(Options{})
	ch, cancel := s.Subscribe()
	defer cancel()
	if first := testwait.Recv(t, ch, "the first event"); first.Seq != 1 {
		t.Fatalf("first event = %+v, want seq 1", first)
	}
	release := make(chan struct{})
	got := make(chan daemonapi.WatchEvent, 1)
	go func() {
		<-release // slow: the changes all happen meanwhile
		got <- <-ch
	}()
	for range 100 {
		s.SetHold(daemonapi.StateListening)
		s.SetHold(daemonapi.StateIdle)
	}
	s.SetHold(daemonapi.StateTyping)
	close(release)
	if ev := testwait.Recv(t, got, "the slow reader's event after the changes"); ev != s.Current() || ev.State != daemonapi.StateTyping {
		t.Errorf("slow reader got %+v, want the latest %+v", ev, s.Current())
	}
}

// TestClose: Close ends every subscription; a later Subscribe gets a
// closed channel; changes are still recorded.
func TestClose(t *testing.T) {
	s := New(Options{})
	ch, cancel := s.Subscribe()
	defer cancel()
	testwait.Recv(t, ch, "the first event")
	s.Close()
	if _, ok := recvOK(t, ch, "the subscription to close at Close"); ok {
		t.Errorf("subscription open after Close")
	}
	late, _ := s.Subscribe()
	if _, ok := recvOK(t, late, "a Subscribe after Close to give a closed channel"); ok {
		t.Errorf("Subscribe after Close gave an open channel")
	}
	s.SetHold(daemonapi.StateListening)
	if s.Current().State != daemonapi.StateListening {
		t.Errorf("a change after Close was not recorded")
	}
}

// recvOK receives from ch, telling a value from a close; after
// testwait.Hang it fails t saying what it waited for.
func recvOK(t *testing.T, ch <-chan daemonapi.WatchEvent, what string) (daemonapi.WatchEvent, bool) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		return ev, ok
	case <-time.After(testwait.Hang):
		t.Fatalf("waiting for %s: nothing within %v", what, testwait.Hang)
	}
	return daemonapi.WatchEvent{}, false
}

// serveWatch serves s's watch method on a fresh unix socket and returns a
// client factory.
func serveWatch(t *testing.T, s *State) (dial func() *daemonapi.Client, srv *jsonrpc.Server) {
	t.Helper()
	srv = jsonrpc.NewServer(slog.New(slog.DiscardHandler))
	srv.HandleStream(daemonapi.MethodWatch, s.Serve)
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := testwait.Recv(t, done, "Serve to return after its cancel"); err != nil {
			t.Errorf("Serve = %v", err)
		}
	})
	return func() *daemonapi.Client {
		conn, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		c := daemonapi.NewClient(conn)
		t.Cleanup(func() { c.Close() })
		return c
	}, srv
}

// TestServeWatch: over a real socket, a watcher gets the current state at
// once, then each change; the daemon closing the state ends the watch with
// ErrWatchEnded; parameters are refused.
func TestServeWatch(t *testing.T) {
	s := New(Options{})
	dial, _ := serveWatch(t, s)
	c := dial()
	events := make(chan daemonapi.WatchEvent, 100)
	done := make(chan error, 1)
	go func() {
		done <- c.Watch(testwait.Context(t), func(ev daemonapi.WatchEvent) error {
			events <- ev
			return nil
		})
	}()
	next := func() daemonapi.WatchEvent {
		t.Helper()
		return testwait.Recv(t, events, "the next watch event")
	}
	if ev := next(); ev.Seq != 1 || ev.State != daemonapi.StateIdle {
		t.Errorf("first event = %+v, want seq 1 idle", ev)
	}
	for _, phase := range []string{daemonapi.StateListening, daemonapi.StateDecoding, daemonapi.StateTyping} {
		s.SetHold(phase)
		if ev := next(); ev.State != phase {
			t.Errorf("event after SetHold(%s) = %+v", phase, ev)
		}
	}
	s.EndHold("typed")
	if ev := next(); ev.State != daemonapi.StateIdle || ev.LastHold != "typed" || ev.Seq != 5 {
		t.Errorf("event after EndHold = %+v, want idle, typed, seq 5", ev)
	}
	s.Close()
	if err := testwait.Recv(t, done, "Watch to end after the state closed"); !errors.Is(err, daemonapi.ErrWatchEnded) {
		t.Errorf("Watch after the state closed = %v, want ErrWatchEnded", err)
	}

	var rpcErr *jsonrpc.Error
	err := dial().Call(testwait.Context(t), daemonapi.MethodWatch, map[string]int{"x": 1}, nil)
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.InvalidParams {
		t.Errorf("watch with parameters = %v, want invalid params", err)
	}
}

// TestServeSlowWatcher: a watcher that stops reading holds up neither the
// daemon's updates nor other watchers, and when it reads again it gets the
// latest state, with the numbers rising.
func TestServeSlowWatcher(t *testing.T) {
	s := New(Options{})
	dial, _ := serveWatch(t, s)
	release := make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	defer releaseOnce() // a failed wait below must not leave the slow watcher blocked
	var slowSeqs []uint64
	slowDone := make(chan error, 1)
	slowStarted := make(chan struct{})
	var once sync.Once
	slow := dial()
	go func() {
		slowDone <- slow.Watch(testwait.Context(t), func(ev daemonapi.WatchEvent) error {
			once.Do(func() { close(slowStarted) })
			<-release
			slowSeqs = append(slowSeqs, ev.Seq)
			return nil
		})
	}()
	testwait.Closed(t, slowStarted, "the slow watcher's first event")
	fast := dial()
	fastSeen := make(chan uint64, 10000)
	fastDone := make(chan error, 1)
	go func() {
		fastDone <- fast.Watch(testwait.Context(t), func(ev daemonapi.WatchEvent) error {
			fastSeen <- ev.Seq
			return nil
		})
	}()
	testwait.Recv(t, fastSeen, "the fast watcher's first event") // subscribed
	const changes = 3000
	for i := range changes {
		s.AddWaiting(1 - 2*(i%2))
	}
	final := s.Current().Seq
	latest := fmt.Sprintf("the fast watcher to see the latest seq %d", final)
	for seq := testwait.Recv(t, fastSeen, latest); seq != final; seq = testwait.Recv(t, fastSeen, latest) {
	}
	releaseOnce()
	s.Close()
	if err := testwait.Recv(t, slowDone, "the slow watch to end after the state closed"); !errors.Is(err, daemonapi.ErrWatchEnded) {
		t.Errorf("slow Watch = %v, want ErrWatchEnded", err)
	}
	if err := testwait.Recv(t, fastDone, "the fast watch to end after the state closed"); !errors.Is(err, daemonapi.ErrWatchEnded) {
		t.Errorf("fast Watch = %v, want ErrWatchEnded", err)
	}
	for i := 1; i < len(slowSeqs); i++ {
		if slowSeqs[i] <= slowSeqs[i-1] {
			t.Fatalf("slow watcher: seq %d after %d", slowSeqs[i], slowSeqs[i-1])
		}
	}
	if n := len(slowSeqs); n == 0 || slowSeqs[n-1] != final {
		t.Errorf("slow watcher ended on %v, want the latest seq %d", slowSeqs[max(n-3, 0):], final)
	}
	t.Logf("slow watcher read %d of %d events", len(slowSeqs), changes+1)
}

// TestRunBudget: the budget is read at once, at each RefreshBudget, and
// again when the next slot frees, without any call.
func TestRunBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{})
		var mu sync.Mutex
		start := time.Now()
		takenAt := start // one slot taken now, free an hour later
		perHour := 2
		query := func(ctx context.Context) daemonapi.BudgetStatus {
			mu.Lock()
			defer mu.Unlock()
			b := daemonapi.BudgetStatus{PerHour: perHour, Available: true}
			if free := takenAt.Add(time.Hour); time.Now().Before(free) {
				b.Used = 1
				b.NextFreeS = int((time.Until(free) + time.Second - 1) / time.Second)
			}
			return b
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); s.RunBudget(ctx, query) }()
		synctest.Wait()
		if b := s.Current().Budget; b.Left != 1 || b.Used != 1 || b.NextFreeAtMs != start.Add(time.Hour).UnixMilli() {
			t.Errorf("budget at start = %+v, want 1 of 2 left, next free in an hour", b)
		}
		mu.Lock()
		perHour = 3
		mu.Unlock()
		s.RefreshBudget()
		synctest.Wait()
		if b := s.Current().Budget; b.PerHour != 3 || b.Left != 2 {
			t.Errorf("budget after a refresh = %+v, want 2 of 3 left", b)
		}
		time.Sleep(time.Hour - time.Second)
		synctest.Wait()
		if b := s.Current().Budget; b.Left != 2 {
			t.Errorf("budget a second before the slot frees = %+v, want 2 left", b)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if b := s.Current().Budget; b.Left != 3 || b.NextFreeAtMs != 0 {
			t.Errorf("budget after the slot freed = %+v, want 3 left and none taken", b)
		}
		cancel()
		<-done
	})
}

// TestPieces: the live pieces' state (decided, typed, stopped) is in each
// event while a hold is active, without any text, and cleared when the
// hold ends or a new one starts.
func TestPieces(t *testing.T) {
	s := New(Options{})
	ch, stop := s.Subscribe()
	defer stop()
	latest := func() daemonapi.WatchEvent {
		t.Helper()
		return <-ch
	}
	latest()
	s.SetPieces(daemonapi.WatchPieces{Decided: 1}) // no hold: dropped
	s.SetHold(daemonapi.StateListening)
	if ev := latest(); ev.Pieces != (daemonapi.WatchPieces{}) {
		t.Fatalf("pieces %+v outside a hold", ev.Pieces)
	}
	for _, p := range []daemonapi.WatchPieces{{Decided: 1}, {Decided: 1, Typed: 1}, {Decided: 2, Typed: 1}, {Decided: 3, Typed: 1, Stopped: true}} {
		s.SetPieces(p)
		ev := latest()
		if ev.Pieces != p || ev.Preview != "" {
			t.Errorf("event %+v; want pieces %+v and no text", ev, p)
		}
		b, _ := json.Marshal(ev)
		if !strings.Contains(string(b), fmt.Sprintf(`"pieces":{"decided":%d,"typed":%d`, p.Decided, p.Typed)) {
			t.Errorf("event on the wire %s; want the pieces", b)
		}
	}
	s.EndHold("partial")
	ev := latest()
	if ev.Pieces != (daemonapi.WatchPieces{}) {
		t.Errorf("pieces %+v after the hold ended", ev.Pieces)
	}
	if b, _ := json.Marshal(ev); strings.Contains(string(b), "pieces") {
		t.Errorf("event on the wire %s; want no pieces without live text", b)
	}
}
