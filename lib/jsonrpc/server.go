package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/yazses/yazses/lib/linebound"
)

// Defaults for the Server limits.
const (
	DefaultMaxConns     = 256
	DefaultMaxLineBytes = 1 << 20
	DefaultMaxInFlight  = 32
	DefaultWriteTimeout = 10 * time.Second
	DefaultIdleTimeout  = 30 * time.Second
	DefaultLineTimeout  = 5 * time.Second
	DefaultLogEvery     = 30 * time.Second
	DefaultMaxStreams   = 16
)

// noticeTimeout bounds the write of a connection-level notice (refused,
// line timeout): a small line into a socket buffer that is
// normally empty, so a peer that does not read never holds anyone up.
const noticeTimeout = 100 * time.Millisecond

// internalErrorMessage is the only message a non-*Error handler failure
// produces: the error's own text never leaves the server.
const internalErrorMessage = "internal error"

// Handler serves one method. ctx is cancelled when the client closes the
// connection or only its writing side (a half close: the client still reads
// the answer, which tells how the cancelled call ended), or when the server
// stops; a handler must return soon after. The result is
// marshalled with encoding/json (nil gives a null result). An *Error return
// is sent to the client as is; any other error as InternalError with the
// message "internal error". A notification's result and error are dropped.
type Handler func(ctx context.Context, params json.RawMessage) (any, error)

// StreamHandler serves a streaming method (see the package comment): it
// sends events with send until ctx ends or it has nothing more to send,
// and its return answers the call as a [Handler]'s would, with a null
// result when it returns nil. ctx ends as a Handler's does: the client
// closed the connection or its writing side, or the server stops. send
// writes one notification {"jsonrpc":"2.0","method":METHOD,"params":EVENT}
// on the caller's connection; event must marshal to a JSON object or
// array. It returns an error (and the handler should return) once the
// connection is broken: a write did not finish within WriteTimeout (the
// client does not read), or the connection is gone. send must not be
// called after the handler has returned.
type StreamHandler func(ctx context.Context, params json.RawMessage, send func(event any) error) error

// Server dispatches requests to handlers. Set the limit fields before the
// first Serve or ServeConn; Handle may be called at any time.
type Server struct {
	// MaxConns caps the connections Serve serves at once. A connection
	// beyond it gets a ServerBusy notice and is closed; see the package
	// comment.
	MaxConns int
	// MaxLineBytes caps one request line.
	MaxLineBytes int
	// MaxInFlight caps the running requests of one connection; the server
	// stops reading that connection while the cap is reached.
	MaxInFlight int
	// WriteTimeout bounds the writing of one response. A client that does
	// not read its replies within it is dropped.
	WriteTimeout time.Duration
	// AnswerOnStop: when Serve's context ends, a connection (one with a
	// CloseRead method: a unix or TCP one) stops being read, as after
	// the client's half close: its requests in flight are cancelled and
	// still answer, within WriteTimeout, before it closes. Otherwise it
	// is closed at once.
	AnswerOnStop bool
	// IdleTimeout closes a connection that has no request in flight and
	// has sent no request for this long (accepted, or its last request
	// answered, that long ago). A request that runs longer is never cut.
	// Zero: no limit.
	IdleTimeout time.Duration
	// LineTimeout closes a connection that began a line and did not
	// finish it within this time, counted from its first byte (a client
	// trickling bytes cannot hold a connection). Zero: no limit.
	LineTimeout time.Duration
	// LogEvery is the interval of the refusal log lines:
	// the first of a burst is logged at once, the rest as one line with
	// their count per interval. Zero or less logs each.
	LogEvery time.Duration
	// ConnContext, when non-nil, derives the context of a connection's
	// requests from the server's context and the connection (to carry
	// the peer's credentials to handlers, for example).
	ConnContext func(ctx context.Context, conn net.Conn) context.Context
	// MaxStreams caps the streams (calls of methods registered with
	// HandleStream) running at once over all connections; a call beyond
	// it gets a ServerBusy error. Zero or less serves no stream.
	MaxStreams int

	logger   *slog.Logger
	mu       sync.RWMutex
	handlers map[string]entry
	streams  int // running streams; guarded by mu
}

// entry is a registered method: exactly one of h and stream is set.
// concurrent methods run beside a connection's other requests instead of
// in their order (streams always do).
type entry struct {
	h          Handler
	stream     StreamHandler
	concurrent bool
}

