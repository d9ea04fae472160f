package child

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/cmd/yazsesd/internal/turn"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/pcm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A child end's Down channel is closed while the child is down for good
// (exited 125, crash loop, stopped) and replaced by an open one when it
// starts again; Changed is closed at every change.
func TestProcessDown(t *testing.T) {
	var e process
	e.init(supervise.Spec{Name: "decode"}, slog.New(slog.DiscardHandler))
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	down, changed := e.Down(), e.Changed()
	e.set(supervise.Status{State: supervise.StateStarting})
	if closed(down) || !closed(changed) {
		t.Errorf("starting: down closed %v, changed closed %v; want false, true", closed(down), closed(changed))
	}
	e.set(supervise.Status{State: supervise.StateExited, Cause: "model_missing"})
	if !closed(down) {
		t.Error("down open after exit 125")
	}
	e.set(supervise.Status{State: supervise.StateStarting})
	if closed(e.Down()) {
		t.Error("down still closed after a new start")
	}
	e.set(supervise.Status{State: supervise.StateCrashLoop})
	if !closed(e.Down()) {
		t.Error("down open in a crash loop")
	}
	e.set(supervise.Status{State: supervise.StateStarting})
	down = e.Down()
	e.set(supervise.Status{State: supervise.StateStopped})
	if !closed(down) {
		t.Error("down open once stopped (a waiter for the decoder's work would wait for a start that never comes)")
	}
}

// The pre-roll ring keeps the last N samples in order, whatever the sizes
// of the writes.
func TestRing(t *testing.T) {
	for _, chunk := range []int{1, 3, 7, 10, 25} {
		r := newRing(10)
		var all []int16
		next := int16(0)
		for range 9 {
			s := make([]int16, chunk)
			for i := range s {
				s[i] = next
				next++
			}
			r.write(s)
			all = append(all, s...)
			want := all[max(0, len(all)-10):]
			if diff := cmp.Diff(want, r.snapshot()); diff != "" {
				t.Fatalf("chunk %d, after %d samples (-want +got):\n%s", chunk, len(all), diff)
			}
		}
	}
}

// fakeServe plays `yaz-decode --serve` on the decoder's pipes and records
// what happens, in order: "E1" (utterance 1 ended), "X" (an abandon frame),
// "A" (audio of the next utterance), "R1 abandoned" or "R1" (the answer it
// wrote). Utterance 1 is a long file: after its E the fake "decodes" until
// an X arrives, or until fallback passes (a decoder that never hears of
// the abandon); any other is answered at once.
type fakeServe struct {
	mu     sync.Mutex
	events []string
	ended  chan int // utterance numbers as their E arrives
	done   chan struct{}
}

func startFakeServe(t *testing.T, d *Decoder, fallback time.Duration) *fakeServe {
	t.Helper()
	in, err := d.OpenStdin()
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.OpenStdout()
	if err != nil {
		t.Fatal(err)
	}
	d.Started(1, 0)
	f := &fakeServe{ended: make(chan int, 8), done: make(chan struct{})}
	frames := make(chan frame.Frame)
	go func() {
		defer close(frames)
		r := frame.NewReader(in)
		for {
			fr, err := r.Next()
			if err != nil {
				return
			}
			frames <- fr
		}
	}()
	go func() {
		defer close(f.done)
		defer in.Close()
		defer out.Close()
		enc := json.NewEncoder(out)
		utt, audio := 0, false
		for fr := range frames {
			switch fr.Type {
			case frame.Audio:
				if !audio {
					f.add("A")
				}
				audio = true
			case frame.Abandon:
				f.add("X")
			case frame.End:
				utt++
				audio = false
				f.add(fmt.Sprintf("E%d", utt))
				f.ended <- utt
				res := frame.Result{Utt: utt, Text: "t", Segments: []frame.Segment{}}
				wait := fallback
				if utt != 1 {
					wait = 0
				}
				select {
				case fr, ok := <-frames:
					if !ok {
						return
					}
					if fr.Type == frame.Abandon {
						f.add("X")
						res.Text, res.Error = "", "abandoned"
					} else {
						f.add(fmt.Sprintf("unexpected %c", fr.Type))
					}
				case <-time.After(wait):
				}
				if res.Error != "" {
					f.add(fmt.Sprintf("R%d %s", utt, res.Error))
				} else {
					f.add(fmt.Sprintf("R%d", utt))
				}
				enc.Encode(res)
			}
		}
	}()
	return f
}

