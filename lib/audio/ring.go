package audio

import (
	"encoding/binary"
	"sync/atomic"
)

// ring is a single-producer single-consumer queue of samples. The producer
// is miniaudio's data callback (a C thread): put copies and never blocks or
// allocates. The consumer is the goroutine that called Capture. Positions
// only grow; the atomics order the sample writes before the reads.
type ring struct {
	buf  []int16 // length is a power of two
	mask uint64
	w    atomic.Uint64 // written by the producer only
	r    atomic.Uint64 // written by the consumer only

	dropped   atomic.Uint64 // samples that did not fit
	callbacks atomic.Uint64 // data callbacks seen
	wake      chan struct{} // capacity 1: "there is news"
}

// newRing returns a ring of at least n samples.
func newRing(n int) *ring {
	size := 1
	for size < n {
		size <<= 1
	}
	return &ring{buf: make([]int16, size), mask: uint64(size - 1), wake: make(chan struct{}, 1)}
}

// put appends the little-endian s16 samples in b. What does not fit is
// counted in dropped, never blocked on.
func (q *ring) put(b []byte) {
	n := uint64(len(b) / 2)
	w := q.w.Load()
	free := uint64(len(q.buf)) - (w - q.r.Load())
	k := min(n, free)
	for i := uint64(0); i < k; i++ {
		q.buf[(w+i)&q.mask] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	q.w.Store(w + k)
	if k < n {
		q.dropped.Add(n - k)
	}
	q.callbacks.Add(1)
	q.notify()
}

// notify wakes the consumer without blocking.
func (q *ring) notify() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// get moves up to cap(dst) queued samples into dst[:0] and returns them.
func (q *ring) get(dst []int16) []int16 {
	r := q.r.Load()
	k := min(q.w.Load()-r, uint64(cap(dst)))
	dst = dst[:k]
	start := r & q.mask
	n := copy(dst, q.buf[start:])
	copy(dst[n:], q.buf[:k-uint64(n)])
	q.r.Store(r + k)
	return dst
}
