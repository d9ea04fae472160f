package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/frame"
	"github.com/yazses/yazses/lib/supervise"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestApplyReplacements(t *testing.T) {
	reps := []config.Replacement{{From: "yaz says", To: "YazSes"}, {From: "full stop", To: "."}, {From: "um", To: ""}}
	tests := []struct{ in, want string }{
		{"yaz says hello", "YazSes hello"},
		{"hello yaz says", "hello YazSes"},
		{"yaz sayss", "yaz sayss"},         // part of a longer word
		{"ayaz says", "ayaz says"},         // part of a longer word
		{"um, full stop um", ", . "},       // several, in order
		{"umbrella drum", "umbrella drum"}, // never inside words
		{"Grüße yaz says", "Grüße YazSes"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := applyReplacements(tt.in, reps); got != tt.want {
			t.Errorf("applyReplacements(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCleanText(t *testing.T) {
	for in, want := range map[string]string{
		" hello\nworld\r\n": "hello world",
		"a\tb\x00c":         "a bc", // NUL is dropped, as every rule of package untrusted does
		"Grüße ✓":           "Grüße ✓",
	} {
		if got := cleanText(in); got != want {
			t.Errorf("cleanText(%q) = %q, want %q", in, got, want)
		}
	}
}

// The ask queue serves callers in arrival order; one whose context ends
// leaves the line without blocking the others.
func TestAskQueueOrder(t *testing.T) {
	var q askQueue
	ctx := context.Background()
	if err := q.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	gone, cancel := context.WithCancel(ctx)
	for i := range 4 {
		c := ctx
		if i == 2 {
			c = gone
		}
		wg.Go(func() {
			if err := q.acquire(c); err != nil {
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			q.release()
		})
		for { // wait until it is in line
			q.mu.Lock()
			n := len(q.waiters)
			q.mu.Unlock()
			if n == i+1 {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	cancel()
	for { // the cancelled one has left the line
		if _, w := q.state(); w == 3 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	q.release()
	wg.Wait()
	if diff := cmp.Diff([]int{0, 1, 3}, order); diff != "" {
		t.Errorf("served order (-want +got):\n%s", diff)
	}
	if busy, w := q.state(); busy || w != 0 {
		t.Errorf("state after all = busy %v, waiting %d", busy, w)
	}
}

// The decoder serves holds before answers and answers before files.
func TestDecoderPriority(t *testing.T) {
	d := newDecoder()
	ctx := context.Background()
	if err := d.acquire(ctx, prioFile); err != nil {
		t.Fatal(err)
	}
	got := make(chan int, 3)
	var wg sync.WaitGroup
	for _, p := range []int{prioFile, prioAnswer, prioHold} {
		wg.Go(func() {
			if err := d.acquire(ctx, p); err != nil {
				t.Error(err)
				return
			}
			got <- p
			d.release()
		})
		for {
			d.mu.Lock()
			n := len(d.queue[p])
			d.mu.Unlock()
			if n == 1 {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	d.release()
	wg.Wait()
	close(got)
	var order []int
	for p := range got {
		order = append(order, p)
	}
	if diff := cmp.Diff([]int{prioHold, prioAnswer, prioFile}, order); diff != "" {
		t.Errorf("served order (-want +got):\n%s", diff)
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

func startFakeServe(t *testing.T, d *decoder, fallback time.Duration) *fakeServe {
	t.Helper()
	in, err := d.stdin()
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.stdout()
	if err != nil {
		t.Fatal(err)
	}
	d.started(1, 0)
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
	d := newDecoder()
	f := startFakeServe(t, d, 3*time.Second)
	defer func() { d.close(); <-f.done }()

	ctx, cancel := context.WithCancel(context.Background())
	fileErr := make(chan error, 1)
	go func() {
		_, err := d.decode(ctx, prioFile, make([]int16, 16000), nil)
		fileErr <- err
	}()
	if n := <-f.ended; n != 1 {
		t.Fatalf("first utterance numbered %d", n)
	}
	cancel()
	if err := <-fileErr; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled decode = %v, want context.Canceled", err)
	}
	res, err := d.decode(context.Background(), prioHold, make([]int16, 8000), nil)
	if err != nil || res.Utt != 2 || res.Error != "" {
		t.Errorf("the hold after the cancel = %+v, %v; want utterance 2's own answer", res, err)
	}
	want := []string{"A", "E1", "X", "R1 abandoned", "A", "E2", "R2"}
	if diff := cmp.Diff(want, f.log()); diff != "" {
		t.Errorf("what the decoder saw (-want +got):\n%s", diff)
	}
}

// health: READY waits for every boot child to settle (up, or failed); the
// line names each child that is down or restarting, with its own reason;
// a child left down is logged and notified once, and its down channel is
// closed.
func TestHealth(t *testing.T) {
	var notes []string
	var lines []string
	d := &Daemon{log: slog.New(slog.DiscardHandler)}
	d.opt.Notify = func(kind string) { notes = append(notes, kind) }
	d.opt.Health = func(s string) { lines = append(lines, s) }
	d.cfg.Notify.Enabled = true
	h := newHealth(d, []string{"gate", "speak", "decode", "capture"}, "gate", "speak", "decode")
	settled := func() bool {
		select {
		case <-h.settled:
			return true
		default:
			return false
		}
	}
	st := func(s supervise.State, cause, reason, exit string) supervise.Status {
		return supervise.Status{State: s, Cause: cause, Reason: reason, LastExit: exit}
	}
	h.changed("gate", st(supervise.StateStarting, "", "", ""))
	h.changed("gate", st(supervise.StateRunning, "", "", ""))
	h.changed("speak", st(supervise.StateRunning, "", "", ""))
	h.changed("capture", st(supervise.StateBackoff, "", "", "exit 1")) // not a boot child
	if settled() || h.summary() != "capture: restarting after exit 1" {
		t.Errorf("before decode settled: settled %v, line %q", settled(), h.summary())
	}
	h.changed("capture", st(supervise.StateStopped, "", "", "")) // idle between holds
	if settled() || h.summary() != "starting" {
		t.Errorf("line %q, want starting", h.summary())
	}
	_, down := h.status("decode")
	const msg = "model not found: /m/ggml-base.en.bin — fetch one with yaz-fetch-model base.en"
	h.changed("decode", st(supervise.StateStarting, "", "", ""))
	h.changed("decode", st(supervise.StateExited, "model_missing", msg, "exit 125"))
	h.changed("decode", st(supervise.StateExited, "model_missing", msg, "exit 125")) // again: no second note
	if !settled() {
		t.Error("not settled once decode exited")
	}
	if got := h.summary(); got != "decode: "+msg {
		t.Errorf("line %q, want the decoder's message", got)
	}
	select {
	case <-down:
	default:
		t.Error("decode's down channel is open")
	}
	if diff := cmp.Diff([]string{"model_missing"}, notes); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
	if want := []string{"starting", "capture: restarting after exit 1", "starting", "decode: " + msg}; !cmp.Equal(lines, want) {
		t.Errorf("health lines sent %q, want %q", lines, want)
	}
	h.changed("speak", st(supervise.StateCrashLoop, "", "", "not ready"))
	if got, want := h.summary(), "speak: kept failing (last: not ready) and is left down; see its log lines; decode: "+msg; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	if diff := cmp.Diff([]string{"model_missing", "child_down"}, notes); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
}
