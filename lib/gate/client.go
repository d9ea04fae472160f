package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// ErrBroken is returned (wrapped with its cause) once the connection to the
// gate can no longer be trusted to stay in step: a write cut in the middle,
// a reply that is not one, the gate gone. The Client then refuses every
// call; yazsesd restarts the gate (fully spent) and makes a new Client.
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

// Client talks to one gate over one connection, one request at a time.
// Its methods are safe for concurrent use: calls queue in turn.
type Client struct {
	sem    chan struct{} // held by the call on the wire
	conn   net.Conn
	lines  *LineReader
	nextID uint64
	broken error
}

// NewClient returns a Client on conn (yazsesd's end of the gate's
// socketpair). The Client owns conn from now on.
func NewClient(conn net.Conn) *Client {
	return &Client{sem: make(chan struct{}, 1), conn: conn, lines: NewLineReader(conn)}
}

// Close closes the connection; the gate sees EOF and exits.
func (c *Client) Close() error { return c.conn.Close() }

// Reserve asks for a slot. It returns the token to commit or release, or a
// *Refused error (budget_exhausted with RetryAfter, or disabled).
func (c *Client) Reserve(ctx context.Context) (string, error) {
	r, err := c.call(ctx, Request{Op: OpReserve})
	if err != nil {
		return "", err
	}
	if r.Token == "" {
		return "", c.breakf("reserve: reply without a token")
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
	if r.Status == nil {
		return Status{}, c.breakf("status: reply without status")
	}
	return *r.Status, nil
}

// breakf marks the client broken. Call with the semaphore held.
func (c *Client) breakf(format string, a ...any) error {
	c.broken = fmt.Errorf("%w: %s", ErrBroken, fmt.Sprintf(format, a...))
	return c.broken
}

// call sends req and waits for its reply, within ctx. A refusal is returned
// as *Refused.
func (c *Client) call(ctx context.Context, req Request) (Reply, error) {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return Reply{}, fmt.Errorf("gate %s: %w", req.Op, ctx.Err())
	}
	defer func() { <-c.sem }()
	if c.broken != nil {
		return Reply{}, fmt.Errorf("gate %s: %w", req.Op, c.broken)
	}
	if err := ctx.Err(); err != nil {
		return Reply{}, fmt.Errorf("gate %s: %w", req.Op, err)
	}

	// The context's deadline is the connection's; its cancellation cuts
	// the wait short the same way.
	if dl, ok := ctx.Deadline(); ok {
		c.conn.SetDeadline(dl)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	stop := context.AfterFunc(ctx, func() {
		defer wg.Done()
		c.conn.SetDeadline(time.Unix(1, 0))
	})
	defer func() {
		if stop() {
			wg.Done()
		}
		wg.Wait()
		c.conn.SetDeadline(time.Time{})
	}()

	c.nextID++
	req.ID = c.nextID
	line, err := json.Marshal(req)
	if err != nil {
		return Reply{}, fmt.Errorf("gate %s: %w", req.Op, err)
	}
	line = append(line, '\n')
	n, err := c.conn.Write(line)
	if err != nil {
		if n > 0 {
			return Reply{}, fmt.Errorf("gate %s: %w", req.Op, c.breakf("write cut short: %v", err))
		}
		if isTimeout(err) {
			return Reply{}, fmt.Errorf("gate %s: %w", req.Op, ctxErr(ctx))
		}
		return Reply{}, fmt.Errorf("gate %s: %w", req.Op, c.breakf("write: %v", err))
	}

	for {
		b, err := c.lines.ReadLine()
		if err != nil {
			if isTimeout(err) {
				// Only our deadlines time out: the call is abandoned
				// and its late reply will be skipped by its id.
				return Reply{}, fmt.Errorf("gate %s: %w", req.Op, ctxErr(ctx))
			}
			return Reply{}, fmt.Errorf("gate %s: %w", req.Op, c.breakf("read: %v", err))
		}
		if len(b) == 0 {
			continue
		}
		var r Reply
		if err := json.Unmarshal(b, &r); err != nil {
			return Reply{}, fmt.Errorf("gate %s: %w", req.Op, c.breakf("bad reply: %v", err))
		}
		switch {
		case r.ID != 0 && r.ID < req.ID:
			continue // the late reply of an abandoned call
		case r.ID != req.ID:
			return Reply{}, fmt.Errorf("gate %s: %w", req.Op, c.breakf("reply id %d, want %d", r.ID, req.ID))
		}
		if !r.OK {
			return r, &Refused{Reason: r.Reason, RetryAfter: time.Duration(r.RetryAfterS) * time.Second}
		}
		return r, nil
	}
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