// NewServer returns a Server with the default limits and no methods. A nil
// logger discards. The logger never sees request params or results.
func NewServer(logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Server{
		MaxConns:     DefaultMaxConns,
		MaxLineBytes: DefaultMaxLineBytes,
		MaxInFlight:  DefaultMaxInFlight,
		WriteTimeout: DefaultWriteTimeout,
		IdleTimeout:  DefaultIdleTimeout,
		LineTimeout:  DefaultLineTimeout,
		LogEvery:     DefaultLogEvery,
		MaxStreams:   DefaultMaxStreams,
		logger:       logger,
		handlers:     make(map[string]entry),
	}
}

// Handle registers h for method, replacing any earlier handler. Its calls
// are ordered: on one connection each starts once the ordered call read
// before it has been answered (see the package comment).
func (s *Server) Handle(method string, h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[method] = entry{h: h}
}

// HandleConcurrent registers h for a long-running method, replacing any
// earlier handler: its calls start as soon as they are read and run beside
// the connection's other requests, which do not wait for them.
func (s *Server) HandleConcurrent(method string, h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[method] = entry{h: h, concurrent: true}
}

// HandleStream registers h as the streaming method method, replacing any
// earlier handler. A stream runs concurrently, as HandleConcurrent's
// methods do.
func (s *Server) HandleStream(method string, h StreamHandler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[method] = entry{stream: h, concurrent: true}
}

func (s *Server) handler(method string) entry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.handlers[method]
}

// Streams returns the number of streams running.
func (s *Server) Streams() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.streams
}

// acquireStream counts a stream in, unless MaxStreams are running.
func (s *Server) acquireStream() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streams >= s.MaxStreams {
		return false
	}
	s.streams++
	return true
}

func (s *Server) releaseStream() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.streams--
}

// Serve accepts connections from ln and serves each in its own goroutine
// until ctx is done or ln fails. It closes ln, cancels the connections and
// waits for all of them (and their handlers) before it returns. The end of
// ctx, or ln being closed, is a clean stop and returns nil.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	refused := newLogLimiter(s.logger, s.LogEvery, "jsonrpc connections refused: as many connections as the server serves are open",
		"max_conns", max(s.MaxConns, 1))
	var wg sync.WaitGroup
	err := s.acceptLoop(ctx, ln, &wg, refused)
	stop()
	cancel()
	ln.Close()
	wg.Wait()
	refused.close()
	return err
}

func (s *Server) acceptLoop(ctx context.Context, ln net.Listener, wg *sync.WaitGroup, refused *logLimiter) error {
	// slots holds one token per connection served.
	slots := make(chan struct{}, max(s.MaxConns, 1))
	var backoff time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			if !temporary(err) {
				return fmt.Errorf("jsonrpc serve: accept: %w", err)
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.logger.Warn("jsonrpc accept failed, retrying", "err", err, "backoff", backoff)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		select {
		case slots <- struct{}{}:
		default:
			refuse(conn)
			refused.note()
			continue
		}
		c := s.newConn(conn)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			if err := c.serve(ctx); err != nil {
				s.logger.Debug("jsonrpc connection ended", "err", err)
			}
		}()
	}
}

// refuse tells a connection beyond the limit why it is closed. The reply is
// small enough for an empty socket buffer, so the short deadline never
// stalls the accept loop.
func refuse(conn net.Conn) {
	b, _ := json.Marshal(&Response{
		JSONRPC: Version,
		Error:   &Error{Code: ServerBusy, Message: "server busy: too many connections"},
	})
	conn.SetWriteDeadline(time.Now().Add(noticeTimeout))
	conn.Write(append(b, '\n'))
	conn.Close()
}

func temporary(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EINTR)
}

// ServeConn serves one connection until the client ends it, a response
// cannot be written in time, a line is too long or too slow, the
// connection stays idle past IdleTimeout, or ctx is done. It closes conn
// and waits for the connection's handlers before it returns. The client
// ending the connection is not an error.
func (s *Server) ServeConn(ctx context.Context, conn net.Conn) error {
	return s.newConn(conn).serve(ctx)
}

func (s *Server) newConn(conn net.Conn) *serverConn {
	return &serverConn{s: s, conn: conn, idleSince: time.Now()}
}

type serverConn struct {
	s      *Server
	conn   net.Conn
	cancel context.CancelFunc

	wmu    sync.Mutex
	broken bool // a write failed: nothing more is written

	// mu guards the fields below and the setting of the read deadline.
	mu        sync.Mutex
	inflight  int       // requests running or being answered
	idleSince time.Time // accepted, or last request started or answered
	midLine   bool      // the bytes read so far end inside a line
	lineStart time.Time // when that line's first byte was read
	streaming bool      // a stream runs on it
}

