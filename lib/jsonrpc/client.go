package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/yazses/yazses/lib/linebound"
)

// clientMaxLineBytes caps one response line read by a Client.
const clientMaxLineBytes = 16 << 20

// ErrClosed is returned by calls on a Client that was closed.
var ErrClosed = errors.New("jsonrpc client closed")

// ErrStreamBusy is returned by Stream on a Client that already runs a
// stream.
var ErrStreamBusy = errors.New("jsonrpc client already runs a stream")

// streamBuffer is how many messages of a stream the reader queues before
// it waits for the Stream caller (and so stops reading the connection).
const streamBuffer = 16

// Client calls methods over one connection. Calls from many goroutines are
// multiplexed by id. How the connection was dialled is the caller's affair.
type Client struct {
	conn  net.Conn
	wsem  chan struct{} // one writer at a time, waitable with a context
	done  chan struct{} // closed when the reader has stopped
	quit  chan struct{} // closed by Close
	close sync.Once

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan *Response
	stream  *clientStream // the running stream, if any
	closing bool
	err     error // why the client stopped; set before done is closed
	srvErr  *Error
}

// clientStream is a running Stream: the reader passes it the stream's
// notifications and then its response, in the order they came.
type clientStream struct {
	id     uint64
	method string
	ch     chan *message
	gone   chan struct{} // closed when Stream returns
}

// message is any line the server sends: a response (ID set, Method
// empty) or a notification (Method set, no ID).
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
}

// NewClient starts a Client on conn. The Client owns conn: Close closes it.
func NewClient(conn net.Conn) *Client {
	c := &Client{
		conn:    conn,
		wsem:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		quit:    make(chan struct{}),
		pending: make(map[uint64]chan *Response),
	}
	go c.readLoop()
	return c
}

// Call sends a request and waits for its response, decoding the result
// into result (which may be nil to drop it). params is marshalled with
// encoding/json and must give an object or an array, or be nil. A JSON-RPC
// error from the server comes back as an *Error. When ctx ends first, Call
// returns at once with ctx's error; a late response is dropped.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("jsonrpc call %s: %w", method, err)
	}
	p, err := marshalParams(params)
	if err != nil {
		return fmt.Errorf("jsonrpc call %s: %w", method, err)
	}
	ch := make(chan *Response, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return fmt.Errorf("jsonrpc call %s: %w", method, err)
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()

	req := &Request{JSONRPC: Version, ID: json.RawMessage(strconv.FormatUint(id, 10)), Method: method, Params: p}
	if err := c.write(ctx, req); err != nil {
		return fmt.Errorf("jsonrpc call %s: %w", method, err)
	}
	var resp *Response
	select {
	case resp = <-ch:
	case <-ctx.Done():
		return fmt.Errorf("jsonrpc call %s: %w", method, ctx.Err())
	case <-c.done:
		select {
		case resp = <-ch: // answered just before the connection ended
		default:
			return fmt.Errorf("jsonrpc call %s: %w", method, c.stopErr())
		}
	}
	if resp.Error != nil {
		return resp.Error
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(resp.Result, result); err != nil {
		return fmt.Errorf("jsonrpc call %s: decode result: %w", method, err)
	}
	return nil
}

// Stream calls a streaming method (see the package comment) and passes the
// params of each notification the server sends for it to each, in order,
// on the caller's goroutine. It returns nil when the server ends the stream
// with a result, the server's *Error when it ends it with an error (a
// refusal such as ServerBusy comes this way), each's error when each fails,
// ctx's error when ctx ends first, and the connection's error when the
// connection ends (the server went away). One stream runs at a time on a
// Client (ErrStreamBusy). Returning does not end the stream in the server:
// close the Client (or its connection's writing side) for that.
func (c *Client) Stream(ctx context.Context, method string, params any, each func(params json.RawMessage) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("jsonrpc stream %s: %w", method, err)
	}
	p, err := marshalParams(params)
	if err != nil {
		return fmt.Errorf("jsonrpc stream %s: %w", method, err)
	}
	st := &clientStream{method: method, ch: make(chan *message, streamBuffer), gone: make(chan struct{})}
	c.mu.Lock()
	switch {
	case c.err != nil:
		err = c.err
	case c.stream != nil:
		err = ErrStreamBusy
	default:
		c.nextID++
		st.id = c.nextID
		c.stream = st
	}
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("jsonrpc stream %s: %w", method, err)
	}
	defer func() {
		c.mu.Lock()
		c.stream = nil
		c.mu.Unlock()
		close(st.gone)
	}()

	req := &Request{JSONRPC: Version, ID: json.RawMessage(strconv.FormatUint(st.id, 10)), Method: method, Params: p}
	if err := c.write(ctx, req); err != nil {
		return fmt.Errorf("jsonrpc stream %s: %w", method, err)
	}
	// handle takes one message; done reports the end of the stream.
	handle := func(m *message) (done bool, err error) {
		if m.Method != "" {
			if err := each(m.Params); err != nil {
				return true, err
			}
			return false, nil
		}
		if m.Error != nil {
			return true, m.Error
		}
		return true, nil
	}
	for {
		select {
		case m := <-st.ch:
			if done, err := handle(m); done {
				return err
			}
		case <-ctx.Done():
			return fmt.Errorf("jsonrpc stream %s: %w", method, ctx.Err())
		case <-c.done:
			// The reader has stopped: what it queued came first.
			for {
				select {
				case m := <-st.ch:
					if done, err := handle(m); done {
						return err
					}
				default:
					return fmt.Errorf("jsonrpc stream %s: %w", method, c.stopErr())
				}
			}
		}
	}
}

