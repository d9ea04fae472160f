package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/daemonapi"
)

// watchProc is a running `yazsesd ctl watch --format json`, as a status
// bar runs it: a separate process with a login shell's environment.
type watchProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	events chan daemonapi.WatchEvent
	stderr *syncBuffer
	mu     sync.Mutex
	raw    strings.Builder // every line printed
	done   chan struct{}
}

func (d *daemon) watch(t *testing.T) *watchProc {
	t.Helper()
	cmd := exec.Command(bin("yazsesd"), "ctl", "watch", "--format", "json")
	cmd.Env = hostEnv(d.Dir, "XDG_RUNTIME_DIR="+d.Runtime)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w := &watchProc{t: t, cmd: cmd, events: make(chan daemonapi.WatchEvent, 1000), stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(w.done)
		defer close(w.events)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			w.mu.Lock()
			w.raw.WriteString(sc.Text() + "\n")
			w.mu.Unlock()
			var ev daemonapi.WatchEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Errorf("ctl watch printed %q: %v", sc.Text(), err)
				continue
			}
			w.events <- ev
		}
		io.Copy(io.Discard, out)
	}()
	t.Cleanup(w.stop)
	return w
}

// stop interrupts ctl watch and waits for it to exit; one still running
// after testwait.Hang is killed and fails the test.
func (w *watchProc) stop() {
	w.cmd.Process.Signal(os.Interrupt)
	select {
	case <-w.done:
	case <-time.After(testwait.Hang):
		w.cmd.Process.Kill()
		w.t.Errorf("waiting for ctl watch to exit after an interrupt: still running after %v; stderr: %s", testwait.Hang, w.stderr.String())
		<-w.done // killed: its stdout closes
	}
	w.cmd.Wait()
}

// until reads events until one has state want and returns the states seen
// on the way (want included). It fails the test if the watch ends or
// the state does not come within testwait.Hang (a guard, not a speed
// requirement: the machine may be busy).
func (w *watchProc) until(want string) []daemonapi.WatchEvent {
	w.t.Helper()
	var seen []daemonapi.WatchEvent
	limit := testwait.Hang
	deadline := time.After(limit)
	for {
		select {
		case ev, ok := <-w.events:
			if !ok {
				w.t.Fatalf("ctl watch ended before state %q; stderr: %s", want, w.stderr.String())
			}
			seen = append(seen, ev)
			if ev.State == want {
				return seen
			}
		case <-deadline:
			w.t.Fatalf("no state %q within %v; saw %v; stderr: %s", want, limit, statesOf(seen), w.stderr.String())
		}
	}
}

// untilEvent reads events until one satisfies ok and returns it; it fails
// the test if the watch ends or none comes within testwait.Hang.
func (w *watchProc) untilEvent(what string, ok func(daemonapi.WatchEvent) bool) daemonapi.WatchEvent {
	w.t.Helper()
	limit := testwait.Hang
	deadline := time.After(limit)
	var last daemonapi.WatchEvent
	for {
		select {
		case ev, open := <-w.events:
			if !open {
				w.t.Fatalf("ctl watch ended before %s; stderr: %s", what, w.stderr.String())
			}
			if last = ev; ok(ev) {
				return ev
			}
		case <-deadline:
			w.t.Fatalf("no %s within %v; last event %+v", what, limit, last)
		}
	}
}

func statesOf(evs []daemonapi.WatchEvent) []string {
	var s []string
	for _, ev := range evs {
		s = append(s, ev.State)
	}
	return s
}

// TestWatchHoldSequence: a real hold, watched by `yazsesd ctl watch`, goes
// listening → decoding → typing → idle, with rising sequence numbers, and
// ends with last_hold typed. The fake decoder takes 400 ms and the text is
// long enough for the typing to be seen. Without the preview no event
// carries the dictated text.
func TestWatchHoldSequence(t *testing.T) {
	t.Parallel()
	text := "Watchful-Marker-4242 " + strings.Repeat("typed by the daemon while a status bar watches; ", 30)
	x := startX(t)
	rec := startRecorder(t, x)
	rec.Focus(t)
	speech := answerWAV()
	d := startDaemon(t, dictationConfig(speech, true), append(x.DaemonEnv(), "YAZ_FAKE_TEXT="+text, "YAZ_FAKE_DELAY_MS=400")...)
	w := d.watch(t)
	if first := w.until(daemonapi.StateIdle); first[0].Seq == 0 {
		t.Errorf("first event %+v has no sequence number", first[0])
	}
	c := d.Client()
	d.holdWhileSpeaking(c, wavDuration(t, speech))
	if r := d.stopHold(c); r.Outcome != "typed" {
		t.Fatalf("hold.stop = %+v, want typed", r)
	}
	seen := w.until(daemonapi.StateIdle)
	got := statesOf(seen)
	var distinct []string
	for _, s := range got {
		if len(distinct) == 0 || distinct[len(distinct)-1] != s {
			distinct = append(distinct, s)
		}
	}
	if want := []string{"listening", "decoding", "typing", "idle"}; !slices.Equal(distinct, want) {
		t.Errorf("states during the hold = %v, want %v", got, want)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i].Seq <= seen[i-1].Seq {
			t.Errorf("seq %d after %d", seen[i].Seq, seen[i-1].Seq)
		}
	}
	if last := seen[len(seen)-1]; last.LastHold != "typed" || last.Hold != daemonapi.StateIdle {
		t.Errorf("event after the hold = %+v, want hold idle, last_hold typed", last)
	}
	rec.WaitFor(t, strings.TrimSpace(text))
	w.stop()
	w.mu.Lock()
	raw := w.raw.String()
	w.mu.Unlock()
	if strings.Contains(raw, "Watchful") || strings.Contains(d.Log.String(), "Watchful") {
		t.Errorf("the dictated text is in the watch output or the log, with the preview off")
	}
}

