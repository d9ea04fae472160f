package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ErrBroken is returned (wrapped with its cause) once the connection to the
// gate can no longer be trusted to stay in step: a write that failed, a
// reply that is not one or does not answer the request it must answer, the
// gate gone, the Client closed. The Client then fails every pending call
// and refuses every later one; yazsesd restarts the gate (fully spent) and
// makes a new Client.
var ErrBroken = errors.New("gate connection broken")

// Refused is the error of a request the gate answered with ok:false.
type Refused struct {
	Reason     Reason
	RetryAfter time.Duration // > 0 only for budget_exhausted
}

func (e *Refused) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("gate refused: %s (retry after %v)", e.Reason, e.RetryAfter)
	}
	return fmt.Sprintf("gate refused: %s", e.Reason)
}

// Client talks to one gate over one connection. Its methods are safe for
// concurrent use, and concurrent calls are pipelined: many requests may be
// on the wire at once. A call writes its own request when no other write
// is under way; otherwise it queues it, and the writer goroutine sends all
// that was queued in one write. A reader goroutine takes the replies, which
// the gate sends in request order, and hands each to its call after
// checking that it echoes that call's id. See the package documentation
// for what a call abandoned to its context means.
type Client struct {
	conn   net.Conn
	nextID atomic.Uint64
	wake   chan struct{} // cap 1: the queue has requests for the writer
	done   chan struct{} // closed once the Client is broken (or closed)
	wg     sync.WaitGroup

	mu      sync.Mutex
	writing bool    // a write is under way, by the writer or a caller
	queue   []*call // not written yet, in call order
	sent    []*call // written and not yet answered, in wire order, from head
	head    int     // index of the oldest unanswered request in sent
	broken  error
}

// call is one request of a Client and, once done is closed, its outcome.
type call struct {
	op   string
	id   uint64
	line []byte // the request line, newline included

	// Guarded by Client.mu.
	abandoned bool          // the caller stopped waiting: skip or drop
	done      chan struct{} // closed with reply or err set
	reply     Reply
	err       error
}

// NewClient returns a Client on conn (yazsesd's end of the gate's
// socketpair) and starts its reader and writer. The Client owns conn from
// now on; Close closes it and stops them.
func NewClient(conn net.Conn) *Client {
	c := &Client{conn: conn, wake: make(chan struct{}, 1), done: make(chan struct{})}
	c.wg.Add(2)
	go c.writeLoop()
	go c.readLoop()
	return c
}

// Close closes the connection (the gate sees EOF and exits), fails the
// pending calls with ErrBroken and waits for the reader and writer to stop.
func (c *Client) Close() error {
	c.fail(fmt.Errorf("%w: client closed", ErrBroken))
	c.wg.Wait()
	return nil
}

// Reserve asks for a slot. It returns the token to commit or release, or a
// *Refused error (budget_exhausted with RetryAfter, or disabled).
func (c *Client) Reserve(ctx context.Context) (string, error) {
	r, err := c.call(ctx, Request{Op: OpReserve})
	if err != nil {
		return "", err
	}
	return r.Token, nil
}

// Commit marks the attempt of tok as audible (audio has started). A token
// not in a committable state gives *Refused{unknown_token}.
func (c *Client) Commit(ctx context.Context, tok string) error {
	_, err := c.call(ctx, Request{Op: OpCommit, Token: tok})
	return err
}

// Release refunds the slot of tok; only for a proven pre-output failure. A
// committed, released, expired or unknown token gives
// *Refused{unknown_token} and the slot stays charged.
func (c *Client) Release(ctx context.Context, tok string) error {
	_, err := c.call(ctx, Request{Op: OpRelease, Token: tok})
	return err
}

// SetLimit changes the cap to perHour; what was spent stays spent.
func (c *Client) SetLimit(ctx context.Context, perHour int) error {
	_, err := c.call(ctx, Request{Op: OpLimit, PerHour: &perHour})
	return err
}

// Status reports the budget.
func (c *Client) Status(ctx context.Context) (Status, error) {
	r, err := c.call(ctx, Request{Op: OpStatus})
	if err != nil {
		return Status{}, err
	}
	return *r.Status, nil
}