// connKey carries the *serverConn in the context of its requests, for
// streaming methods.
type connKey struct{}

func (c *serverConn) serve(ctx context.Context) error {
	if c.s.ConnContext != nil {
		ctx = c.s.ConnContext(ctx, c.conn)
	}
	// The server stopping closes the connection at once, or with
	// AnswerOnStop its reading side (the answers still go out).
	stop := context.AfterFunc(ctx, func() {
		if cr, ok := c.conn.(interface{ CloseRead() error }); ok && c.s.AnswerOnStop && cr.CloseRead() == nil {
			return
		}
		c.conn.Close()
	})
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	c.cancel = cancel
	ctx = context.WithValue(ctx, connKey{}, c)

	var wg sync.WaitGroup
	err := c.readLoop(ctx, &wg)
	// The reading side ended (EOF, which a half close sends, or an error):
	// the running requests are cancelled, and they still answer before the
	// connection closes, so a client that only shut down its writing side
	// learns how each ended. A handler returns soon after its context ends;
	// WriteTimeout bounds the wait for one that does not.
	cancel()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	bound := time.NewTimer(c.s.WriteTimeout)
	select {
	case <-done:
	case <-bound.C:
	}
	bound.Stop()
	c.conn.Close()
	<-done
	if errors.Is(err, net.ErrClosed) {
		err = nil // closed on our side: ctx ended or a write failed
	}
	return err
}

// Read reads from the connection under the deadline its state calls for:
// the end of LineTimeout inside a line; none while a request is in flight;
// else the end of IdleTimeout. It keeps track of whether the bytes read
// end inside a line.
func (c *serverConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	c.conn.SetReadDeadline(c.readDeadline())
	c.mu.Unlock()
	n, err := c.conn.Read(p)
	if n > 0 {
		now := time.Now()
		c.mu.Lock()
		switch i := bytes.LastIndexByte(p[:n], '\n'); {
		case i < 0:
			if !c.midLine {
				c.midLine, c.lineStart = true, now
			}
		case i == n-1:
			c.midLine = false
		default:
			c.midLine, c.lineStart = true, now
		}
		c.mu.Unlock()
	}
	return n, err
}

// readDeadline is the deadline for the next read; c.mu is held.
func (c *serverConn) readDeadline() time.Time {
	switch {
	case c.midLine && c.s.LineTimeout > 0:
		return c.lineStart.Add(c.s.LineTimeout)
	case c.inflight > 0 || c.s.IdleTimeout <= 0:
		return time.Time{}
	default:
		return c.idleSince.Add(c.s.IdleTimeout)
	}
}

// restartLineClock gives a line already begun its full LineTimeout again.
func (c *serverConn) restartLineClock() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.midLine {
		c.lineStart = time.Now()
	}
}

// start counts a request in flight.
func (c *serverConn) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight++
	c.idleSince = time.Now()
}

// done ends a request in flight; the last one starts the idle clock.
func (c *serverConn) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight--
	if c.inflight > 0 {
		return
	}
	c.idleSince = time.Now()
	if !c.midLine && c.s.IdleTimeout > 0 {
		c.conn.SetReadDeadline(c.idleSince.Add(c.s.IdleTimeout))
	}
}

func (c *serverConn) readLoop(ctx context.Context, wg *sync.WaitGroup) error {
	// A long line ends the connection unread; one cut short by the
	// client's close is no request.
	lines := linebound.NewReader(c, linebound.Options{Max: max(c.s.MaxLineBytes, 0)})
	inflight := make(chan struct{}, max(c.s.MaxInFlight, 1))
	// turn is closed once the last ordered request read so far has been
	// answered: the next ordered one waits for it.
	turn := make(chan struct{})
	close(turn)
	for {
		line, err := lines.ReadLine()
		if errors.Is(err, linebound.ErrTooLong) {
			c.send(&Response{JSONRPC: Version, Error: &Error{
				Code:    InvalidRequest,
				Message: fmt.Sprintf("request line longer than %d bytes", c.s.MaxLineBytes),
			}})
			return fmt.Errorf("jsonrpc read request: %w", err)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil
		}
		if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			c.timedOut()
			return nil
		}
		if err != nil {
			return fmt.Errorf("jsonrpc read request: %w", err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		req, rerr := decodeRequest(line)
		if rerr != nil {
			c.send(rerr)
			continue
		}
		select {
		case inflight <- struct{}{}:
		default:
			// The cap is reached: the server stops reading until a
			// request ends. That pause is not the client's, so a line
			// already begun gets its full LineTimeout from now on.
			select {
			case inflight <- struct{}{}:
			case <-ctx.Done():
				return nil
			}
			c.restartLineClock()
		}
		c.start()
		e := c.s.handler(req.Method)
		var after, mine chan struct{}
		if !e.concurrent {
			after, mine = turn, make(chan struct{})
			turn = mine
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-inflight }()
			if mine != nil {
				defer close(mine)
				<-after // bounded: every handler returns soon after ctx ends
			}
			resp := c.s.call(ctx, req, e)
			if resp == nil {
				c.done()
				return
			}
			// The request ends before its answer leaves, under the write
			// lock: a client that has its answer finds this connection's
			// idle clock running.
			c.sendAfter(resp, c.done)
		}()
	}
}

