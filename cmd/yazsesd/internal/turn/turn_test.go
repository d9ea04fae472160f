package turn

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A queue of one priority (the daemon's questions) serves callers in
// arrival order; one whose context ends leaves the line without blocking
// the others.
func TestQueueOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q Queue
		ctx := context.Background()
		first, err := q.Take(ctx, Answer)
		if err != nil {
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
				turn, err := q.Take(c, Answer)
				if err != nil {
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				turn.Release()
			})
			synctest.Wait() // it is in line
		}
		if _, w := q.State(); w != 4 {
			t.Fatalf("%d waiting, want 4", w)
		}
		cancel()
		synctest.Wait() // the cancelled one has left the line
		if _, w := q.State(); w != 3 {
			t.Fatalf("%d waiting after a cancel, want 3", w)
		}
		first.Release()
		wg.Wait()
		if diff := cmp.Diff([]int{0, 1, 3}, order); diff != "" {
			t.Errorf("served order (-want +got):\n%s", diff)
		}
		if busy, w := q.State(); busy || w != 0 {
			t.Errorf("state after all = busy %v, waiting %d", busy, w)
		}
	})
}

// The decoder's queue serves holds before answers and answers before
// files, and a file turn in progress is asked to yield when a more
// urgent one waits.
func TestQueuePriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q Queue
		ctx := context.Background()
		file, err := q.Take(ctx, File)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan Prio, 3)
		var wg sync.WaitGroup
		for i, p := range []Prio{File, Answer, Hold} {
			wg.Go(func() {
				turn, err := q.Take(ctx, p)
				if err != nil {
					t.Error(err)
					return
				}
				got <- p
				turn.Release()
			})
			synctest.Wait()
			if _, w := q.State(); w != i+1 {
				t.Fatalf("%d waiting, want %d", w, i+1)
			}
			if yielded, want := file.Yielded(), p != File; yielded != want {
				t.Errorf("file turn asked to yield = %v with a %d waiting, want %v", yielded, p, want)
			}
		}
		file.Release()
		wg.Wait()
		close(got)
		var order []Prio
		for p := range got {
			order = append(order, p)
		}
		if diff := cmp.Diff([]Prio{Hold, Answer, File}, order); diff != "" {
			t.Errorf("served order (-want +got):\n%s", diff)
		}
	})
}

// A queue with MaxWaiting (the daemon's files: one decodes, four wait)
// refuses the next at once; a waiter that goes away leaves its place.
func TestQueueMaxWaiting(t *testing.T) {
	const waiting = 4
	synctest.Test(t, func(t *testing.T) {
		q := Queue{MaxWaiting: waiting}
		ctx := context.Background()
		first, err := q.Take(ctx, File)
		if err != nil {
			t.Fatal(err)
		}
		gone, cancel := context.WithCancel(ctx)
		entered := make(chan int, waiting)
		for i := range waiting {
			c := ctx
			if i == 0 {
				c = gone
			}
			go func() {
				if turn, err := q.Take(c, File); err == nil {
					entered <- i
					turn.Release()
				}
			}()
		}
		synctest.Wait()
		if _, w := q.State(); w != waiting {
			t.Fatalf("%d waiting, want %d", w, waiting)
		}
		if _, err := q.Take(ctx, File); !errors.Is(err, ErrFull) {
			t.Errorf("Take with %d waiting = %v, want ErrFull", waiting, err)
		}
		cancel()
		synctest.Wait()
		if _, w := q.State(); w != waiting-1 {
			t.Fatalf("%d waiting after a cancel, want %d", w, waiting-1)
		}
		first.Release()
		for range waiting - 1 {
			if i := <-entered; i == 0 {
				t.Errorf("the waiter that went away entered")
			}
		}
		// The last one in releases its turn after it says it entered.
		synctest.Wait()
		if busy, w := q.State(); busy || w != 0 {
			t.Errorf("queue not free at the end: busy %v, %d waiting", busy, w)
		}
	})
}
