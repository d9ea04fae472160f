package mcpserve

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testwait"
)

// barrier sends a ping with an id no case uses and waits for its answer.
func barrier(t *testing.T, s *session) {
	t.Helper()
	s.mu.Lock()
	s.nextID++
	id := strconv.Quote("barrier-" + strconv.Itoa(s.nextID))
	resp := make(chan message, 1)
	s.waits[id] = resp
	s.mu.Unlock()
	s.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
	s.wait(resp, "the answer to ping "+id)
}

// TestRequestIDs: a response carries its request's id exactly as the
// client wrote it, whatever its size or escapes (mcp-go alone answered 2^64
// as 18446744073709552000 and "\ud800" as "\uFFFD"), and an id MCP does not
// allow (null, a fraction, an exponent, an object, an array, a boolean)
// is refused with a JSON-RPC invalid request error and an id of null
// (mcp-go took them, and read a null id as a notification's).
func TestRequestIDs(t *testing.T) {
	noDaemon(t)
	s, _ := startSession(t, baseOptions(t))
	s.initialize("2025-06-18")
	for _, tc := range []struct {
		id    string
		valid bool
	}{
		{`1`, true},
		{`0`, true},
		{`-7`, true},
		{`9007199254740993`, true},     // 2^53+1: not a float64
		{`18446744073709551616`, true}, // 2^64
		{`-123456789012345678901234567890`, true},
		{`"abc"`, true},
		{`""`, true},
		{`"\ud800"`, true}, // a lone surrogate, escaped
		{`"\u00e9"`, true},
		{`"é"`, true},
		{`"a\"b\\c"`, true},
		{`"1"`, true},
		{"\"\xff\"", false}, // not UTF-8: it could not be echoed as JSON
		{`null`, false},
		{`1.5`, false},
		{`1.0`, false},
		{`1e3`, false},
		{`-0.0`, false},
		{`true`, false},
		{`false`, false},
		{`{}`, false},
		{`{"a":1}`, false},
		{`[]`, false},
		{`[1]`, false},
	} {
		for _, method := range []string{"ping", "tools/list"} {
			t.Run(method+"/"+tc.id, func(t *testing.T) {
				resp := make(chan message, 1)
				if tc.valid {
					s.mu.Lock()
					s.waits[tc.id] = resp
					s.mu.Unlock()
					defer func() {
						s.mu.Lock()
						delete(s.waits, tc.id)
						s.mu.Unlock()
					}()
				} else {
					resp = s.nulls // where the session puts a response with id null
				}
				s.send(`{"jsonrpc":"2.0","id":` + tc.id + `,"method":"` + method + `"}`)
				m := s.wait(resp, "the answer to id "+tc.id)
				switch {
				case tc.valid && (string(m.ID) != tc.id || m.Error != nil):
					t.Errorf("id %s answered with id %s, error %+v", tc.id, m.ID, m.Error)
				case !tc.valid && (string(m.ID) != "null" || m.Error == nil || m.Error.Code != -32600):
					t.Errorf("id %s answered with id %s, error %+v; want an invalid request error (-32600) with id null", tc.id, m.ID, m.Error)
				}
			})
		}
	}
	// Nothing more came for the refused ones: the next line after a ping
	// of the test's own is not theirs.
	barrier(t, s)
	select {
	case m := <-s.nulls:
		t.Errorf("a second answer with id null: %+v", m)
	default:
	}
	// A call with such an id still reaches its tool, and its answer
	// carries the id.
	resp := make(chan message, 1)
	s.mu.Lock()
	s.waits[`18446744073709551617`] = resp
	s.mu.Unlock()
	s.send(`{"jsonrpc":"2.0","id":18446744073709551617,"method":"tools/call","params":{"name":"transcribe","arguments":{}}}`)
	if r := s.toolResult(s.wait(resp, "the tools/call with id 2^64+1")); !r.IsError || !strings.HasPrefix(r.text(), string(InvalidArgument)) {
		t.Errorf("tools/call with id 2^64+1 = %+v, want invalid_argument", r)
	}
}

// waitUnanswered waits for yaz-mcp's log line that a cancelled call was
// left unanswered: its result was dropped, and nothing more comes for it.
func waitUnanswered(t *testing.T, logs *testwait.Buffer) {
	t.Helper()
	unanswered := func() bool { return strings.Contains(logs.String(), "cancelled call left unanswered") }
	if err := testwait.Until(testwait.Context(t), unanswered, logs); err != nil {
		t.Fatalf("waiting for the cancelled call to be left unanswered: %v\n%s", err, logs.String())
	}
}

// TestCancelByOddID: a notifications/cancelled names its call by the id as
// the client wrote it, here one that mcp-go alone would have read as
// another ("\ud800" is "\uFFFD" to it): the decoder is killed and the call
// is not answered.
func TestCancelByOddID(t *testing.T) {
	noDaemon(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	opt := baseOptions(t)
	opt.Decoder = fakeDecoder(t, "echo $$ > "+pidFile+"\nexec sleep 600\n")
	s, logs := startSession(t, opt)
	s.initialize("2025-06-18")
	const id = `"\ud800 call"`
	s.mu.Lock()
	s.waits[id] = make(chan message, 1)
	s.mu.Unlock()
	s.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"transcribe","arguments":{"path":` +
		strconv.Quote(wavFile(t, t.TempDir(), "a.wav")) + `}}}`)
	pid := waitPID(t, pidFile)
	exited, err := testwait.Exited(pid)
	if err != nil {
		t.Fatal(err)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"\uFFFD call"}}`) // not this call
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `}}`)
	testwait.Closed(t, exited, "the decoder to be killed by the cancel")
	waitUnanswered(t, logs)
	if out := s.output(); strings.Contains(out, "ud800") {
		t.Errorf("the cancelled call was answered:\n%s", out)
	}
}
