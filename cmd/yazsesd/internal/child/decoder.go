package child

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/cmd/yazsesd/internal/turn"
	"github.com/yazses/yazses/lib/frame"
)

// ErrLost: the decoder died before it answered.
var ErrLost = errors.New("decoder ended before answering")

// ErrYielded: a file's piece gave the decoder up to a hold or an answer
// before it was decoded; send it again.
var ErrYielded = errors.New("gave way to dictation")

// Decoder is the daemon's end of `yaz-decode serve`: frames on its
// stdin, one result line per utterance on its stdout. It decodes one
// utterance at a time; waiting work is served by priority, then in order
// (a turn.Queue).
//
// A file's piece gives way: when a hold or an answer starts waiting while
// a piece holds the decoder, the piece is abandoned (an X frame, contract
// 1) and its Decode returns ErrYielded once the decoder has answered it,
// so the hold waits for whisper's next abort point rather than for the
// piece. A decoder that finished the piece anyway answers it normally, and
// that answer is kept.
type Decoder struct {
	process
	turns turn.Queue
	// prompt is decode.prompt, sent as a Prompt frame with every
	// utterance that has none of its own.
	prompt string
	log    *slog.Logger

	mu      sync.Mutex
	w       *os.File      // the child's stdin; nil while down
	fw      *frame.Writer // on w, used only by the holder of the turn
	gen     int
	results chan frame.Result // results of the current start
	lost    chan struct{}     // closed when the current start's stdout ends
	up      level             // a start is ready
}

// NewDecoder returns the end of the decoder child run as spec (its Stdin,
// Stdout and Ready are the Decoder's). prompt (decode.prompt) goes with
// each utterance that has none of its own, as a Prompt frame, never on the
// command line, which every local user can read in /proc.
func NewDecoder(spec supervise.Spec, prompt string, log *slog.Logger) *Decoder {
	d := &Decoder{prompt: prompt, log: log}
	spec.Stdin, spec.Stdout, spec.Ready = d.OpenStdin, d.OpenStdout, true
	d.init(spec, log)
	d.OnStart(d.Started)
	return d
}

// OpenStdin is the supervisor's Stdin hook: a fresh pipe per start.
// NewDecoder installs it, OpenStdout and Started; they are exported for
// tests that play the decoder on these pipes.
func (d *Decoder) OpenStdin() (*os.File, error) {
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

// OpenStdout is the supervisor's Stdout hook: a fresh pipe per start,
// read until the child's end closes it.
func (d *Decoder) OpenStdout() (*os.File, error) {
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
	d.goroutines.Go(func() { d.read(r, gen, results, lost) })
	return w, nil
}

// Started is the supervisor's start hook: the model is loaded.
func (d *Decoder) Started(pid, restart int) {
	d.mu.Lock()
	d.up.set(true)
	d.mu.Unlock()
}

func (d *Decoder) read(r *os.File, gen int, results chan<- frame.Result, lost chan struct{}) {
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
		d.up.set(false)
	}
	d.mu.Unlock()
}

// Up returns a channel closed once the current start of the decoder is
// ready; a decoder that ends makes a new one.
func (d *Decoder) Up() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.up.C()
}