// TestWatchQuestionStates: a question asked during a hold shows as
// waiting; once the hold ends it is spoken (speaking), and after it the
// state is idle again with the ask's result kind and one slot less.
func TestWatchQuestionStates(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, baseConfig().With("budget.ask_human_per_hour", "2"))
	w := d.watch(t)
	start := w.until(daemonapi.StateIdle)
	if b := start[len(start)-1].Budget; b.PerHour != 2 {
		t.Logf("budget at start: %+v (the gate may still be starting)", b)
	}
	c := d.Client()
	ctx := testwait.Context(t)
	if _, err := c.Hold(ctx, daemonapi.MethodHoldStart); err != nil {
		t.Fatal(err)
	}
	w.until(daemonapi.StateListening)
	res := make(chan daemonapi.AskResult, 1)
	go func() { res <- d.Ask("After your sentence?", 60) }()
	waiting := w.until(daemonapi.StateWaiting)
	if ev := waiting[len(waiting)-1]; ev.Waiting != 1 || ev.Hold != daemonapi.StateListening {
		t.Errorf("waiting event = %+v, want 1 waiting during the hold", ev)
	}
	if _, err := c.Hold(ctx, daemonapi.MethodHoldCancel); err != nil {
		t.Fatal(err)
	}
	w.until(daemonapi.StateSpeaking)
	r := testwait.Recv(t, res, "the question's answer after the hold ended")
	last := w.untilEvent("the question's result", func(ev daemonapi.WatchEvent) bool {
		return ev.State == daemonapi.StateIdle && ev.LastAsk != ""
	})
	if last.LastAsk != string(r.Result) || last.LastHold != "cancelled" {
		t.Errorf("event after the question = %+v, want last_ask %s, last_hold cancelled", last, r.Result)
	}
	// The budget reaches the bar: one slot spent.
	if last.Budget.Used != 1 {
		last = w.untilEvent("the spent slot", func(ev daemonapi.WatchEvent) bool { return ev.Budget.Used == 1 })
	}
	if last.Budget.Left != 1 || last.Budget.PerHour != 2 {
		t.Errorf("budget in the watch = %+v, want 1 of 2 left", last.Budget)
	}
}

// TestWatchEndsWithDaemon: when the daemon stops, ctl watch says so and
// exits 1 (a status bar restarts it).
func TestWatchEndsWithDaemon(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, baseConfig())
	w := d.watch(t)
	w.until(daemonapi.StateIdle)
	d.Stop()
	testwait.Closed(t, w.done, "ctl watch to end after the daemon stopped")
	err := w.cmd.Wait()
	if code := w.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(w.stderr.String(), "yazsesd stopped") {
		t.Errorf("ctl watch after the daemon stopped: exit %d (%v), stderr %q; want 1, yazsesd stopped", code, err, w.stderr.String())
	}
}

// TestWatchFollowsTheQuestionAsked: the state a status bar sees is the
// daemon's own. From the start the budget shows as available once the
// gate is up, without a reload or a question first (it said the gate was
// restarting until one came). While a long question is spoken, another
// client's question refused meanwhile (the only slot is spent) changes
// the last result, never the state: it stays speaking (it went idle, and
// a listener keyed on the state played over the question).
func TestWatchFollowsTheQuestionAsked(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, baseConfig().With("budget.ask_human_per_hour", "1"))
	w := d.watch(t)
	w.untilEvent("the budget available after the start", func(ev daemonapi.WatchEvent) bool {
		return ev.Budget.Available && ev.Budget.PerHour == 1
	})
	ctx := testwait.Context(t)
	first := make(chan daemonapi.AskResult, 1)
	go func() {
		r, _ := d.Client().AskHuman(ctx, daemonapi.AskParams{Question: longQuestion, TimeoutS: 60})
		first <- r
	}()
	w.until(daemonapi.StateSpeaking)
	r, err := d.Client().AskHuman(ctx, daemonapi.AskParams{Question: "Me too?", TimeoutS: 60})
	if err != nil || r.Result != daemonapi.Refused {
		t.Fatalf("a second question while the first is spoken = %+v, %v; want refused", r, err)
	}
	ev := w.untilEvent("the refusal in the watch", func(ev daemonapi.WatchEvent) bool {
		return ev.LastAsk == string(daemonapi.Refused)
	})
	if ev.State == daemonapi.StateIdle || ev.Ask == daemonapi.StateIdle {
		t.Errorf("watch after another client's refusal = %+v, want the first question still shown (speaking, or listening for its answer)", ev)
	}
	testwait.Recv(t, first, "the first question's result")
}
