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
//   - Requests on one connection are applied in the order they were read:
//     a call of a method registered with [Server.Handle] starts once the
//     one read before it has been answered, so its answer comes after that
//     one's too. A client that pipelines hold.toggle five times gets
//     holding, idle, holding, idle, holding, as if it had waited for each
//     answer; a status sent after hold.start sees the hold. Long-running
//     methods ([Server.HandleConcurrent]: ask_human, transcribe, which wait
//     for a person or a decoder for up to minutes; and every stream) are
//     the exception: they start as soon as they are read, run beside the
//     connection's other calls, and no call waits for them, so a hold.start
//     is never held up behind an ask_human that waits for the person to
//     finish a hold. Their answers may come back in any order; a client
//     matches them by id.
//   - End of input on a connection means the client is gone: the contexts of
//     its running requests are cancelled and no more responses are written.
//     A client must keep its write side open until every reply has arrived.
//   - "params" is decoded by each handler; [DecodeParams] is the strict way
//     (member names exactly as documented, letter case included, each
//     once; valid UTF-8 only), which every yazsesd method uses.
//
// # Connections
//
// A connection is idle while it has no request in flight; a request is in
// flight from the moment its line is read until its response is written.
// The server bounds what connections can hold:
//
//   - Idle: a connection idle for IdleTimeout (30 s by default) since it
//     was accepted or since its last request was answered is closed. Bytes
//     that do not make up a request (blank lines, half a line) do not
//     count as activity. A request that runs long (ask_human waits for a
//     person) is never cut: there is no idle clock while it runs.
//   - Slow lines: once a line's first byte has arrived, the whole line
//     must arrive within LineTimeout (5 s by default), however steadily
//     the bytes trickle in; otherwise the connection gets an InvalidRequest
//     notice (null id) and is closed, with any request it had in flight.
//   - Slots: a Server serves MaxConns connections (256) at once; one more
//     gets a ServerBusy notice (null id) and is closed. No connection is
//     closed to make room: what must always get through gets a socket and
//     a Server of its own (yazsesd serves hold.* and status on its control
//     socket), so the clients of one socket never fill the other's slots.
//     Idle and slow connections free their slots by the two clocks above.
//   - Logging: refusals are logged at WARN at most once per LogEvery
//     (30 s): the first at once, then one line per interval with the count
//     of the refusals in it, so a flood of connections costs a few lines,
//     not one per connection. Idle and slow-line closes are logged at
//     DEBUG.
//
// # Streams
//
// A method registered with [Server.HandleStream] answers a call with a
// stream: after the request, the server sends notifications (requests
// without an id) whose "method" is the called method and whose "params"
// is one event, for as long as the handler runs; the call's response
// (null result, or an error) comes last and ends the stream:
//
//	-> {"jsonrpc":"2.0","id":1,"method":"watch"}
//	<- {"jsonrpc":"2.0","method":"watch","params":{"seq":1,…}}
//	<- {"jsonrpc":"2.0","method":"watch","params":{"seq":2,…}}
//	<- {"jsonrpc":"2.0","id":1,"result":null}
//
// A stream is a request in flight for its whole life, so its connection
// has no idle clock; it holds one of the MaxConns slots, and MaxStreams
// (16) bounds the streams running at once over all connections, so
// watchers can never take the slots that other clients need. A stream call beyond MaxStreams gets a ServerBusy
// error, a second stream on one connection an InvalidRequest error, and a
// stream called as a notification does not run. The client ends a stream
// by closing the connection or its writing side; the server ends it when
// the handler returns or the server stops (the connection closes). A
// client that does not read its events within WriteTimeout is dropped like
// one that does not read its responses. [Client.Stream] is the client
// side.
//
// [Request], [Response] and [Error] are shared by [Server] and [Client].
package jsonrpc

import (
	"encoding/json"
	"fmt"
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
	ServerBusy     = -32000 // a limit is reached (connections: the server closes the connection; streams)
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
