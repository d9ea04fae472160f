package mcpserve

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/yazses/yazses/internal/testwait"
)

func TestLineCap(t *testing.T) {
	long := strings.Repeat("x", 100)
	in := "short\n" + long + "\n" + "tail\n" + long + "no newline at the end" + long
	got, err := io.ReadAll(iotest.OneByteReader(newLineCap(strings.NewReader(in), 64)))
	if err != nil {
		t.Fatal(err)
	}
	want := "short\n" + string(overlong) + "tail\n" + string(overlong)
	if string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// Lines at the cap pass whole, through a reader smaller than them.
	exact := strings.Repeat("y", 63) + "\n"
	got, _ = io.ReadAll(newLineCap(iotest.HalfReader(strings.NewReader(exact+exact)), 64))
	if string(got) != exact+exact {
		t.Errorf("lines at the cap: got %q", got)
	}
}

// TestBadInput: each bad line gets its error and the server keeps serving.
func TestBadInput(t *testing.T) {
	noDaemon(t)
	s, _ := startSession(t, baseOptions(t))
	s.initialize("2025-06-18")
	wantNull := func(what string, code int) {
		t.Helper()
		select {
		case m := <-s.nulls:
			if m.Error == nil || m.Error.Code != code {
				t.Errorf("%s: got %+v, want error %d", what, m, code)
			}
		case <-time.After(testwait.Hang):
			t.Fatalf("waiting for the error response to the %s: none within %v", what, testwait.Hang)
		}
		if names := s.toolNames(); len(names) != 1 {
			t.Fatalf("%s: tools/list afterwards = %v", what, names)
		}
	}
	s.send(`{"jsonrpc":"2.0","id":`)
	wantNull("truncated JSON", -32700)
	s.send(`not json at all`)
	wantNull("garbage", -32700)
	s.send("\xff\xfe{\"jsonrpc\":\"2.0\"}")
	wantNull("invalid UTF-8", -32700)
	s.send(`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"transcribe","arguments":{"path":"` + strings.Repeat("A", 10<<20) + `"}}}`)
	wantNull("10 MB line", -32700)

	m := s.call("no/such/method", map[string]any{})
	if m.Error == nil || m.Error.Code != -32601 {
		t.Errorf("unknown method: %+v", m)
	}
	m = s.call("tools/call", map[string]any{"name": "rm_rf", "arguments": map[string]any{}})
	if m.Error == nil || m.Error.Code != -32602 {
		t.Errorf("unknown tool: %+v", m)
	}
	m = s.call("tools/call", map[string]any{"name": "transcribe", "arguments": "not an object"})
	if m.Error == nil {
		r := s.toolResult(m)
		wantError(t, r, InvalidArgument)
	}
	s.send("")
	s.send("   ")
	crlf := make(chan message, 1)
	s.mu.Lock()
	s.waits[`"crlf"`] = crlf
	s.mu.Unlock()
	s.send(`{"jsonrpc":"2.0","id":"crlf","method":"tools/list"}` + "\r")
	if m := s.wait(crlf, "the answer to the CRLF line"); m.Error != nil || !strings.Contains(string(m.Result), "transcribe") {
		t.Errorf("CRLF line: %+v", m)
	}
	if names := s.toolNames(); len(names) != 1 {
		t.Fatalf("after blank lines: tools = %v", names)
	}
}

// FuzzLineCap: lines (newline included) up to the cap pass unchanged;
// longer ones become exactly one overlong line; nothing else changes.
func FuzzLineCap(f *testing.F) {
	f.Add([]byte("a\nbb\nccc\n"), uint8(2), false)
	f.Add([]byte("x\n\n\nyyyyyyyyyyyy"), uint8(3), true)
	f.Add([]byte(""), uint8(1), false)
	f.Fuzz(func(t *testing.T, in []byte, max uint8, oneByte bool) {
		m := int(max%64) + 1
		var want []byte
		rest := in
		for len(rest) > 0 {
			i := bytes.IndexByte(rest, '\n')
			line := rest
			if i >= 0 {
				line = rest[:i+1]
			}
			rest = rest[len(line):]
			if len(line) > m {
				want = append(want, overlong...)
			} else {
				want = append(want, line...)
			}
		}
		var r io.Reader = bytes.NewReader(in)
		if oneByte {
			r = iotest.OneByteReader(r)
		}
		got, err := io.ReadAll(newLineCap(r, m))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("max %d: got %q, want %q", m, got, want)
		}
	})
}
