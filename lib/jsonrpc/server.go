package jsonrpc

import (
	"bufio"
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
)

// Defaults for the Server limits.
const (
	DefaultMaxConns     = 256
	DefaultMaxLineBytes = 1 << 20
	DefaultMaxInFlight  = 32
	DefaultWriteTimeout = 10 * time.Second
)

// internalErrorMessage is the only message a non-*Error handler failure
// produces: the error's own text never leaves the server.
const internalErrorMessage = "internal error"

// Handler serves one method. ctx is cancelled when the connection closes or
// the server stops; a handler must return soon after. The result is
// marshalled with encoding/json (nil gives a null result). An *Error return
// is sent to the client as is; any other error as InternalError with the
// message "internal error". A notification's result and error are dropped.
type Handler func(ctx context.Context, params json.RawMessage) (any, error)

// Server dispatches requests to handlers. Set the limit fields before the
// first Serve or ServeConn; Handle may be called at any time.
type Server struct {
	// MaxConns caps the connections Serve serves at once; a connection
	// beyond it gets a ServerBusy error and is closed.
	MaxConns int
	// MaxLineBytes caps one request line.
	MaxLineBytes int
	// MaxInFlight caps the running requests of one connection; the server
	// stops reading that connection while the cap is reached.
	MaxInFlight int
	// WriteTimeout bounds the writing of one response. A client that does
	// not read its replies within it is dropped.
	WriteTimeout time.Duration
	// ConnContext, when non-nil, derives the context of a connection's
	// requests from the server's context and the connection (to carry
	// the peer's credentials to handlers, for example).
	ConnContext func(ctx context.Context, conn net.Conn) context.Context

	logger   *slog.Logger
	mu       sync.RWMutex
	handlers map[string]Handler
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
		logger:       logger,
		handlers:     make(map[string]Handler),
	}
}

// Handle registers h for method, replacing any earlier handler.
func (s *Server) Handle(method string, h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[method] = h
}

func (s *Server) handler(method string) Handler {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.handlers[method]
}

// Serve accepts connections from ln and serves each in its own goroutine
// until ctx is done or ln fails. It closes ln, cancels the connections and
// waits for all of them (and their handlers) before it returns. The end of
// ctx, or ln being closed, is a clean stop and returns nil.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	var wg sync.WaitGroup
	err := s.acceptLoop(ctx, ln, &wg)
	stop()
	cancel()
	ln.Close()
	wg.Wait()
	return err
}

func (s *Server) acceptLoop(ctx context.Context, ln net.Listener, wg *sync.WaitGroup) error {
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
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				if err := s.ServeConn(ctx, conn); err != nil {
					s.logger.Debug("jsonrpc connection ended", "err", err)
				}
			}()
		default:
			s.logger.Warn("jsonrpc connection refused: too many connections", "max", cap(slots))
			refuse(conn)
		}
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
	conn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
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
// cannot be written in time, a line is too long, or ctx is done. It closes
// conn and waits for the connection's handlers before it returns. The
// client ending the connection is not an error.
func (s *Server) ServeConn(ctx context.Context, conn net.Conn) error {
	if s.ConnContext != nil {
		ctx = s.ConnContext(ctx, conn)
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &serverConn{s: s, conn: conn, cancel: cancel}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	var wg sync.WaitGroup
	err := c.readLoop(ctx, &wg)
	cancel()
	conn.Close()
	wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil // closed on our side: ctx ended or a write failed
	}
	return err
}

type serverConn struct {
	s      *Server
	conn   net.Conn
	cancel context.CancelFunc

	wmu    sync.Mutex
	broken bool // a write failed: nothing more is written
}

func (c *serverConn) readLoop(ctx context.Context, wg *sync.WaitGroup) error {
	r := bufio.NewReaderSize(c.conn, min(64<<10, max(c.s.MaxLineBytes, 16)+1))
	inflight := make(chan struct{}, max(c.s.MaxInFlight, 1))
	for {
		line, err := readLine(r, c.s.MaxLineBytes)
		if errors.Is(err, errLineTooLong) {
			c.send(&Response{JSONRPC: Version, Error: &Error{
				Code:    InvalidRequest,
				Message: fmt.Sprintf("request line longer than %d bytes", c.s.MaxLineBytes),
			}})
			return fmt.Errorf("jsonrpc read request: %w", err)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
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
		case <-ctx.Done():
			return nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-inflight }()
			if resp := c.s.call(ctx, req); resp != nil {
				c.send(resp)
			}
		}()
	}
}

// send writes one whole response line. The first write that fails or times
// out drops the connection.
func (c *serverConn) send(resp *Response) {
	b, err := json.Marshal(resp)
	if err != nil {
		c.s.logger.Warn("jsonrpc marshal response failed", "err_type", fmt.Sprintf("%T", err))
		b, _ = json.Marshal(internalError(resp.ID))
	}
	b = append(b, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.broken {
		return
	}
	c.conn.SetWriteDeadline(time.Now().Add(c.s.WriteTimeout))
	if _, err := c.conn.Write(b); err != nil {
		c.broken = true
		c.s.logger.Info("jsonrpc dropping connection: write failed", "err", err)
		c.cancel()
		c.conn.Close()
	}
}

func internalError(id json.RawMessage) *Response {
	return &Response{JSONRPC: Version, ID: id, Error: &Error{Code: InternalError, Message: internalErrorMessage}}
}

// call runs req's handler and returns its response, or nil for a
// notification.
func (s *Server) call(ctx context.Context, req *Request) *Response {
	notification := req.ID == nil
	h := s.handler(req.Method)
	if h == nil {
		if notification {
			return nil
		}
		return &Response{JSONRPC: Version, ID: req.ID, Error: &Error{Code: MethodNotFound, Message: "method not found"}}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
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
