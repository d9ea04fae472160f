package adversarial

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
)

// rawCall sends one request line on a fresh connection and returns the
// response.
func rawCall(t *testing.T, sock, method, params string) jsonrpc.Response {
	t.Helper()
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, `{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`+"\n", method, params)
	conn.SetReadDeadline(time.Now().Add(2 * time.Minute))
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		t.Fatalf("%s %s: no response: %v", method, params, err)
	}
	var resp jsonrpc.Response
	if err := json.Unmarshal(line, &resp); err != nil {
		t.Fatalf("%s %s: response %q: %v", method, params, line, err)
	}
	return resp
}

// TestStrictParams: parameter names must match exactly,
// once each; a question must be valid UTF-8 with something visible in it.
// Each such call is refused as invalid params before anything is reserved
// or spoken. Invisible characters do not count toward the 500-character
// cap.
func TestStrictParams(t *testing.T) {
	d := startDaemon(t)
	sock := d.Socket()
	for _, tt := range []struct{ name, method, params string }{
		{"upper case name", "ask_human", `{"QUESTION":"Is it on?"}`},
		{"title case name", "ask_human", `{"Question":"Is it on?"}`},
		{"name in two cases", "ask_human", `{"question":"Is it on?","Question":"Is it off?"}`},
		{"name twice", "ask_human", `{"question":"Is it on?","question":"Is it off?"}`},
		{"timeout in upper case", "ask_human", `{"question":"Is it on?","TIMEOUT_S":5}`},
		{"zero width space only", "ask_human", `{"question":"\u200b"}`},
		{"invisible characters only", "ask_human", `{"question":"\u200b\u200d\u2060\ufeff \u00ad\u200c"}`},
		{"hangul filler only", "ask_human", `{"question":"\u3164"}`},
		{"invalid utf8", "ask_human", "{\"question\":\"Is \xff it on?\"}"},
		{"lone surrogate", "ask_human", `{"question":"Is \ud800 it on?"}`},
		{"replacement character", "ask_human", `{"question":"Is \ufffd it on?"}`},
		{"audit upper case", "audit", `{"MAX":1}`},
		{"audit name twice", "audit", `{"max":1,"max":2}`},
		{"transcribe upper case", "transcribe", `{"PATH":"/etc/hostname"}`},
	} {
		resp := rawCall(t, sock, tt.method, tt.params)
		if resp.Error == nil || resp.Error.Code != jsonrpc.InvalidParams {
			t.Errorf("%s: %s %s = result %s, error %+v; want invalid params (%d)", tt.name, tt.method, tt.params, resp.Result, resp.Error, jsonrpc.InvalidParams)
		}
	}
	st, err := d.TryStatus()
	if err != nil || st.Budget.Used != 0 {
		t.Fatalf("after the refused calls: budget %+v (%v); want nothing used", st.Budget, err)
	}
	for _, m := range d.LogRecords() {
		if m["child"] == "speak" && m["msg"] == "spoken" {
			t.Errorf("the speaker spoke during the refused calls: %v", m)
		}
	}

	// 14 visible characters padded with 600 zero-width spaces: asked.
	q := "Is it" + strings.Repeat(`\u200b`, 600) + " ready?"
	resp := rawCall(t, sock, "ask_human", `{"question":"`+q+`","timeout_s":20}`)
	var r daemonapi.AskResult
	if resp.Error != nil || json.Unmarshal(resp.Result, &r) != nil || (r.Result != daemonapi.Answered && r.Result != daemonapi.NoAnswer) {
		t.Errorf("a short question padded with invisible characters = result %s, error %+v; want it asked", resp.Result, resp.Error)
	}
}
