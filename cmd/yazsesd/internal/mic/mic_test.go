package mic

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/pcm"
	"github.com/yazses/yazses/lib/tts"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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

// While nobody listens the microphone's reader naps between reads; a
// listener that arrives during the nap ends it at once (in fake time: no
// moment passes), and gets the ring's audio, then what the pipe held, in
// order. A reader that slept out its nap gave the listener nothing until
// the nap was over.
func TestMicListenEndsIdleNap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMic(supervise.Spec{Name: "capture"}, true, 1600, slog.New(slog.DiscardHandler))
		pr, pw := io.Pipe()
		m.Goroutines.Go(func() { m.read(pr, 1) })
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
		if got, want := l.PreRoll(), pcm.Duration(len(before)); got != want {
			t.Errorf("PreRoll() = %v, want the ring's %v", got, want)
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
		m.Goroutines.Wait()
	})
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
			m.Goroutines.Wait() // the reader has read the end and told its listeners
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

// TestMicQuiet: a quieted listener gets silence of the same length while
// its cue plays, and the microphone's audio again once the cue is played
// out; the bound ends the quiet too.
func TestMicQuiet(t *testing.T) {
	dir := t.TempDir()
	go1, go2 := filepath.Join(dir, "1"), filepath.Join(dir, "2")
	for _, p := range []string{go1, go2} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// 1600 samples of 257 (bytes 0x01 0x01) after each go.
	script := fmt.Sprintf(`eval "printf '\\n' >&$YAZ_READY_FD"; read x < %s; head -c 3200 /dev/zero | tr '\0' '\1'; read x < %s; head -c 3200 /dev/zero | tr '\0' '\1'; exec sleep 60`, go1, go2)
	m := NewMic(supervise.Spec{Name: "capture", Argv: []string{"sh", "-c", script}}, false, 0, slog.New(slog.DiscardHandler))
	runMic(t, m)
	l := m.Listen(false)
	defer m.Unlisten(l)
	cue := make(chan tts.Event, 3)
	m.Quiet(l, cue, 0, time.Hour)
	cue <- tts.Event{Event: tts.EventStarted}

	read := func(what string) []int16 {
		var got []int16
		for len(got) < 1600 {
			s := testwait.Recv(t, l.Audio(), what)
			if s == nil {
				t.Fatalf("%s: the stream ended", what)
			}
			got = append(got, s...)
		}
		return got
	}
	if err := os.WriteFile(go1, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := read("audio while the cue plays"); slices.ContainsFunc(got, func(v int16) bool { return v != 0 }) {
		t.Errorf("audio while the cue plays is not silence")
	}
	cue <- tts.Event{Event: tts.EventDone}
	close(cue)
	if err := os.WriteFile(go2, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := read("audio after the cue"); slices.ContainsFunc(got, func(v int16) bool { return v != 257 }) {
		t.Errorf("audio after the cue was changed")
	}

	now := time.Now()
	bounded := &Listener{quiet: true, sound: make(chan tts.Event), quietEnd: now}
	if bounded.quieted(now.Add(time.Millisecond)) {
		t.Errorf("a listener past its quiet's bound is still quieted")
	}
	played := make(chan tts.Event)
	close(played)
	after := &Listener{quiet: true, sound: played, quietAfter: time.Second, quietEnd: now.Add(time.Hour)}
	if !after.quieted(now) || !after.quieted(now.Add(999*time.Millisecond)) || after.quieted(now.Add(time.Second)) {
		t.Errorf("a listener whose cue was played out is not quieted for exactly its after")
	}
}