func (f *fakeServe) add(e string) {
	f.mu.Lock()
	f.events = append(f.events, e)
	f.mu.Unlock()
}

func (f *fakeServe) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.events)
}

// Contract 1, the daemon's side: when the caller of a decode goes away
// after its utterance was sent, the decoder gets an X frame at once (not
// after it has decoded the whole file), the caller returns, and the
// decoder's turn is kept until the answer for that utterance (abandoned)
// arrives; then the next turn (a hold) is served, and its answer is its
// own.
func TestDecodeCancelSendsAbandon(t *testing.T) {
	d := NewDecoder(supervise.Spec{Name: "decode"}, "", slog.New(slog.DiscardHandler))
	// The fake decodes utterance 1 for as long as a test may wait: X must
	// come before that, whatever the machine's load (a 3 s fallback failed
	// the test on a busy machine whose X was merely late).
	f := startFakeServe(t, d, testwait.Hang)
	defer func() { d.Close(); testwait.Closed(t, f.done, "the fake decoder to end after Close") }()

	ctx, cancel := context.WithCancel(testwait.Context(t))
	fileErr := make(chan error, 1)
	go func() {
		_, err := d.Decode(ctx, turn.File, make([]int16, 16000), nil)
		fileErr <- err
	}()
	if n := testwait.Recv(t, f.ended, "utterance 1's end frame at the decoder"); n != 1 {
		t.Fatalf("first utterance numbered %d", n)
	}
	cancel()
	if err := testwait.Recv(t, fileErr, "the cancelled decode to return"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled decode = %v, want context.Canceled", err)
	}
	res, err := d.Decode(testwait.Context(t), turn.Hold, make([]int16, 8000), nil)
	if err != nil || res.Utt != 2 || res.Error != "" {
		t.Errorf("the hold after the cancel = %+v, %v; want utterance 2's own answer", res, err)
	}
	want := []string{"A", "E1", "X", "R1 abandoned", "A", "E2", "R2"}
	if diff := cmp.Diff(want, f.log()); diff != "" {
		t.Errorf("what the decoder saw (-want +got):\n%s", diff)
	}
}

// While nobody listens the microphone's reader naps between reads; a
// listener that arrives during the nap ends it at once (in fake time: no
// moment passes), and gets the ring's audio, then what the pipe held, in
// order. A reader that slept out its nap gave the listener nothing until
// the nap was over.
func TestMicListenEndsIdleNap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMic(supervise.Spec{Name: "capture"}, true, 1600, slog.New(slog.DiscardHandler))
		pr, pw := io.Pipe()
		m.goroutines.Go(func() { m.read(pr, 1) })
		samples := func(from, n int) []int16 {
			s := make([]int16, n)
			for i := range s {
				s[i] = int16(from + i)
			}
			return s
		}
		before, during := samples(0, 160), samples(160, 160)
		if _, err := pw.Write(pcm.Encode(nil, before)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // read, into the ring; the reader naps
		wrote := make(chan error, 1)
		go func() {
			_, err := pw.Write(pcm.Encode(nil, during))
			wrote <- err
		}()
		synctest.Wait() // the pipe holds audio the napping reader has not read
		t0 := time.Now()
		l := m.Listen(true)
		synctest.Wait()
		var got []int16
		for more := true; more; {
			select {
			case s := <-l.Audio():
				got = append(got, s...)
			default:
				more = false
			}
		}
		if diff := cmp.Diff(append(slices.Clone(before), during...), got); diff != "" {
			t.Errorf("audio a listener added during the idle nap has at once (-want +got):\n%s", diff)
		}
		if waited := time.Since(t0); waited != 0 {
			t.Errorf("the listener waited %v for the reader", waited)
		}
		if err := <-wrote; err != nil {
			t.Fatal(err)
		}
		pw.Close()
		if s := testwait.Recv(t, l.Audio(), "the end of the stream (a nil chunk)"); s != nil {
			t.Errorf("after the stream ended got %d samples, want the nil chunk", len(s))
		}
		m.Unlisten(l)
		m.goroutines.Wait()
	})
}