// call queues req and waits for its reply, within ctx. A refusal is
// returned as *Refused.
//
// A call whose context ends first returns the context's error at once. If
// its request was not written yet, it never will be; if it was, its reply
// is dropped when it comes (the reader knows it by its place and its id),
// so it is never taken for another call's reply.
func (c *Client) call(ctx context.Context, req Request) (Reply, error) {
	c.mu.Lock()
	broken := c.broken
	c.mu.Unlock()
	if broken != nil {
		return Reply{}, fmt.Errorf("gate %s: %w", req.Op, broken)
	}
	if err := ctx.Err(); err != nil {
		return Reply{}, fmt.Errorf("gate %s: %w", req.Op, err)
	}

	req.ID = c.nextID.Add(1)
	line, err := json.Marshal(req)
	if err != nil {
		return Reply{}, fmt.Errorf("gate %s: %w", req.Op, err)
	}
	cl := &call{op: req.Op, id: req.ID, line: append(line, '\n'), done: make(chan struct{})}

	c.mu.Lock()
	if c.broken != nil {
		err := c.broken
		c.mu.Unlock()
		return Reply{}, fmt.Errorf("gate %s: %w", req.Op, err)
	}
	if !c.writing && len(c.queue) == 0 {
		// Nothing else to send: write it from here, without a switch
		// to the writer goroutine and back.
		c.writing = true
		c.sent = append(c.sent, cl)
		c.mu.Unlock()
		if err := c.writeDirect(ctx, cl); err != nil {
			return Reply{}, fmt.Errorf("gate %s: %w", req.Op, err)
		}
	} else {
		c.queue = append(c.queue, cl)
		c.mu.Unlock()
		c.kick()
	}

	select {
	case <-cl.done:
	case <-ctx.Done():
		c.mu.Lock()
		select {
		case <-cl.done: // answered meanwhile: a reply is never thrown away
		default:
			cl.abandoned = true
			c.mu.Unlock()
			return Reply{}, fmt.Errorf("gate %s: %w", req.Op, ctx.Err())
		}
		c.mu.Unlock()
	}
	if cl.err != nil {
		return Reply{}, fmt.Errorf("gate %s: %w", req.Op, cl.err)
	}
	r := cl.reply
	if !r.OK {
		return r, &Refused{Reason: r.Reason, RetryAfter: time.Duration(r.RetryAfterS) * time.Second}
	}
	return r, nil
}

// kick wakes the writer.
func (c *Client) kick() {
	select {
	case c.wake <- struct{}{}:
	default: // a wake-up is pending: the writer takes the queue with it
	}
}

// writeDirect writes the request of cl, last in sent, from the caller's
// goroutine, within ctx, and ends the write that c.writing marks. A write
// that ctx interrupts before its first byte leaves cl unsent; one cut
// later breaks the Client.
func (c *Client) writeDirect(ctx context.Context, cl *call) error {
	var n int
	var err error
	if ctx.Done() == nil {
		n, err = c.conn.Write(cl.line)
	} else {
		// The context's deadline is the write's; its cancellation cuts
		// the write short the same way. The deadline is cleared before
		// anyone else writes.
		if dl, ok := ctx.Deadline(); ok {
			c.conn.SetWriteDeadline(dl)
		}
		var wg sync.WaitGroup
		wg.Add(1)
		stop := context.AfterFunc(ctx, func() {
			defer wg.Done()
			c.conn.SetWriteDeadline(time.Unix(1, 0))
		})
		n, err = c.conn.Write(cl.line)
		if stop() {
			wg.Done()
		}
		wg.Wait()
		c.conn.SetWriteDeadline(time.Time{})
	}

	c.mu.Lock()
	c.writing = false
	if len(c.queue) > 0 {
		c.kick() // what was queued meanwhile
	}
	if c.broken != nil {
		err := c.broken // cl failed with it
		c.mu.Unlock()
		return err
	}
	if err != nil && n == 0 && isTimeout(err) {
		// Not a byte written: cl was not sent and never will be.
		c.sent = c.sent[:len(c.sent)-1] // cl: no write could follow it
		cl.abandoned = true
		c.mu.Unlock()
		return ctxErr(ctx)
	}
	c.mu.Unlock()
	if err != nil {
		c.fail(fmt.Errorf("%w: write: %v", ErrBroken, err))
		return c.stopErr()
	}
	return nil
}

