// Package turn is the daemon's priority queue: a Queue hands out one turn
// at a time, to the most urgent waiting priority first, then in arrival
// order. The decoder child serves its callers with one (a hold before an
// answer, an answer before a file's piece, which is asked to yield when a
// more urgent turn starts waiting behind it); the daemon lines up its
// questions (all Answer) and its files (File, a few waiting at most) with
// two more.
package turn

import (
	"context"
	"errors"
	"sync"
)

// Prio orders the turns of a Queue: the lower first.
type Prio int

// The priorities of the decoder's work: a dictation hold before an answer,
// an answer before a file's piece. A file turn yields: it is asked to give
// way (Turn.Yield) when a more urgent turn starts waiting behind it.
const (
	Hold Prio = iota
	Answer
	File
	numPrio
)

// ErrFull is Queue.Take's error when as many turns wait as the queue
// allows.
var ErrFull = errors.New("queue full")

// Queue hands out one turn at a time: to the waiting turn of the most
// urgent priority, then in arrival order. Its zero value is ready.
type Queue struct {
	// MaxWaiting caps the turns that may wait; 0 is no cap. Set it
	// before the first Take.
	MaxWaiting int

	mu      sync.Mutex
	holder  *Turn // the turn in progress; nil when free
	waiting [numPrio][]*Turn
}

// Turn is one caller's use of what a Queue guards, from Take to Release.
type Turn struct {
	q      *Queue
	prio   Prio
	served chan struct{} // closed when the turn is handed to its waiter
	// yield is closed when a more urgent turn waits behind this one;
	// only file turns have one.
	yield     chan struct{}
	yieldOnce sync.Once
	release   sync.Once
}

// Take waits for a turn at priority prio. A turn that has to wait behind
// a file turn asks it to yield. It returns ctx's error if ctx ends first
// (a turn handed over meanwhile is passed on), or ErrFull.
func (q *Queue) Take(ctx context.Context, prio Prio) (*Turn, error) {
	t := &Turn{q: q, prio: prio, served: make(chan struct{})}
	if prio == File {
		t.yield = make(chan struct{})
	}
	q.mu.Lock()
	if q.holder == nil {
		q.holder = t
		q.mu.Unlock()
		return t, nil
	}
	if q.MaxWaiting > 0 && q.waitingLocked() >= q.MaxWaiting {
		q.mu.Unlock()
		return nil, ErrFull
	}
	q.waiting[prio] = append(q.waiting[prio], t)
	if q.holder.prio > prio {
		q.holder.askYield()
	}
	q.mu.Unlock()
	select {
	case <-t.served:
		return t, nil
	case <-ctx.Done():
		q.mu.Lock()
		defer q.mu.Unlock()
		for i, w := range q.waiting[prio] {
			if w == t {
				q.waiting[prio] = append(q.waiting[prio][:i], q.waiting[prio][i+1:]...)
				return nil, ctx.Err()
			}
		}
		q.passLocked() // handed over just now: pass it on
		return nil, ctx.Err()
	}
}

// Release ends the turn and hands the next one out. A second call does
// nothing.
func (t *Turn) Release() {
	t.release.Do(func() {
		t.q.mu.Lock()
		t.q.passLocked()
		t.q.mu.Unlock()
	})
}

// Yield returns a channel closed when a more urgent turn waits behind
// this one; nil (never) for turns that do not yield.
func (t *Turn) Yield() <-chan struct{} { return t.yield }

// Yielded reports whether the turn was asked to yield.
func (t *Turn) Yielded() bool {
	select {
	case <-t.yield:
		return true
	default:
		return false
	}
}

func (t *Turn) askYield() {
	if t.yield != nil {
		t.yieldOnce.Do(func() { close(t.yield) })
	}
}

func (q *Queue) passLocked() {
	for p := range q.waiting {
		if len(q.waiting[p]) > 0 {
			t := q.waiting[p][0]
			q.waiting[p] = q.waiting[p][1:]
			q.holder = t
			// A file handed the turn while a more urgent one waits
			// cannot happen (those come first): nothing to ask of it.
			close(t.served)
			return
		}
	}
	q.holder = nil
}

func (q *Queue) waitingLocked() int {
	n := 0
	for _, w := range q.waiting {
		n += len(w)
	}
	return n
}

// State reports whether a turn is in progress and how many wait.
func (q *Queue) State() (busy bool, waiting int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.holder != nil, q.waitingLocked()
}
