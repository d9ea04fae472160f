package pcm

// Resampler is Resample for a stream: it takes the input in blocks of any
// size and keeps only the few input samples the filter still needs (about
// 2·16 at the lower rate), so converting a long stream costs memory for one
// block, not for the whole signal. Its output, all blocks and Flush
// together, is exactly Resample of the whole input, whatever the blocks.
// Equal rates pass the samples through. It is not safe for concurrent use.
type Resampler struct {
	k       *kernel // nil for equal rates
	from    int64   // the original rates, for the output count at the end
	to      int64
	buf     []float32 // input samples from global index off on
	off     int64
	total   int64 // input samples seen
	next    int64 // the next output sample
	flushed bool
}

// NewResampler returns a Resampler from one rate to another (both > 0).
func NewResampler(from, to int) *Resampler {
	r := &Resampler{from: int64(from), to: int64(to)}
	if from != to && from > 0 && to > 0 {
		r.k = newKernel(from, to)
	}
	return r
}

// Write adds the input samples in and appends to dst every output sample
// whose filter taps are now all known; the rest wait for more input or for
// Flush. in is not kept.
func (r *Resampler) Write(dst, in []float32) []float32 {
	if r.flushed || len(in) == 0 || r.from <= 0 || r.to <= 0 {
		return dst
	}
	r.total += int64(len(in))
	if r.k == nil {
		r.next += int64(len(in))
		return append(dst, in...)
	}
	r.buf = append(r.buf, in...)
	k := r.k
	for {
		pos := r.next * k.from
		base := pos / k.to
		if base+int64(k.lo) >= r.total { // its last tap is not here yet
			break
		}
		dst = append(dst, k.at(r.buf, r.off, r.next))
		r.next++
	}
	r.trim()
	return dst
}

// Flush ends the input and appends the last output samples, which Resample
// computes over the taps that fall inside the signal. Later calls of Write
// and Flush add nothing.
func (r *Resampler) Flush(dst []float32) []float32 {
	if r.flushed {
		return dst
	}
	r.flushed = true
	if r.k == nil {
		return dst
	}
	n := r.total * r.to / r.from // as Resample counts its output
	for ; r.next < n; r.next++ {
		dst = append(dst, r.k.at(r.buf, r.off, r.next))
	}
	r.buf = nil
	return dst
}

// trim drops the input samples no later output needs, moving the rest to
// the front so that buf does not grow with the stream.
func (r *Resampler) trim() {
	k := r.k
	need := (r.next*k.from)/k.to - int64(k.lo) // first tap of the next output
	drop := min(max(0, need-r.off), int64(len(r.buf)))
	if drop == 0 {
		return
	}
	n := copy(r.buf, r.buf[drop:])
	r.buf = r.buf[:n]
	r.off += drop
}
