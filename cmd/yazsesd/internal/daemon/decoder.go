package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/yazses/yazses/lib/frame"
)

// errDecoderLost: the decoder died before it answered.
var errDecoderLost = errors.New("decoder ended before answering")

// Priorities of decoder work: a dictation hold is served before an answer,
// an answer before a file.
const (
	prioHold = iota
	prioAnswer
	prioFile
	numPrio
)

// decoder is the daemon's side of `yaz-decode --serve`: frames on its
// stdin, one result line per utterance on its stdout. It decodes one
// utterance at a time; waiting work is served by priority, then in order.
type decoder struct {
	mu      sync.Mutex
	w       *os.File // the child's stdin; nil while down
	gen     int
	results chan frame.Result // results of the current start
	lost    chan struct{}     // closed when the current start's stdout ends
	upCh    chan struct{}     // closed once a start is ready
	busy    bool
	queue   [numPrio][]chan struct{}
}

func newDecoder() *decoder {
	return &decoder{upCh: make(chan struct{})}
}

func (d *decoder) stdin() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("decode stdin: %w", err)
	}
	d.mu.Lock()
	if d.w != nil {
		d.w.Close()
	}
	d.w = w
	d.mu.Unlock()
	return r, nil
}

func (d *decoder) stdout() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("decode stdout: %w", err)
	}
	d.mu.Lock()
	d.gen++
	results, lost := make(chan frame.Result, 4), make(chan struct{})
	d.results, d.lost = results, lost
	gen := d.gen
	d.mu.Unlock()
	go d.read(r, gen, results, lost)
	return w, nil
}

// started is the supervisor's hook: the model is loaded.
func (d *decoder) started(pid, restart int) {
	d.mu.Lock()
	select {
	case <-d.upCh:
	default:
		close(d.upCh)
	}
	d.mu.Unlock()
}

func (d *decoder) read(r *os.File, gen int, results chan<- frame.Result, lost chan struct{}) {
	defer r.Close()
	defer close(lost)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var res frame.Result
		if json.Unmarshal(sc.Bytes(), &res) != nil {
			continue
		}
		select {
		case results <- res:
		default: // nobody asked for it: drop
		}
	}
	d.mu.Lock()
	if gen == d.gen {
		if d.w != nil {
			d.w.Close()
			d.w = nil
		}
		d.upCh = make(chan struct{})
	}
	d.mu.Unlock()
}

// acquire waits for the decoder's turn at priority prio.
func (d *decoder) acquire(ctx context.Context, prio int) error {
	d.mu.Lock()
	if !d.busy {
		d.busy = true
		d.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	d.queue[prio] = append(d.queue[prio], ch)
	d.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		d.mu.Lock()
		defer d.mu.Unlock()
		for i, c := range d.queue[prio] {
			if c == ch {
				d.queue[prio] = append(d.queue[prio][:i], d.queue[prio][i+1:]...)
				return ctx.Err()
			}
		}
		// Handed over just now: pass it on.
		d.releaseLocked()
		return ctx.Err()
	}
}

func (d *decoder) release() {
	d.mu.Lock()
	d.releaseLocked()
	d.mu.Unlock()
}

func (d *decoder) releaseLocked() {
	for p := range d.queue {
		if len(d.queue[p]) > 0 {
			ch := d.queue[p][0]
			d.queue[p] = d.queue[p][1:]
			close(ch) // the turn passes on; busy stays true
			return
		}
	}
	d.busy = false
}

// waitUp waits until a decoder is ready.
func (d *decoder) waitUp(ctx context.Context) error {
	d.mu.Lock()
	up := d.upCh
	d.mu.Unlock()
	select {
	case <-up:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// decode decodes one utterance. Its turn comes by prio; once the audio is
// sent the turn is held until the decoder answers or dies, even if ctx
// ends: then the decoder is told to abandon the utterance (an X frame,
// contract 1: it stops whisper at its next abort point and answers
// "abandoned"), decode returns ctx.Err() at once, and the turn passes on
// when that answer arrives, so the next caller (a hold waiting behind a
// cancelled file) is served as soon as the decoder has stopped.
//
// prompt, when non-nil, replaces the decoder's --prompt for this utterance.
func (d *decoder) decode(ctx context.Context, prio int, samples []int16, prompt *string) (frame.Result, error) {
	if err := d.acquire(ctx, prio); err != nil {
		return frame.Result{}, err
	}
	if err := d.waitUp(ctx); err != nil {
		d.release()
		return frame.Result{}, err
	}
	d.mu.Lock()
	w, results, lost := d.w, d.results, d.lost
	d.mu.Unlock()
	if w == nil {
		d.release()
		return frame.Result{}, errDecoderLost
	}
	fw := frame.NewWriter(w)
	if prompt != nil {
		if err := fw.Prompt(*prompt); err != nil {
			d.release()
			return frame.Result{}, fmt.Errorf("%w: %w", errDecoderLost, err)
		}
	}
	if err := fw.Audio(samples); err != nil {
		d.release()
		return frame.Result{}, fmt.Errorf("%w: %w", errDecoderLost, err)
	}
	if err := fw.End(); err != nil {
		d.release()
		return frame.Result{}, fmt.Errorf("%w: %w", errDecoderLost, err)
	}
	type out struct {
		res frame.Result
		err error
	}
	// turn guards the writer: X may be written only while this call still
	// holds the decoder's turn (answered is false); once the answer is in,
	// the turn passes on and the next caller owns the writer.
	var turn sync.Mutex
	answered := false
	done := make(chan out, 1)
	go func() {
		var o out
		select {
		case o.res = <-results:
		case <-lost:
			select {
			case o.res = <-results:
			default:
				o.err = errDecoderLost
			}
		}
		turn.Lock()
		answered = true
		turn.Unlock()
		d.release()
		done <- o
	}()
	select {
	case o := <-done:
		if o.err == nil && o.res.Error != "" {
			return o.res, fmt.Errorf("decoder: %s", o.res.Error)
		}
		return o.res, o.err
	case <-ctx.Done():
		turn.Lock()
		if !answered {
			_ = fw.Abandon() // a decoder that is gone answers nothing anyway
		}
		turn.Unlock()
		return frame.Result{}, ctx.Err()
	}
}

func (d *decoder) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.w != nil {
		d.w.Close()
		d.w = nil
	}
}
