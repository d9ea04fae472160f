package daemon

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/yazses/yazses/lib/config"
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
		"a\tb\x00c":         "a b c",
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
