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

// errYielded: a file's piece gave the decoder up to a hold or an answer
// before it was decoded; send it again.
var errYielded = errors.New("gave way to dictation")

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
//
// A file's piece gives way: when a hold or an answer starts waiting while
// a piece holds the decoder, the piece is abandoned (an X frame, contract
// 1) and its decode returns errYielded once the decoder has answered it,
// so the hold waits for whisper's next abort point rather than for the
// piece. A decoder that finished the piece anyway answers it normally, and
// that answer is kept.
type decoder struct {
	mu      sync.Mutex
	w       *os.File      // the child's stdin; nil while down
	fw      *frame.Writer // on w, used only by the holder of the turn
	gen     int
	results chan frame.Result // results of the current start
	lost    chan struct{}     // closed when the current start's stdout ends
	upCh    chan struct{}     // closed once a start is ready
	busy    bool
	holder  *turn // the turn in progress while busy
	queue   [numPrio][]*turn
	// prompt is decode.prompt, sent as a Prompt frame with every
	// utterance that has none of its own; set before the first decode.
	prompt string
}

// turn is one caller's use of the decoder.
type turn struct {
	prio   int
	served chan struct{} // closed when the turn is handed to a waiter
	// yield is closed when a hold or an answer waits behind this turn;
	// only file turns have one.
	yield     chan struct{}
	yieldOnce sync.Once
}

func newTurn(prio int) *turn {
	t := &turn{prio: prio, served: make(chan struct{})}
	if prio == prioFile {
		t.yield = make(chan struct{})
	}
	return t
}

func (t *turn) askYield() {
	if t.yield != nil {
		t.yieldOnce.Do(func() { close(t.yield) })
	}
}

func (t *turn) yielded() bool {
	select {
	case <-t.yield:
		return true
	default:
		return false
	}
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
	d.w, d.fw = w, frame.NewWriter(w)
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
			d.w, d.fw = nil, nil
		}
		d.upCh = make(chan struct{})
	}
	d.mu.Unlock()
}

// acquire waits for the decoder's turn at priority prio.
func (d *decoder) acquire(ctx context.Context, prio int) error {
	_, err := d.take(ctx, prio)
	return err
}

// take waits for the decoder's turn at priority prio and returns it. A
// hold or an answer that has to wait asks a file's piece in progress to
// give way.
func (d *decoder) take(ctx context.Context, prio int) (*turn, error) {
	t := newTurn(prio)
	d.mu.Lock()
	if !d.busy {
		d.busy, d.holder = true, t
		d.mu.Unlock()
		return t, nil
	}
	d.queue[prio] = append(d.queue[prio], t)
	if prio < prioFile && d.holder != nil {
		d.holder.askYield()
	}
	d.mu.Unlock()
	select {
	case <-t.served:
		return t, nil
	case <-ctx.Done():
		d.mu.Lock()
		defer d.mu.Unlock()
		for i, w := range d.queue[prio] {
			if w == t {
				d.queue[prio] = append(d.queue[prio][:i], d.queue[prio][i+1:]...)
				return nil, ctx.Err()
			}
		}
		// Handed over just now: pass it on.
		d.releaseLocked()
		return nil, ctx.Err()
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
			t := d.queue[p][0]
			d.queue[p] = d.queue[p][1:]
			d.holder = t
			// A file handed the turn while a hold or an answer waits
			// cannot happen (they come first); nothing to ask of it.
			close(t.served) // the turn passes on; busy stays true
			return
		}
	}
	d.busy, d.holder = false, nil
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

// decode decodes one utterance. Its turn comes by prio; once it is
// taken, the utterance is sent and the turn is held until the decoder
// answers or dies, even if ctx ends meanwhile: sending and waiting belong
// to a goroutine of the turn, so decode itself returns ctx.Err() as soon
// as ctx ends, even while the decoder does not read (stopped, or busy
// with a long utterance). The decoder is then told to abandon the
// utterance (an X frame after its E, contract 1: it stops whisper at its
// next abort point and answers "abandoned"), and the turn passes on when
// that answer arrives, so the next caller (a hold waiting behind a
// cancelled file) is served as soon as the decoder has stopped.
//
// A file's utterance (prio == prioFile) gives way to a hold or an answer
// that starts waiting: it is abandoned the same way and decode returns
// errYielded, unless the decoder answered it in full first.
//
// samples must stay unchanged until decode returns; after a return for
// ctx, until the decoder has answered.
//
// prompt, when non-nil, replaces the decoder's --prompt for this utterance.
func (d *decoder) decode(ctx context.Context, prio int, samples []int16, prompt *string) (frame.Result, error) {
	t, err := d.take(ctx, prio)
	if err != nil {
		return frame.Result{}, err
	}
	if err := d.waitUp(ctx); err != nil {
		d.release()
		return frame.Result{}, err
	}
	if t.yielded() { // a hold came while this piece waited for the decoder
		d.release()
		return frame.Result{}, errYielded
	}
	d.mu.Lock()
	fw, results, lost := d.fw, d.results, d.lost
	d.mu.Unlock()
	if fw == nil {
		d.release()
		return frame.Result{}, errDecoderLost
	}
	abandon := make(chan struct{})
	done := make(chan decodeOut, 1)
	go d.serveTurn(fw, results, lost, samples, prompt, abandon, done)
	var abandonOnce sync.Once
	stop := func() { abandonOnce.Do(func() { close(abandon) }) }
	yield := t.yield // nil for holds and answers: never
	for {
		select {
		case o := <-done:
			switch {
			case o.err != nil:
				return frame.Result{}, o.err
			case o.res.Error == "abandoned" && t.yielded():
				return frame.Result{}, errYielded
			case o.res.Error != "":
				return o.res, fmt.Errorf("decoder: %s", o.res.Error)
			}
			return o.res, nil
		case <-ctx.Done():
			stop()
			return frame.Result{}, ctx.Err()
		case <-yield:
			stop()
			yield = nil
		}
	}
}

type decodeOut struct {
	res frame.Result
	err error
}

// serveTurn sends one utterance on fw and waits for its answer, writing an
// X frame when abandon is closed; then it passes the turn on and hands the
// answer to done. It alone writes to the decoder during the turn, so
// frames are never interleaved or cut short.
func (d *decoder) serveTurn(fw *frame.Writer, results <-chan frame.Result, lost <-chan struct{},
	samples []int16, prompt *string, abandon <-chan struct{}, done chan<- decodeOut) {
	var o decodeOut
	defer func() {
		d.release()
		done <- o
	}()
	if prompt == nil && d.prompt != "" {
		prompt = &d.prompt
	}
	if prompt != nil {
		if err := fw.Prompt(*prompt); err != nil {
			o.err = fmt.Errorf("%w: %w", errDecoderLost, err)
			return
		}
	}
	if err := fw.Audio(samples); err != nil {
		o.err = fmt.Errorf("%w: %w", errDecoderLost, err)
		return
	}
	if err := fw.End(); err != nil {
		o.err = fmt.Errorf("%w: %w", errDecoderLost, err)
		return
	}
	for {
		select {
		case o.res = <-results:
			return
		case <-lost:
			select {
			case o.res = <-results:
			default:
				o.err = errDecoderLost
			}
			return
		case <-abandon:
			abandon = nil    // once
			_ = fw.Abandon() // a decoder that is gone answers nothing anyway
		}
	}
}

func (d *decoder) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.w != nil {
		d.w.Close()
		d.w, d.fw = nil, nil
	}
}
