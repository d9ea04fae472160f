// Package testmcp is a line-level MCP client of a yaz-mcp process, for
// tests that send what no SDK would (bad lines, odd ids, calls in flight
// when stdin closes) and read every line the server writes. test/e2e and
// test/adversarial share it.
//
// mcp-go answers out of order and cancels running calls when stdin closes,
// so the client keeps stdin open until Close, routes each response to its
// request by id, and hands notifications and id-less responses over on
// channels of their own.
package testmcp

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testwait"
)

// Message is one JSON-RPC message from the server.
type Message struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// Client is a running yaz-mcp and its line-level client.
type Client struct {
	t      testing.TB
	Cmd    *exec.Cmd
	stdin  io.WriteCloser
	Stderr *testwait.Buffer
	Out    *testwait.Buffer // every line the server wrote
	Nulls  chan Message     // responses with no id (or a null one)
	Notes  chan Message     // notifications and requests from the server
	mu     sync.Mutex
	byID   map[string]chan Message
	nextID int
	done   chan struct{}
}

// Start runs the program at path (yaz-mcp) with env and args. It is killed
// when the test ends; its stderr is logged when the test failed.
func Start(t testing.TB, path string, env []string, args ...string) *Client {
	t.Helper()
	r := &Client{t: t, Stderr: &testwait.Buffer{}, Out: &testwait.Buffer{}, byID: map[string]chan Message{},
		Nulls: make(chan Message, 100), Notes: make(chan Message, 1000), done: make(chan struct{})}
	r.Cmd = exec.Command(path, args...)
	r.Cmd.Env = env
	r.Cmd.Stderr = r.Stderr
	var err error
	if r.stdin, err = r.Cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := r.Cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go r.read(stdout)
	t.Cleanup(func() {
		r.Cmd.Process.Kill()
		testwait.Closed(t, r.done, "the killed yaz-mcp's output to end")
		r.Cmd.Wait()
		if t.Failed() {
			t.Logf("yaz-mcp stderr:\n%s", r.Stderr.String())
		}
	})
	return r
}

func (r *Client) read(stdout io.Reader) {
	defer close(r.done)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		r.Out.Write([]byte(line + "\n"))
		var m Message
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			r.t.Errorf("yaz-mcp wrote a line that is not JSON: %.200q", line)
			continue
		}
		switch {
		case m.Method != "":
			r.Notes <- m
		case len(m.ID) == 0 || string(m.ID) == "null":
			r.Nulls <- m
		default:
			r.mu.Lock()
			ch := r.byID[string(m.ID)]
			r.mu.Unlock()
			if ch == nil {
				r.t.Errorf("response to unknown id %s", m.ID)
				continue
			}
			ch <- m
		}
	}
}

// Exited is closed once the server's stdout has ended.
func (r *Client) Exited() <-chan struct{} { return r.done }

// Send writes one line to the server's stdin.
func (r *Client) Send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		r.t.Fatalf("write to yaz-mcp: %v", err)
	}
}

// Request sends a request with the next id; its response arrives on the
// channel.
func (r *Client) Request(method string, params any) chan Message {
	r.t.Helper()
	r.mu.Lock()
	r.nextID++
	id := r.nextID
	ch := make(chan Message, 1)
	r.byID[strconv.Itoa(id)] = ch
	r.mu.Unlock()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		r.t.Fatal(err)
	}
	r.Send(string(b))
	return ch
}

// LastID is the id of the latest request.
func (r *Client) LastID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nextID
}

// Call sends a request and waits (up to 2 min) for its response.
func (r *Client) Call(method string, params any) Message {
	r.t.Helper()
	return r.Wait(method, r.Request(method, params))
}

// Wait waits (up to 2 min) for the response on ch.
func (r *Client) Wait(what string, ch chan Message) Message {
	r.t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(2 * time.Minute):
		r.t.Fatalf("%s: no response in 2 min", what)
		return Message{}
	}
}

// Initialize is the handshake at protocol version.
func (r *Client) Initialize(version string) {
	r.t.Helper()
	m := r.Call("initialize", map[string]any{"protocolVersion": version, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "1"}})
	if m.Error != nil {
		r.t.Fatalf("initialize: %+v", m.Error)
	}
	r.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// CallTool sends a tools/call; the response arrives on the channel (read it
// with ToolResult).
func (r *Client) CallTool(name string, args any) chan Message {
	r.t.Helper()
	return r.Request("tools/call", map[string]any{"name": name, "arguments": args})
}

// ToolResult is a tools/call response's isError and text; a protocol
// error fails the test.
func (r *Client) ToolResult(name string, m Message) (isError bool, text string) {
	r.t.Helper()
	if m.Error != nil {
		r.t.Fatalf("tools/call %s: protocol error %d %s", name, m.Error.Code, m.Error.Message)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		r.t.Fatalf("tools/call result %s: %v", m.Result, err)
	}
	for _, c := range res.Content {
		text += c.Text
	}
	return res.IsError, text
}

// Tool calls a tool and waits for its isError and text.
func (r *Client) Tool(name string, args any) (isError bool, text string) {
	r.t.Helper()
	return r.ToolResult(name, r.Wait("tools/call "+name, r.CallTool(name, args)))
}

// ToolNames lists the tools.
func (r *Client) ToolNames() []string {
	r.t.Helper()
	m := r.Call("tools/list", map[string]any{})
	if m.Error != nil {
		r.t.Fatalf("tools/list: %+v", m.Error)
	}
	var res struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	json.Unmarshal(m.Result, &res)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// Close closes stdin and requires exit 0 (waiting up to testwait.Hang: a
// guard against a hang, not a speed requirement).
func (r *Client) Close() {
	r.t.Helper()
	r.stdin.Close()
	exited := make(chan error, 1)
	go func() { <-r.done; exited <- r.Cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			r.t.Errorf("yaz-mcp after stdin closed: %v\n%s", err, r.Stderr.String())
		}
	case <-time.After(testwait.Hang):
		r.Cmd.Process.Signal(syscall.SIGKILL)
		r.t.Fatalf("yaz-mcp still running %v after stdin closed", testwait.Hang)
	}
}