// timedOut ends a connection whose read deadline passed: a line not
// finished in time, or idle.
func (c *serverConn) timedOut() {
	c.mu.Lock()
	midLine := c.midLine
	c.mu.Unlock()
	switch {
	case midLine:
		c.s.logger.Debug("jsonrpc connection closed: request line not finished in time", "line_timeout", c.s.LineTimeout)
		c.notice(InvalidRequest, fmt.Sprintf("request line not finished within %v", c.s.LineTimeout))
	default:
		c.s.logger.Debug("jsonrpc connection closed: idle", "idle_timeout", c.s.IdleTimeout)
	}
}

// notice writes a connection-level error (null id) that explains the close
// that follows, giving up after noticeTimeout.
func (c *serverConn) notice(code int, msg string) {
	b, _ := json.Marshal(&Response{JSONRPC: Version, Error: &Error{Code: code, Message: msg}})
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.broken {
		return
	}
	c.broken = true // nothing after it
	c.conn.SetWriteDeadline(time.Now().Add(noticeTimeout))
	c.conn.Write(append(b, '\n'))
}

// send writes one whole response line. The first write that fails or times
// out drops the connection.
func (c *serverConn) send(resp *Response) { c.sendAfter(resp, nil) }

// sendAfter is send, running before (when non-nil) with the write lock held,
// before the line is written.
func (c *serverConn) sendAfter(resp *Response, before func()) {
	b, err := json.Marshal(resp)
	if err != nil {
		c.s.logger.Warn("jsonrpc marshal response failed", "err_type", fmt.Sprintf("%T", err))
		b, _ = json.Marshal(internalError(resp.ID))
	}
	b = append(b, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if before != nil {
		before()
	}
	c.writeLocked(b)
}

// errBroken is what send returns on a connection that can no longer be
// written to.
var errBroken = errors.New("jsonrpc connection broken")

// writeLocked writes one whole line under c.wmu, within WriteTimeout. The
// first write that fails or times out drops the connection.
func (c *serverConn) writeLocked(b []byte) error {
	if c.broken {
		return errBroken
	}
	c.conn.SetWriteDeadline(time.Now().Add(c.s.WriteTimeout))
	if _, err := c.conn.Write(b); err != nil {
		c.broken = true
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			// The client went away (a watch ended with Ctrl-C): normal.
			c.s.logger.Debug("jsonrpc client gone: connection closed", "err", err)
		} else {
			c.s.logger.Info("jsonrpc dropping connection: write failed", "err", err)
		}
		c.cancel()
		c.conn.Close()
		return fmt.Errorf("%w: %w", errBroken, err)
	}
	return nil
}

// notify writes one notification of method with event as its params.
func (c *serverConn) notify(method string, event any) error {
	p, err := json.Marshal(event)
	if err != nil {
		return fmt.Errorf("jsonrpc stream %s: marshal event: %w", method, err)
	}
	if len(p) == 0 || p[0] != '{' && p[0] != '[' {
		return fmt.Errorf("jsonrpc stream %s: an event must be a JSON object or array", method)
	}
	b, err := json.Marshal(&Request{JSONRPC: Version, Method: method, Params: p})
	if err != nil {
		return fmt.Errorf("jsonrpc stream %s: %w", method, err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(append(b, '\n'))
}

// startStream marks c as streaming, unless it already is.
func (c *serverConn) startStream() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.streaming {
		return false
	}
	c.streaming = true
	return true
}

func (c *serverConn) endStream() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.streaming = false
}

func internalError(id json.RawMessage) *Response {
	return &Response{JSONRPC: Version, ID: id, Error: &Error{Code: InternalError, Message: internalErrorMessage}}
}

