// Package jsonrpc is JSON-RPC 2.0 over a stream connection, one compact JSON
// object per line (NDJSON), as spoken on the yazsesd daemon socket.
//
// The wire format is the JSON-RPC 2.0 specification with these choices:
//
//   - Each message is one line: a JSON object followed by '\n'. Blank lines
//     are ignored. A line longer than the server's MaxLineBytes gets an
//     InvalidRequest response and the connection is closed; the rest of the
//     line is never read.
//   - Batches (a JSON array on a line) are not supported: they get one
//     InvalidRequest response with a null id.
//   - An id must be a string or a number. An object, array, boolean or null
//     id is rejected with InvalidRequest (and a null response id) before any
//     handler runs. A request without an id is a notification: it runs, but
//     gets no response, not even an error.
//   - "params", when present, must be an object or an array; null counts as
//     absent.
//   - A handler error that is an [*Error] is sent as is; any other error is
//     sent as InternalError with the fixed message "internal error", because
//     its text could hold private data.
//   - Requests on one connection run concurrently and their responses may
//     come back in any order; a client matches them by id.
//   - End of input on a connection means the client is gone: the contexts of
//     its running requests are cancelled and no more responses are written.
//     A client must keep its write side open until every reply has arrived.
//
// [Request], [Response] and [Error] are shared by [Server] and [Client].
package jsonrpc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Version is the value of the "jsonrpc" member of every message.
const Version = "2.0"

// Error codes defined by the JSON-RPC 2.0 specification, and the one
// implementation-defined server error this package uses.
const (
	ParseError     = -32700 // the line is not valid JSON
	InvalidRequest = -32600 // valid JSON, but not an acceptable request
	MethodNotFound = -32601 // no handler for the method
	InvalidParams  = -32602 // handlers return it for bad parameters
	InternalError  = -32603 // the handler failed
	ServerBusy     = -32000 // the connection limit is reached; the server closes the connection
)

// Request is a call or, without an ID, a notification.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// Response answers a call. Exactly one of Result and Error is set. ID is
// null when the request's id could not be read.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Error is a JSON-RPC error object. Handlers return one (for example with
// Code InvalidParams) to send it to the client as is.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// Error implements the error interface.
func (e *Error) Error() string {
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}

// Errorf returns an *Error with the given code and a formatted message.
// The message goes to the client: keep private data out of it.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// errLineTooLong reports a line longer than the reader's limit.
var errLineTooLong = errors.New("line too long")

// readLine returns the next line without its '\n'. A line longer than max
// bytes gives errLineTooLong after reading at most about max bytes of it. A
// last line without '\n' before EOF is incomplete and is dropped: the error
// is io.EOF (or io.ErrUnexpectedEOF when bytes were dropped).
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var buf []byte
	for {
		frag, err := r.ReadSlice('\n')
		n := len(buf) + len(frag)
		if err == nil {
			n-- // the newline does not count
		}
		if n > max {
			return nil, errLineTooLong
		}
		switch {
		case err == nil:
			if buf == nil {
				return frag[:len(frag)-1], nil
			}
			buf = append(buf, frag...)
			return buf[:len(buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			buf = append(buf, frag...)
		default:
			if errors.Is(err, io.EOF) && n > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}
