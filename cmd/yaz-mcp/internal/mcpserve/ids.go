package mcpserve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// calls stands between stdio and mcp-go and keeps two promises of MCP that
// mcp-go alone does not:
//
//   - A request's id comes back exactly as it was sent. mcp-go decodes ids
//     into Go values, so 2^64 came back as 18446744073709552000 and "\ud800"
//     as "\uFFFD". Here each request's id is replaced by a number of our own
//     on its way in and the client's raw JSON put back in the response.
//     An id MCP does not allow (null, or anything but a string or an
//     integer) is refused here with a JSON-RPC invalid request error
//     (mcp-go took objects, arrays and booleans, and read a null id as a
//     notification's).
//   - A request the client cancelled (notifications/cancelled) gets no
//     response: its result, whatever it is, is dropped.
//
// Everything else passes through as it came.
type calls struct {
	log *slog.Logger

	mu     sync.Mutex
	next   int64
	byOurs map[int64]*call
	byRaw  map[string]int64 // the client's raw id of a call in flight: ours

	wmu sync.Mutex
	w   io.Writer // stdout
}

// call is one request in flight.
type call struct {
	raw       json.RawMessage // its id as the client wrote it
	cancelled bool
}

func newCalls(w io.Writer, log *slog.Logger) *calls {
	return &calls{log: log, w: w, byOurs: map[int64]*call{}, byRaw: map[string]int64{}}
}

// integerID is an id MCP allows besides a string: an integer, written as
// JSON writes one (no fraction, no exponent).
var integerID = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// validID reports whether raw is an id MCP allows: a string (of UTF-8, as
// it is echoed as it came) or an integer.
func validID(raw []byte) bool {
	return len(raw) > 0 && raw[0] == '"' && utf8.Valid(raw) || integerID.Match(raw)
}

// invalidID is the answer to a request whose id MCP does not allow. Its id
// is null, as JSON-RPC answers a request whose id it cannot take.
const invalidID = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: the id must be a string or an integer"}}` + "\n"

// in takes one line from the client and returns what mcp-go gets instead
// (nil: nothing; it was answered or dropped here).
func (c *calls) in(line []byte) []byte {
	if !json.Valid(line) {
		return line // mcp-go answers a parse error, with no id
	}
	start, end, ok := member(line, isID)
	if !ok {
		if bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) && method(line) == "notifications/cancelled" {
			return c.cancel(line)
		}
		return line // a notification, or no object: mcp-go's
	}
	if isResponse(line) {
		return line // the client's response to a request of ours
	}
	raw := line[start:end]
	if !validID(raw) {
		c.log.Info("request refused: its id is not a string or an integer")
		c.write([]byte(invalidID))
		return nil
	}
	c.mu.Lock()
	c.next++
	ours := c.next
	c.byOurs[ours] = &call{raw: bytes.Clone(raw)}
	c.byRaw[string(raw)] = ours
	c.mu.Unlock()
	return splice(line, start, end, []byte(strconv.FormatInt(ours, 10)))
}

// cancel passes a notifications/cancelled on with the id mcp-go knows the
// call by, and marks the call so that its response is dropped. A cancel of
// a call not in flight (answered already, or never made) is dropped: with
// the client's id it might name another call to mcp-go.
func (c *calls) cancel(line []byte) []byte {
	ps, pe, ok := member(line, func(k string) bool { return k == "params" })
	if !ok {
		return nil
	}
	params := line[ps:pe]
	rs, re, ok := member(params, func(k string) bool { return k == "requestId" })
	if !ok {
		return nil
	}
	c.mu.Lock()
	ours, ok := c.byRaw[string(params[rs:re])]
	if ok {
		c.byOurs[ours].cancelled = true
	}
	c.mu.Unlock()
	if !ok {
		return nil
	}
	params = splice(params, rs, re, []byte(strconv.FormatInt(ours, 10)))
	return splice(line, ps, pe, params)
}

// Write takes one line from mcp-go (it writes each message whole) and
// writes it to stdout, the client's id put back in a response, or drops
// the response to a cancelled call.
func (c *calls) Write(p []byte) (int, error) {
	if out := c.out(p); out != nil {
		if err := c.write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (c *calls) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(b)
	return err
}

func (c *calls) out(p []byte) []byte {
	start, end, ok := member(p, isID)
	if !ok || method(p) != "" {
		return p // a notification or a request of ours
	}
	ours, err := strconv.ParseInt(string(p[start:end]), 10, 64)
	if err != nil {
		return p
	}
	c.mu.Lock()
	cl := c.byOurs[ours]
	delete(c.byOurs, ours)
	if cl != nil && c.byRaw[string(cl.raw)] == ours {
		delete(c.byRaw, string(cl.raw))
	}
	c.mu.Unlock()
	switch {
	case cl == nil:
		return p // not ours: mcp-go's answer to what it could not read
	case cl.cancelled:
		c.log.Info("cancelled call left unanswered")
		return nil
	}
	return splice(p, start, end, cl.raw)
}

// isResponse reports whether mcp-go reads line as a response from the
// client: it has a result that is not null, or an error and no method.
func isResponse(line []byte) bool {
	if s, e, ok := member(line, func(k string) bool { return strings.EqualFold(k, "result") }); ok && string(line[s:e]) != "null" {
		return true
	}
	_, _, ok := member(line, func(k string) bool { return strings.EqualFold(k, "error") })
	return ok && method(line) == ""
}

// isID matches the member mcp-go takes for the id: encoding/json matches
// keys without regard to case.
func isID(k string) bool { return strings.EqualFold(k, "id") }

// method is the message's method, "" when it has none.
func method(line []byte) string {
	var m struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(line, &m) != nil {
		return ""
	}
	return m.Method
}

// member finds the value of the last member of the JSON object obj whose
// key matches (the one encoding/json keeps) and returns where it starts
// and ends in obj. ok is false when obj is not an object or has none.
func member(obj []byte, match func(string) bool) (start, end int, ok bool) {
	d := json.NewDecoder(bytes.NewReader(obj))
	d.UseNumber()
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return 0, 0, false
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return 0, 0, false
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return 0, 0, false
		}
		if match(k) {
			e := int(d.InputOffset())
			start, end, ok = e-len(v), e, true
		}
	}
	if _, err := d.Token(); err != nil {
		return 0, 0, false
	}
	return start, end, ok
}

// splice returns b with b[start:end] replaced by v.
func splice(b []byte, start, end int, v []byte) []byte {
	out := make([]byte, 0, len(b)-(end-start)+len(v))
	out = append(out, b[:start]...)
	out = append(out, v...)
	return append(out, b[end:]...)
}

// inbound is stdin as mcp-go reads it: each line through calls.in.
type inbound struct {
	r       *bufio.Reader
	c       *calls
	pending []byte
	err     error
}

func newInbound(r io.Reader, c *calls) *inbound {
	return &inbound{r: bufio.NewReaderSize(r, 64<<10), c: c}
}

func (in *inbound) Read(p []byte) (int, error) {
	for len(in.pending) == 0 {
		if in.err != nil {
			return 0, in.err
		}
		line, err := in.r.ReadBytes('\n')
		if err != nil {
			in.err = err
			if !errors.Is(err, io.EOF) || len(line) == 0 {
				continue
			}
		}
		in.pending = in.c.in(line)
	}
	n := copy(p, in.pending)
	in.pending = in.pending[n:]
	return n, nil
}