// WaitUp waits until a decoder is ready.
func (d *Decoder) WaitUp(ctx context.Context) error {
	select {
	case <-d.Up():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Decode decodes one utterance. Its turn comes by prio; once it is
// taken, the utterance is sent and the turn is held until the decoder
// answers or dies, even if ctx ends meanwhile: sending and waiting belong
// to a goroutine of the turn, so Decode itself returns ctx.Err() as soon
// as ctx ends, even while the decoder does not read (stopped, or busy
// with a long utterance). The decoder is then told to abandon the
// utterance (an X frame after its E, contract 1: it stops whisper at its
// next abort point and answers "abandoned"), and the turn passes on when
// that answer arrives, so the next caller (a hold waiting behind a
// cancelled file) is served as soon as the decoder has stopped.
//
// A file's utterance (turn.File) gives way to a hold or an answer that
// starts waiting: it is abandoned the same way and Decode returns
// ErrYielded, unless the decoder answered it in full first.
//
// samples must stay unchanged until Decode returns; after a return for
// ctx, until the decoder has answered.
//
// prompt, when non-nil, replaces decode.prompt for this utterance.
func (d *Decoder) Decode(ctx context.Context, prio turn.Prio, samples []int16, prompt *string) (frame.Result, error) {
	return d.DecodeAfter(ctx, prio, samples, prompt, "")
}

// DecodeAfter is Decode for an utterance that follows what was just said
// (said, the text of a dictation's pieces so far: a Context frame, which
// whisper reads as the text before the audio; empty: none).
func (d *Decoder) DecodeAfter(ctx context.Context, prio turn.Prio, samples []int16, prompt *string, said string) (frame.Result, error) {
	t, err := d.turns.Take(ctx, prio)
	if err != nil {
		return frame.Result{}, err
	}
	if err := d.WaitUp(ctx); err != nil {
		t.Release()
		return frame.Result{}, err
	}
	if t.Yielded() { // a hold came while this piece waited for the decoder
		t.Release()
		return frame.Result{}, ErrYielded
	}
	d.mu.Lock()
	fw, results, lost := d.fw, d.results, d.lost
	d.mu.Unlock()
	if fw == nil {
		t.Release()
		return frame.Result{}, ErrLost
	}
	if prompt == nil && d.prompt != "" {
		prompt = &d.prompt
	}
	abandon := make(chan struct{})
	done := make(chan decodeOut, 1)
	finished := make(chan struct{})
	// The turn's writer and, once abandoned, its watch outlive Decode:
	// the end owns them (Run waits for them); each ends with the turn.
	d.goroutines.Go(func() { serveTurn(t, fw, results, lost, samples, prompt, said, abandon, done, finished) })
	var abandonOnce sync.Once
	stop := func() {
		abandonOnce.Do(func() {
			close(abandon)
			d.goroutines.Go(func() { d.watch(finished) }) // ends with the turn, or after abandonGrace
		})
	}
	yield := t.Yield() // nil for holds and answers: never
	for {
		select {
		case o := <-done:
			switch {
			case o.err != nil:
				return frame.Result{}, o.err
			case o.res.Error == "abandoned" && t.Yielded():
				return frame.Result{}, ErrYielded
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

// abandonGrace is how long a decoder has to answer an utterance after its
// X frame. It stops whisper (or Parakeet) at the next abort check, within
// milliseconds; one that says nothing for this long is stopped (SIGSTOP)
// or looping, and is restarted, as a crash would have restarted it, so
// the turn passes on and whoever waits behind it (the next hold) is served
// by the new one instead of waiting for its own bound.
const abandonGrace = 15 * time.Second

// watch restarts the decoder if the turn of an abandoned utterance has
// not finished (closed finished) within abandonGrace: the decoder did not
// answer the X frame, or did not even read the utterance's frames (a
// stopped process leaves the write blocked on a full pipe). It ends at
// once when the decoder is down for good (the daemon stopping).
func (d *Decoder) watch(finished <-chan struct{}) {
	t := time.NewTimer(abandonGrace)
	defer t.Stop()
	select {
	case <-finished:
	case <-d.Down():
	case <-t.C:
		d.log.Warn("the decoder did not answer an abandoned utterance: restarting it", "waited_ms", abandonGrace.Milliseconds())
		d.Restart() // its end fails the write or closes lost: the turn ends
	}
}

// serveTurn sends one utterance on fw and waits for its answer, writing an
// X frame when abandon is closed; then it passes the turn on, closes
// finished and hands the answer to done. It alone writes to the decoder
// during the turn, so frames are never interleaved or cut short.
func serveTurn(t *turn.Turn, fw *frame.Writer, results <-chan frame.Result, lost <-chan struct{},
	samples []int16, prompt *string, said string, abandon <-chan struct{}, done chan<- decodeOut, finished chan<- struct{}) {
	var o decodeOut
	defer func() {
		t.Release()
		close(finished)
		done <- o
	}()
	if prompt != nil {
		if err := fw.Prompt(*prompt); err != nil {
			o.err = fmt.Errorf("%w: %w", ErrLost, err)
			return
		}
	}
	if said != "" {
		if err := fw.Context(said); err != nil {
			o.err = fmt.Errorf("%w: %w", ErrLost, err)
			return
		}
	}
	if err := fw.Audio(samples); err != nil {
		o.err = fmt.Errorf("%w: %w", ErrLost, err)
		return
	}
	if err := fw.End(); err != nil {
		o.err = fmt.Errorf("%w: %w", ErrLost, err)
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
				o.err = ErrLost
			}
			return
		case <-abandon:
			abandon = nil    // once
			_ = fw.Abandon() // a decoder that is gone answers nothing anyway
		}
	}
}

// Close closes the decoder's stdin: it ends at EOF.
func (d *Decoder) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.w != nil {
		d.w.Close()
		d.w, d.fw = nil, nil
	}
}