// stopErr is why the Client broke.
func (c *Client) stopErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.broken
}

// writeLoop writes what callers queued while another write was under way,
// all of it in one write, until the Client breaks.
func (c *Client) writeLoop() {
	defer c.wg.Done()
	var buf []byte
	for {
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
		for {
			c.mu.Lock()
			if c.broken != nil {
				c.mu.Unlock()
				return
			}
			if c.writing || len(c.queue) == 0 {
				// The caller writing now kicks the writer when it is done.
				c.mu.Unlock()
				break
			}
			buf = buf[:0]
			for _, cl := range c.queue {
				if cl.abandoned {
					continue // given up before it was sent: never sent
				}
				c.sent = append(c.sent, cl)
				buf = append(buf, cl.line...)
			}
			clear(c.queue)
			c.queue = c.queue[:0]
			c.writing = len(buf) > 0
			c.mu.Unlock()
			if len(buf) == 0 {
				continue
			}
			// Registered in sent before the write, so the reader knows a
			// reply that comes back at once. No deadline: a caller gives
			// up on its own context; a cut write breaks the Client.
			_, err := c.conn.Write(buf)
			c.mu.Lock()
			c.writing = false
			c.mu.Unlock()
			if err != nil {
				c.fail(fmt.Errorf("%w: write: %v", ErrBroken, err))
				return
			}
			if cap(buf) > 64<<10 {
				buf = nil // do not keep a burst's buffer for good
			}
		}
	}
}

// readLoop hands each reply to the oldest unanswered request, which it
// must answer by its id, until the Client breaks.
func (c *Client) readLoop() {
	defer c.wg.Done()
	lines := NewLineReader(c.conn)
	for {
		b, err := lines.ReadLine()
		if err != nil {
			c.fail(fmt.Errorf("%w: read: %v", ErrBroken, err))
			return
		}
		if len(b) == 0 {
			continue
		}
		var r Reply
		if err := json.Unmarshal(b, &r); err != nil {
			c.fail(fmt.Errorf("%w: bad reply: %v", ErrBroken, err))
			return
		}
		if err := c.deliver(r); err != nil {
			c.fail(err)
			return
		}
	}
}

// deliver gives r to the oldest unanswered request, or to nobody if its
// caller gave up. A reply that does not fit that request is an error.
func (c *Client) deliver(r Reply) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.head == len(c.sent) {
		return fmt.Errorf("%w: reply id %d with no request pending", ErrBroken, r.ID)
	}
	cl := c.sent[c.head]
	if r.ID != cl.id {
		return fmt.Errorf("%w: reply id %d, want %d", ErrBroken, r.ID, cl.id)
	}
	switch {
	case r.OK && cl.op == OpReserve && r.Token == "":
		return fmt.Errorf("%w: reserve: reply without a token", ErrBroken)
	case r.OK && cl.op == OpStatus && r.Status == nil:
		return fmt.Errorf("%w: status: reply without status", ErrBroken)
	}
	c.sent[c.head] = nil
	c.head++
	switch {
	case c.head == len(c.sent):
		c.sent, c.head = c.sent[:0], 0
	case c.head >= 256 && 2*c.head >= len(c.sent):
		n := copy(c.sent, c.sent[c.head:])
		clear(c.sent[n:])
		c.sent, c.head = c.sent[:n], 0
	}
	if !cl.abandoned {
		cl.reply = r
		close(cl.done)
	}
	return nil
}

// fail breaks the Client with err (the first cause wins): every pending
// call fails with it, the connection is closed, the reader and writer stop.
func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.broken == nil {
		c.broken = err
		close(c.done)
		for _, cl := range c.queue {
			cl.abandoned = true // never sent now
			cl.err = err
			close(cl.done)
		}
		for _, cl := range c.sent[c.head:] {
			if !cl.abandoned {
				cl.err = err
				close(cl.done)
			}
		}
		c.queue, c.sent, c.head = nil, nil, 0
	}
	c.mu.Unlock()
	c.conn.Close()
}

// ctxErr is ctx's error, or DeadlineExceeded when the connection's deadline
// (the context's) came a moment before the context noticed.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return context.DeadlineExceeded
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