// A group's Wait waits for every goroutine started with Go, those started
// while it waits included (a decode that begins as the daemon stops).
func TestGroupWaitsForLateGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g group
		first, late := make(chan struct{}), make(chan struct{})
		g.Go(func() { <-first })
		waited := make(chan struct{})
		go func() { g.Wait(); close(waited) }()
		synctest.Wait()
		g.Go(func() { <-late })
		close(first)
		synctest.Wait()
		select {
		case <-waited:
			t.Fatal("Wait returned while a goroutine started during the wait runs")
		default:
		}
		close(late)
		synctest.Wait()
		select {
		case <-waited:
		default:
			t.Fatal("Wait did not return once every goroutine ended")
		}
	})
}

// A level's channel is closed while the condition holds, and a waiter
// that took it while the condition did not hold is woken by the next
// change to on, not by one to off.
func TestLevel(t *testing.T) {
	var l level
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	off := l.C()
	if closed(off) {
		t.Fatal("closed before the condition held")
	}
	l.set(false)
	if closed(off) {
		t.Fatal("closed by a change to off")
	}
	l.set(true)
	if !closed(off) || !closed(l.C()) {
		t.Fatal("not closed once the condition holds")
	}
	l.set(false)
	if closed(l.C()) {
		t.Fatal("closed after the condition ended")
	}
}

// A capture child that ends by itself (exit 0: a replayed file ran out)
// tells each listener with a nil chunk. A listener that arrives after that
// nil was sent, but before the ended supervision has been cleared, is
// owed a new start: it was not told of the end, and nobody else will start
// the child for it. The old Mic started nothing, and that listener waited
// for audio that never came (a second hold pressed while the first was in
// its tail).
func TestMicListenerAfterTheEndGetsANewStart(t *testing.T) {
	const script = `eval "printf '\\n' >&$YAZ_READY_FD"; head -c 3200 /dev/zero`
	m := NewMic(supervise.Spec{Name: "capture", Argv: []string{"sh", "-c", script}}, false, 0, slog.New(slog.DiscardHandler))
	late := make(chan *Listener, 1)
	var once sync.Once
	m.OnState(func(st supervise.Status) {
		if st.State != supervise.StateStopped {
			return
		}
		once.Do(func() {
			m.goroutines.Wait() // the reader has read the end and told its listeners
			late <- m.Listen(false)
		})
	})
	runMic(t, m)

	first := m.Listen(false)
	got := 0
	for s := testwait.Recv(t, first.Audio(), "the first start's audio"); s != nil; s = testwait.Recv(t, first.Audio(), "the first start's end") {
		got += len(s)
	}
	if got != 1600 {
		t.Errorf("the first listener got %d samples before the end, want 1600", got)
	}
	second := testwait.Recv(t, late, "a listener added after the end")
	if s := testwait.Recv(t, second.Audio(), "audio for the listener that came after the end"); len(s) == 0 {
		t.Errorf("the late listener got %v, want the new start's audio", s)
	}
	m.Unlisten(first)
	m.Unlisten(second)
}

