package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/yazses/yazses/lib/linebound"
)

// ErrBroken is returned (wrapped with its cause) once the connection to the
// gate can no longer be trusted to stay in step: a write cut short, a reply
// that is not one or does not answer the request it must answer, the gate
// gone, the Client closed. The Client then refuses every later call;
// yazsesd restarts the gate (fully spent) and makes a new Client.
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

// Client talks to one gate over one connection, one request at a time. Its
// methods are safe for concurrent use: a call waits for its turn (within
// its context), writes its request, reads the reply and hands the turn on.
// It starts no goroutine. See the package documentation for what a call
// abandoned to its context means.
type Client struct {
	turn chan struct{} // cap 1: held by the call that uses the connection

	// Guarded by turn.
	conn   net.Conn
	lines  *linebound.Reader
	nextID uint64
	stale  []uint64 // ids of requests on the wire whose callers gave up, oldest first

	mu     sync.Mutex
	broken error
}

// NewClient returns a Client on conn (yazsesd's end of the gate's
// socketpair). The Client owns conn from now on; Close closes it.
func NewClient(conn net.Conn) *Client {
	return &Client{conn: conn, lines: NewLineReader(conn), turn: make(chan struct{}, 1)}
}

// Close closes the connection (the gate sees EOF and exits); a call under
// way (its read or write fails at once) and every later one fail with
// ErrBroken.
func (c *Client) Close() error {
	c.fail(fmt.Errorf("%w: client closed", ErrBroken))
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

// call waits for the turn, sends req and reads its reply, all within ctx.
// A refusal is returned as *Refused.
func (c *Client) call(ctx context.Context, req Request) (Reply, error) {
	select {
	case c.turn <- struct{}{}:
	case <-ctx.Done():
		return Reply{}, fmt.Errorf("gate %s: %w", req.Op, ctx.Err())
	}
	defer func() { <-c.turn }()
	if err := c.err(); err != nil {
		return Reply{}, fmt.Errorf("gate %s: %w", req.Op, err)
	}
	if err := ctx.Err(); err != nil {
		return Reply{}, fmt.Errorf("gate %s: %w", req.Op, err)
	}
	c.nextID++
	req.ID = c.nextID
	r, err := c.exchange(ctx, req)
	if err != nil {
		return Reply{}, fmt.Errorf("gate %s: %w", req.Op, err)
	}
	if !r.OK {
		return r, &Refused{Reason: r.Reason, RetryAfter: time.Duration(r.RetryAfterS) * time.Second}
	}
	return r, nil
}

// exchange writes req, drops the replies to requests abandoned earlier
// and reads req's, with ctx's end as the connection's deadline. It is
// called with the turn held.
func (c *Client) exchange(ctx context.Context, req Request) (Reply, error) {
	line, err := json.Marshal(req)
	if err != nil {
		return Reply{}, err
	}
	if dl, ok := ctx.Deadline(); ok {
		c.conn.SetDeadline(dl)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	stop := context.AfterFunc(ctx, func() {
		defer wg.Done()
		c.conn.SetDeadline(time.Unix(1, 0)) // wakes a blocked read or write
	})
	defer func() {
		if stop() {
			wg.Done()
		}
		wg.Wait()
		c.conn.SetDeadline(time.Time{})
	}()

	if n, err := c.conn.Write(append(line, '\n')); err != nil {
		if n == 0 && isTimeout(err) {
			return Reply{}, ctxErr(ctx) // not a byte sent: never sent
		}
		return Reply{}, c.fail(fmt.Errorf("%w: write: %v", ErrBroken, err))
	}
	// The replies come in request order: first those to the requests whose
	// callers gave up, then req's.
	for len(c.stale) > 0 {
		if _, err := c.read(ctx, c.stale[0], ""); err != nil {
			c.stale = append(c.stale, req.ID)
			return Reply{}, err
		}
		c.stale = c.stale[1:]
	}
	r, err := c.read(ctx, req.ID, req.Op)
	if err != nil {
		c.stale = append(c.stale, req.ID) // its reply is dropped when it comes
	}
	return r, err
}

// read reads the reply to request id (of op; "" for an abandoned one). The
// context's end leaves the Client in step (a partial line is kept); any
// other failure, or a reply that does not fit, breaks it.
func (c *Client) read(ctx context.Context, id uint64, op string) (Reply, error) {
	for {
		b, err := c.lines.ReadLine()
		if err != nil {
			if isTimeout(err) {
				return Reply{}, ctxErr(ctx)
			}
			return Reply{}, c.fail(fmt.Errorf("%w: read: %v", ErrBroken, err))
		}
		if len(b) == 0 {
			continue
		}
		var r Reply
		if err := json.Unmarshal(b, &r); err != nil {
			return Reply{}, c.fail(fmt.Errorf("%w: bad reply: %v", ErrBroken, err))
		}
		switch {
		case r.ID != id:
			return Reply{}, c.fail(fmt.Errorf("%w: reply id %d, want %d", ErrBroken, r.ID, id))
		case r.OK && op == OpReserve && r.Token == "":
			return Reply{}, c.fail(fmt.Errorf("%w: reserve: reply without a token", ErrBroken))
		case r.OK && op == OpStatus && r.Status == nil:
			return Reply{}, c.fail(fmt.Errorf("%w: status: reply without status", ErrBroken))
		}
		return r, nil
	}
}

// err is why the Client broke, or nil.
func (c *Client) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.broken
}

// fail breaks the Client with err (the first cause wins), closes the
// connection and returns the cause.
func (c *Client) fail(err error) error {
	c.mu.Lock()
	if c.broken == nil {
		c.broken = err
	}
	err = c.broken
	c.mu.Unlock()
	c.conn.Close()
	return err
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