// Notify sends a notification: the server runs it and sends nothing back.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	p, err := marshalParams(params)
	if err != nil {
		return fmt.Errorf("jsonrpc notify %s: %w", method, err)
	}
	if err := c.write(ctx, &Request{JSONRPC: Version, Method: method, Params: p}); err != nil {
		return fmt.Errorf("jsonrpc notify %s: %w", method, err)
	}
	return nil
}

// Close closes the connection and waits for the reader to stop. Pending
// and later calls fail with ErrClosed.
func (c *Client) Close() error {
	c.close.Do(func() {
		c.mu.Lock()
		c.closing = true
		c.mu.Unlock()
		close(c.quit)
		c.conn.Close()
	})
	<-c.done
	return nil
}

func marshalParams(params any) (json.RawMessage, error) {
	if params == nil {
		return nil, nil
	}
	p, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("marshal params: %w", err)
	}
	if string(p) == "null" {
		return nil, nil
	}
	return p, nil
}

func (c *Client) stopErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// write sends one whole line. A write that ctx interrupts halfway breaks
// the framing, so it ends the client.
func (c *Client) write(ctx context.Context, req *Request) error {
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("marshal request: %w", err)
	}
	b = append(b, '\n')
	select {
	case c.wsem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return c.stopErr()
	}
	defer func() { <-c.wsem }()
	if err := ctx.Err(); err != nil {
		return err
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		c.conn.SetWriteDeadline(time.Unix(1, 0))
		close(fired)
	})
	n, err := c.conn.Write(b)
	if !stop() {
		<-fired
		c.conn.SetWriteDeadline(time.Time{})
	}
	if err == nil {
		return nil
	}
	if n == 0 && ctx.Err() == nil && (errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)) {
		// The server closed the connection before this request (EPIPE),
		// or the reader already saw it close and closed our end
		// (net.ErrClosed), as Close does too: the reader has or will
		// have what the server said last (a refusal, server busy), then
		// the end. That reason is the call's.
		select {
		case <-c.done:
			return c.stopErr()
		case <-ctx.Done():
		}
	}
	if n > 0 || ctx.Err() == nil {
		c.fail(fmt.Errorf("write request: %w", err))
		c.conn.Close()
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("write request: %w", err)
}

// fail records why the client stops; the first reason wins.
func (c *Client) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	switch {
	case c.closing:
		c.err = ErrClosed
	case c.srvErr != nil:
		c.err = fmt.Errorf("connection closed by server: %w", c.srvErr)
	default:
		c.err = err
	}
}

func (c *Client) readLoop() {
	defer close(c.done)
	lines := linebound.NewReader(c.conn, linebound.Options{Max: clientMaxLineBytes})
	for {
		line, err := lines.ReadLine()
		if err != nil {
			c.fail(fmt.Errorf("read response: %w", err))
			c.conn.Close()
			return
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var m message
		if err := json.Unmarshal(line, &m); err != nil {
			c.fail(fmt.Errorf("read response: %w", err))
			c.conn.Close()
			return
		}
		id, err := strconv.ParseUint(string(bytes.TrimSpace(m.ID)), 10, 64)
		c.mu.Lock()
		st := c.stream
		switch {
		case m.Method != "":
			// A notification: an event of the running stream, or
			// nothing this client asked for.
			if m.ID != nil || st == nil || m.Method != st.method {
				st = nil
			}
		case err != nil:
			// Not an answer to a call of ours: a null id carries a
			// connection-level error (such as ServerBusy) that explains a
			// close that follows.
			if m.Error != nil {
				c.srvErr = m.Error
			}
			st = nil
		case st != nil && id == st.id:
		default:
			st = nil
			if ch, ok := c.pending[id]; ok {
				delete(c.pending, id)
				ch <- &Response{JSONRPC: Version, ID: m.ID, Result: m.Result, Error: m.Error}
			}
		}
		c.mu.Unlock()
		if st != nil {
			// The stream's caller takes it in order; a slow caller slows
			// the reading (the server drops a client that falls
			// WriteTimeout behind).
			select {
			case st.ch <- &m:
			case <-st.gone:
			case <-c.quit:
			}
		}
	}
}
