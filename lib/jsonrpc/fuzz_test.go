package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzJSONRPCLine feeds one line to the server's request path: decoding
// never panics, a call always gets exactly one valid JSON-RPC 2.0 response
// carrying its own id, and a notification never gets one.
func FuzzJSONRPCLine(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":[1,2,"x"]}}`,
		`{"jsonrpc":"2.0","id":"a","method":"fail"}`,
		`{"jsonrpc":"2.0","method":"echo"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"echo"}]`,
		`{"jsonrpc":"2.0","id":{},"method":"echo"}`,
		`{"jsonrpc":"2.0","id":1e999,"method":"rpcerr","params":[]}`,
		`{`,
	} {
		f.Add([]byte(seed))
	}
	s := NewServer(nil)
	s.Handle("echo", func(ctx context.Context, params json.RawMessage) (any, error) {
		var v any
		if len(params) > 0 {
			if err := json.Unmarshal(params, &v); err != nil {
				return nil, Errorf(InvalidParams, "bad params")
			}
		}
		return v, nil
	})
	s.Handle("fail", func(ctx context.Context, params json.RawMessage) (any, error) {
		return nil, errors.New("private detail")
	})
	s.Handle("rpcerr", func(ctx context.Context, params json.RawMessage) (any, error) {
		return nil, &Error{Code: 7, Message: "seven", Data: []int{7}}
	})
	f.Fuzz(func(t *testing.T, line []byte) {
		req, resp := decodeRequest(line)
		if (req == nil) == (resp == nil) {
			t.Fatalf("decodeRequest(%q) = %v, %v: want exactly one", line, req, resp)
		}
		if req != nil {
			if req.ID != nil && !validID(req.ID) {
				t.Fatalf("decodeRequest(%q) accepted id %q", line, req.ID)
			}
			resp = s.call(context.Background(), req, s.handler(req.Method))
			if req.ID == nil {
				if resp != nil {
					t.Fatalf("notification %q got response %+v", line, resp)
				}
				return
			}
			if resp == nil {
				t.Fatalf("call %q got no response", line)
			}
		}
		b, err := json.Marshal(resp)
		if err != nil {
			t.Fatalf("marshal response to %q: %v", line, err)
		}
		checkResponse(t, b)
		if req != nil && !bytes.Equal(resp.ID, req.ID) {
			t.Fatalf("response id %q, want the request's %q", resp.ID, req.ID)
		}
		if bytes.Contains(b, []byte("private")) {
			t.Fatalf("response %q leaks a handler error", b)
		}
	})
}

// checkResponse fails unless b is one valid JSON-RPC 2.0 response object.
func checkResponse(t *testing.T, b []byte) {
	t.Helper()
	if !json.Valid(b) || !utf8.Valid(b) || bytes.ContainsRune(b, '\n') {
		t.Fatalf("response %q is not one line of valid JSON", b)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("response %q is not an object: %v", b, err)
	}
	for k := range m {
		switch k {
		case "jsonrpc", "id", "result", "error":
		default:
			t.Fatalf("response %q has member %q", b, k)
		}
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		t.Fatalf("response %q: jsonrpc is not \"2.0\"", b)
	}
	id, ok := m["id"]
	if !ok || (string(id) != "null" && !validID(id)) {
		t.Fatalf("response %q: bad or missing id", b)
	}
	_, hasResult := m["result"]
	rawErr, hasErr := m["error"]
	if hasResult == hasErr {
		t.Fatalf("response %q: want exactly one of result and error", b)
	}
	if hasErr {
		var e struct {
			Code    *int    `json:"code"`
			Message *string `json:"message"`
		}
		if err := json.Unmarshal(rawErr, &e); err != nil || e.Code == nil || e.Message == nil {
			t.Fatalf("response %q: error needs an integer code and a message", b)
		}
	}
}
