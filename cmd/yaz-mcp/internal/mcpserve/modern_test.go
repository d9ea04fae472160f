package mcpserve

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/internal/testwait"
)

// TestModernProtocol: a client of protocol 2026-07-28 (stateless: no
// initialize, each request says its version in _meta) finds the server
// with server/discover and gets what a client of the handshake gets: the
// same tools with the same schemas, the ids it wrote, the small error
// vocabulary, and no answer to a call it cancelled (the decoder killed).
func TestModernProtocol(t *testing.T) {
	noDaemon(t)
	for _, on := range []bool{false, true} {
		t.Run("ask_human="+strconv.FormatBool(on), func(t *testing.T) {
			opt := baseOptions(t)
			opt.Config.MCP.AskHuman = on
			legacy, _ := startSession(t, opt)
			legacy.initialize("2025-11-25")
			s, _ := startSession(t, opt)
			s.modern()

			m := s.call("server/discover", map[string]any{})
			if m.Error != nil {
				t.Fatalf("server/discover: %s", m.Error.Message)
			}
			var d struct {
				SupportedVersions []string `json:"supportedVersions"`
				Meta              struct {
					ServerInfo struct{ Name string } `json:"io.modelcontextprotocol/serverInfo"`
				} `json:"_meta"`
				Capabilities map[string]any `json:"capabilities"`
				Instructions string         `json:"instructions"`
			}
			if err := json.Unmarshal(m.Result, &d); err != nil {
				t.Fatalf("server/discover result %s: %v", m.Result, err)
			}
			for _, v := range []string{"2026-07-28", "2025-11-25", "2025-06-18"} {
				if !slices.Contains(d.SupportedVersions, v) {
					t.Errorf("server/discover: supported versions %v lack %s", d.SupportedVersions, v)
				}
			}
			if d.Meta.ServerInfo.Name != Name || d.Capabilities["tools"] == nil || !strings.Contains(d.Instructions, "untrusted data") {
				t.Errorf("server/discover = %s", m.Result)
			}

			tools := func(s *session) any {
				t.Helper()
				m := s.call("tools/list", map[string]any{})
				if m.Error != nil {
					t.Fatalf("tools/list: %s", m.Error.Message)
				}
				var r struct {
					Tools []map[string]any `json:"tools"`
				}
				if err := json.Unmarshal(m.Result, &r); err != nil {
					t.Fatal(err)
				}
				slices.SortFunc(r.Tools, func(a, b map[string]any) int { return strings.Compare(a["name"].(string), b["name"].(string)) })
				return r.Tools
			}
			want := tools(legacy)
			if diff := cmp.Diff(want, tools(s)); diff != "" {
				t.Errorf("tools/list at 2026-07-28 differs from 2025-11-25 (-legacy +modern):\n%s", diff)
			}
			if n := len(want.([]map[string]any)); n != map[bool]int{false: 1, true: 2}[on] {
				t.Errorf("%d tools", n)
			}

			wantError(t, s.tool("transcribe", map[string]any{}), InvalidArgument)
			wantError(t, s.tool("transcribe", map[string]any{"path": "/dev/zero"}), NotAFile)
			if on {
				r := s.tool("ask_human", map[string]any{"question": "Deploy?", "timeout_s": 5})
				if r.IsError || !strings.Contains(string(r.StructuredContent), `"daemon_not_running"`) {
					t.Errorf("ask_human without a daemon = %s %s", r.text(), r.StructuredContent)
				}
			}
		})
	}
}

// TestModernRequestIDs: at 2026-07-28 too, an id comes back exactly as the
// client wrote it and an id MCP does not allow is refused.
func TestModernRequestIDs(t *testing.T) {
	noDaemon(t)
	s, _ := startSession(t, baseOptions(t))
	s.modern()
	meta, err := json.Marshal(modernMeta())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id    string
		valid bool
	}{
		{`9007199254740993`, true},
		{`18446744073709551616`, true},
		{`"\ud800"`, true},
		{`"a\"b\\c"`, true},
		{`null`, false},
		{`1.5`, false},
		{`{}`, false},
	} {
		t.Run(tc.id, func(t *testing.T) {
			resp := s.nulls
			if tc.valid {
				resp = make(chan message, 1)
				s.mu.Lock()
				s.waits[tc.id] = resp
				s.mu.Unlock()
			}
			s.send(`{"jsonrpc":"2.0","id":` + tc.id + `,"method":"tools/call","params":{"name":"transcribe","arguments":{},"_meta":` + string(meta) + `}}`)
			m := s.wait(resp, "the answer to id "+tc.id)
			switch {
			case tc.valid:
				if string(m.ID) != tc.id {
					t.Errorf("id %s answered with id %s", tc.id, m.ID)
				}
				wantError(t, s.toolResult(m), InvalidArgument)
			case string(m.ID) != "null" || m.Error == nil || m.Error.Code != -32600:
				t.Errorf("id %s answered with id %s, error %+v; want an invalid request error (-32600) with id null", tc.id, m.ID, m.Error)
			}
		})
	}
}

// TestModernCancel: a 2026-07-28 call cancelled by notifications/cancelled
// kills its decoder and is never answered; the server goes on serving.
func TestModernCancel(t *testing.T) {
	noDaemon(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	opt := baseOptions(t)
	opt.Decoder = fakeDecoder(t, "echo $$ > "+pidFile+"\nexec sleep 600\n")
	s, logs := startSession(t, opt)
	s.modern()
	id, _ := s.request("tools/call", map[string]any{"name": "transcribe",
		"arguments": map[string]any{"path": wavFile(t, t.TempDir(), "a.wav")}})
	pid := waitPID(t, pidFile)
	exited, err := testwait.Exited(pid)
	if err != nil {
		t.Fatal(err)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + strconv.Itoa(id) + `,"reason":"user"}}`)
	testwait.Closed(t, exited, "the decoder to be killed by the cancel")
	waitUnanswered(t, logs)
	if names := s.toolNames(); len(names) != 1 {
		t.Fatalf("tools after the cancel = %v", names)
	}
	for _, l := range strings.Split(s.output(), "\n") {
		if strings.HasPrefix(l, `{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,`) {
			t.Errorf("the cancelled call was answered: %s", l)
		}
	}
}

// TestMemberNames: JSON-RPC and MCP member names are exact. One that
// differs only in case, or one given twice, is refused with an invalid
// request error (-32600) that carries the request's id as written
// (mcp-go 1.2 read "ID", "Method" or "params.Name" as the member they
// fold to, as encoding/json does, and the last of two "method"s).
func TestMemberNames(t *testing.T) {
	noDaemon(t)
	s, _ := startSession(t, baseOptions(t))
	s.initialize("2025-11-25")
	for i, line := range []string{
		`{"jsonrpc":"2.0","ID":%s,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":%s,"Method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":%s,"method":"tools/list","method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"Name":"transcribe","arguments":{}}}`,
	} {
		id := strconv.Quote("member-" + strconv.Itoa(i))
		resp := make(chan message, 1)
		s.mu.Lock()
		s.waits[id] = resp
		s.mu.Unlock()
		s.send(strings.Replace(line, "%s", id, 1))
		if m := s.wait(resp, "the answer to "+id); m.Error == nil || m.Error.Code != -32600 {
			t.Errorf("%s: answered %+v, want an invalid request error (-32600)", line, m)
		}
	}
}