// The last listener's leaving stops the capture child; a listener that
// comes at once (the key pressed again just after a release) starts a new
// one. The old child's end, read after that listener came, is not its
// end: the old Mic told it so with a nil chunk, and the new hold ended
// before it began ("hold tail" why ended, nothing said).
func TestMicOldChildsEndIsNotTheNextListeners(t *testing.T) {
	const script = `eval "printf '\\n' >&$YAZ_READY_FD"; head -c 3200 /dev/zero; exec sleep 60`
	m := NewMic(supervise.Spec{Name: "capture", Argv: []string{"sh", "-c", script}}, false, 0, slog.New(slog.DiscardHandler))
	runMic(t, m)
	for i := range 3 {
		l := m.Listen(false)
		got := 0
		for got < 1600 {
			s := testwait.Recv(t, l.Audio(), "a start's audio")
			if s == nil {
				t.Fatalf("listener %d: the stream ended after %d samples, want 1600 from its own start", i, got)
			}
			got += len(s)
		}
		m.Unlisten(l) // the child is stopped; the next listener comes at once
	}
}

// runMic runs m until the test ends, and waits for its Run to return.
func runMic(t *testing.T, m *Mic) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := testwait.Recv(t, ran, "the microphone's Run to return"); err != nil {
			t.Error(err)
		}
	})
}

// A capture child that dies while someone listens (killed, or any end but
// exit 0) tells each listener on Failed, and its supervisor starts it
// again: the same listener gets the new start's audio. One that ends with
// exit 0 (a replayed file ran out) tells nothing on Failed. Restart (a
// stalled child) kills it and starts it again, without a failure told.
func TestMicChildFailsWhileListened(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		failed bool
	}{
		{name: "killed", script: `eval "printf '\\n' >&$YAZ_READY_FD"; head -c 3200 /dev/zero; kill -9 $$`, failed: true},
		{name: "exit 0", script: `eval "printf '\\n' >&$YAZ_READY_FD"; head -c 3200 /dev/zero`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := supervise.Spec{Name: "capture", Argv: []string{"sh", "-c", tc.script}, BackoffBase: time.Millisecond}
			m := NewMic(spec, false, 0, slog.New(slog.DiscardHandler))
			stopped := make(chan struct{}, 16)
			m.OnState(func(st supervise.Status) {
				if st.State == supervise.StateStopped || st.State == supervise.StateStarting && st.Restarts > 0 {
					stopped <- struct{}{}
				}
			})
			runMic(t, m)
			l := m.Listen(false)
			defer m.Unlisten(l)
			for s := testwait.Recv(t, l.Audio(), "the first start's audio"); s != nil; s = testwait.Recv(t, l.Audio(), "the first start's end") {
			}
			testwait.Recv(t, stopped, "the child's end to be seen by its supervisor (stopped, or started again)")
			select {
			case <-l.Failed():
				if !tc.failed {
					t.Error("Failed told for a child that ended with exit 0")
				}
			default:
				if tc.failed {
					t.Error("nothing on Failed for a killed child")
				}
			}
			if tc.failed {
				if s := testwait.Recv(t, l.Audio(), "the restarted child's audio"); len(s) == 0 {
					t.Errorf("after the restart got %v, want audio", s)
				}
			}
		})
	}
	t.Run("restart", func(t *testing.T) {
		const script = `eval "printf '\\n' >&$YAZ_READY_FD"; head -c 3200 /dev/zero; exec sleep 60`
		m := NewMic(supervise.Spec{Name: "capture", Argv: []string{"sh", "-c", script}}, false, 0, slog.New(slog.DiscardHandler))
		runMic(t, m)
		l := m.Listen(false)
		defer m.Unlisten(l)
		for got := 0; got < 1600; {
			got += len(testwait.Recv(t, l.Audio(), "the first start's audio"))
		}
		m.Restart()
		// The old stream's end (a nil chunk) and the new start's audio
		// come from two readers, in either order.
		for got := 0; got < 1600; {
			got += len(testwait.Recv(t, l.Audio(), "the new start's audio"))
		}
		select {
		case <-l.Failed():
			t.Error("Failed told for a restart asked for")
		default:
		}
	})
}
