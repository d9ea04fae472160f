package child

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

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/cmd/yazsesd/internal/turn"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/frame"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