// call runs req's handler e (looked up when req was read) and returns its
// response, or nil for a notification.
func (s *Server) call(ctx context.Context, req *Request, e entry) *Response {
	notification := req.ID == nil
	if e.h == nil && e.stream == nil {
		if notification {
			return nil
		}
		return &Response{JSONRPC: Version, ID: req.ID, Error: &Error{Code: MethodNotFound, Message: "method not found"}}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h := e.h
	if e.stream != nil {
		if notification {
			return nil // nobody to stream to: the caller wants no reply
		}
		h = s.streamCall(req.Method, e.stream)
	}
	result, err := s.run(ctx, h, req)
	if notification {
		return nil
	}
	if err != nil {
		var rpcErr *Error
		if errors.As(err, &rpcErr) && rpcErr != nil {
			return &Response{JSONRPC: Version, ID: req.ID, Error: rpcErr}
		}
		return internalError(req.ID)
	}
	b, err := json.Marshal(result)
	if err != nil {
		s.logger.Warn("jsonrpc marshal result failed", "method", req.Method)
		return internalError(req.ID)
	}
	return &Response{JSONRPC: Version, ID: req.ID, Result: b}
}

// streamCall is the Handler that runs a stream: one per connection, at
// most MaxStreams in all.
func (s *Server) streamCall(method string, h StreamHandler) Handler {
	return func(ctx context.Context, params json.RawMessage) (any, error) {
		c, _ := ctx.Value(connKey{}).(*serverConn)
		if c == nil {
			return nil, &Error{Code: InvalidRequest, Message: "a stream needs a connection"}
		}
		if !c.startStream() {
			return nil, &Error{Code: InvalidRequest, Message: "one stream at a time on a connection"}
		}
		defer c.endStream()
		if !s.acquireStream() {
			return nil, &Error{Code: ServerBusy, Message: "server busy: as many streams as the server serves are open"}
		}
		defer s.releaseStream()
		return nil, h(ctx, params, func(event any) error { return c.notify(method, event) })
	}
}

// run calls h, turning a panic into an error. Only the method name (which
// is registered, so known) is logged, never the params, the error text or
// the panic value.
func (s *Server) run(ctx context.Context, h Handler, req *Request) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.logger.Error("jsonrpc handler panicked", "method", req.Method)
			result, err = nil, errors.New("handler panicked")
		}
	}()
	result, err = h(ctx, req.Params)
	if err != nil {
		var rpcErr *Error
		if !errors.As(err, &rpcErr) {
			s.logger.Warn("jsonrpc handler failed", "method", req.Method, "err_type", fmt.Sprintf("%T", err))
		}
	}
	return result, err
}

// decodeRequest checks one line. It returns the request, or the error
// response to send (which a notification gets too: its fault may be in the
// very member that would make it one).
func decodeRequest(line []byte) (*Request, *Response) {
	fail := func(id json.RawMessage, code int, msg string) (*Request, *Response) {
		return nil, &Response{JSONRPC: Version, ID: id, Error: &Error{Code: code, Message: msg}}
	}
	if !json.Valid(line) {
		return fail(nil, ParseError, "parse error")
	}
	trimmed := bytes.TrimSpace(line)
	if trimmed[0] == '[' {
		return fail(nil, InvalidRequest, "batch requests are not supported")
	}
	if trimmed[0] != '{' {
		return fail(nil, InvalidRequest, "request must be a JSON object")
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &members); err != nil {
		return fail(nil, InvalidRequest, "request must be a JSON object")
	}

	var id json.RawMessage
	if raw, ok := members["id"]; ok {
		raw = bytes.TrimSpace(raw)
		if !validID(raw) {
			return fail(nil, InvalidRequest, "id must be a string or a number")
		}
		id = raw
	}
	var version string
	if err := json.Unmarshal(members["jsonrpc"], &version); err != nil || version != Version {
		return fail(id, InvalidRequest, `jsonrpc must be "2.0"`)
	}
	var method string
	if err := json.Unmarshal(members["method"], &method); err != nil || method == "" {
		return fail(id, InvalidRequest, "method must be a non-empty string")
	}
	params := bytes.TrimSpace(members["params"])
	switch {
	case len(params) == 0 || string(params) == "null":
		params = nil
	case params[0] != '{' && params[0] != '[':
		return fail(id, InvalidRequest, "params must be an object or an array")
	}
	return &Request{JSONRPC: Version, ID: id, Method: method, Params: params}, nil
}

// validID reports whether raw, a valid JSON value, is a string or a number.
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"':
		return utf8.Valid(raw) // echoed back as is, so it must be clean UTF-8
	case c == '-', c >= '0' && c <= '9':
		return true
	}
	return false
}
