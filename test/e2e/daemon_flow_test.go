package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
	"github.com/yazses/yazses/lib/safesocket"
)

// TestHoldStopsQuestion (barge-in): a hold started while a question plays
// stops it at once; the slot stays spent and the result is no_answer
// interrupted.
func TestHoldStopsQuestion(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, baseConfig().With("budget.ask_human_per_hour", "2"))
	res := make(chan daemonapi.AskResult, 1)
	go func() { res <- d.Ask(longQuestion, 60) }()
	waitSpoken(d, 1) // audio is playing
	c := d.Client()
	ctx := context.Background()
	if _, err := c.Hold(ctx, daemonapi.MethodHoldStart); err != nil {
		t.Fatal(err)
	}
	held := time.Now()
	select {
	case r := <-res:
		if r.Result != daemonapi.NoAnswer || r.Reason != daemonapi.ReasonInterrupted {
			t.Errorf("ask = %+v, want no_answer interrupted", r)
		}
		if el := time.Since(held); el > 3*time.Second {
			t.Errorf("the question ended %v after the hold, want at once", el)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the question went on during the hold")
	}
	if _, err := c.Hold(ctx, daemonapi.MethodHoldCancel); err != nil {
		t.Fatal(err)
	}
	if b := d.Budget(); b.Used != 1 {
		t.Errorf("budget after barge-in = %+v, want the slot spent (1 used)", b)
	}
}

// TestCancelBeforeAudioReleases: a caller that goes away while its
// question waits its turn gets its reservation back; a caller that goes
// away while its question plays does not.
func TestCancelBeforeAudioReleases(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, baseConfig().With("budget.ask_human_per_hour", "2"))
	first := d.Client()
	ctx, cancelFirst := context.WithCancel(context.Background())
	firstDone := make(chan error, 1)
	go func() {
		_, err := first.AskHuman(ctx, daemonapi.AskParams{Question: longQuestion, TimeoutS: 60})
		firstDone <- err
	}()
	d.WaitFor(20*time.Second, "the first question", func() bool { return d.Status().Asking })
	second := d.Client()
	go second.AskHuman(context.Background(), daemonapi.AskParams{Question: "Me too?", TimeoutS: 60})
	d.WaitFor(10*time.Second, "the second question queued", func() bool { return d.Status().Waiting == 1 })
	if b := d.Budget(); b.Used != 2 {
		t.Fatalf("budget with one question playing and one queued = %+v, want 2 used", b)
	}
	second.Close() // gone before any audio: released
	d.WaitFor(10*time.Second, "the queued reservation released", func() bool { return d.Budget().Used == 1 })
	waitSpoken(d, 1) // audio of the first is playing
	cancelFirst()
	first.Close() // gone after audio started: stays spent
	<-firstDone
	d.WaitFor(10*time.Second, "the first question over", func() bool { return !d.Status().Asking })
	if b := d.Budget(); b.Used != 1 {
		t.Errorf("budget = %+v, want 1 used: the spoken question stays charged", b)
	}
	if n := d.Count("ask.released", ""); n != 1 {
		t.Errorf("audit has %d releases, want 1", n)
	}
}

// TestReloadKeepsWhatWasSpent: SIGHUP applies a new cap and opt-in from
// the file; what was spent stays spent; a broken file is refused whole.
func TestReloadKeepsWhatWasSpent(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	d := startDaemon(t, cfg)
	if r := d.Ask("One?", 30); r.Result != daemonapi.Answered {
		t.Fatalf("ask = %+v", r)
	}
	hup := func() {
		t.Helper()
		if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	d.WriteConfig(cfg.With("budget.ask_human_per_hour", "2"))
	hup()
	d.WaitFor(10*time.Second, "the new cap", func() bool { return d.Budget().PerHour == 2 })
	if b := d.Budget(); b.Used != 1 {
		t.Errorf("budget after reload = %+v, want 1 used of 2", b)
	}
	d.WriteConfig(cfg.With("budget.ask_human_per_hour", "-1"))
	hup()
	d.WaitLog(10*time.Second, "the refused reload", func(m map[string]any) bool {
		return strings.Contains(m["msg"].(string), "reload refused")
	})
	if b := d.Budget(); b.PerHour != 2 {
		t.Errorf("a broken file changed the cap: %+v", b)
	}
	d.WriteConfig(cfg.With("budget.ask_human_per_hour", "2").With("mcp.ask_human", "false"))
	hup()
	d.WaitFor(10*time.Second, "the opt-in off", func() bool { return !d.Status().AskHuman })
	if r := d.Ask("Two?", 10); r.Result != daemonapi.Refused || r.Reason != daemonapi.ReasonDisabled {
		t.Errorf("ask after turning the opt-in off = %+v, want refused disabled", r)
	}
	// The new settings are in force before the reload's audit line is
	// written: wait for it, then make sure there is no third.
	d.WaitFor(10*time.Second, "the second config.reloaded", func() bool { return d.Count("config.reloaded", "") >= 2 })
	if n := d.Count("config.reloaded", ""); n != 2 {
		t.Errorf("audit has %d config.reloaded, want 2", n)
	}
}

// TestSupervisorGivesUp: a child that keeps crashing is left down after a
// crash loop and status says so; a child that exits 125 is never
// restarted; the daemon keeps serving.
func TestSupervisorGivesUp(t *testing.T) {
	t.Parallel()
	d := newDaemon(t, baseConfig().
		With("children.decode", arr("/bin/false")).
		With("children.speak", arr("/bin/sh", "-c", "exit 125")))
	d.Start()
	d.WaitRunning("gate")
	d.WaitFor(60*time.Second, "the decoder's crash loop", func() bool { return d.Child("decode").State == "crashloop" })
	sp := d.Child("speak")
	if sp.State != "exited" || sp.Restarts != 0 {
		t.Errorf("speak child that exited 125 = %+v, want exited, never restarted", sp)
	}
	if dc := d.Child("decode"); dc.Restarts < 4 {
		t.Errorf("decode = %+v, want several restarts before giving up", dc)
	}
	if n := d.Count("child.crashloop", ""); n != 1 {
		t.Errorf("audit has %d child.crashloop, want 1", n)
	}
	if r := d.Ask("Anyone?", 5); r.Result != daemonapi.Unavailable {
		t.Errorf("ask with no speaker = %+v, want unavailable", r)
	}
}

// TestSocketSurvivesBadClients: malformed, oversized and half-written
// requests, a client that never reads its replies and 200 idle
// connections leave the daemon serving everybody else.
func TestSocketSurvivesBadClients(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, baseConfig())
	sock := safesocket.SocketPath(filepath.Join(d.Runtime, safesocket.DirName))
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	reply := func(c net.Conn, r *bufio.Reader) jsonrpc.Response {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("no reply: %v", err)
		}
		var resp jsonrpc.Response
		if err := json.Unmarshal(line, &resp); err != nil {
			t.Fatalf("reply %q: %v", line, err)
		}
		return resp
	}
	healthy := func(what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c := d.Client()
		defer c.Close()
		if _, err := c.Status(ctx); err != nil {
			t.Fatalf("after %s: status: %v", what, err)
		}
	}

	// Malformed lines get errors on a connection that keeps working.
	c := dial()
	r := bufio.NewReader(c)
	for _, tc := range []struct {
		line string
		code int
	}{
		{`{not json`, jsonrpc.ParseError},
		{`[1,2]`, jsonrpc.InvalidRequest},
		{`{"jsonrpc":"2.0","id":{},"method":"status"}`, jsonrpc.InvalidRequest},
		{`{"jsonrpc":"2.0","id":2,"method":"no.such"}`, jsonrpc.MethodNotFound},
		{`{"jsonrpc":"2.0","id":3,"method":"ask_human","params":{"question":7}}`, jsonrpc.InvalidParams},
		{`{"jsonrpc":"2.0","id":4,"method":"ask_human","params":{"question":""}}`, jsonrpc.InvalidParams},
		{`{"jsonrpc":"2.0","id":5,"method":"status","params":{"x":1}}`, jsonrpc.InvalidParams},
	} {
		c.Write([]byte(tc.line + "\n"))
		if resp := reply(c, r); resp.Error == nil || resp.Error.Code != tc.code {
			t.Errorf("%s: got %+v, want error %d", tc.line, resp, tc.code)
		}
	}
	c.Write([]byte(`{"jsonrpc":"2.0","id":9,"method":"status"}` + "\n"))
	if resp := reply(c, r); resp.Error != nil {
		t.Errorf("status after bad lines: %+v", resp.Error)
	}
	if b := d.Budget(); b.Used != 0 {
		t.Errorf("malformed calls touched the budget: %+v", b)
	}

	// An oversized line: an error, then that connection (only) is closed.
	big := dial()
	go big.Write(append([]byte(`{"jsonrpc":"2.0","id":1,"method":"status","params":{"x":"`), make([]byte, 3<<20)...))
	br := bufio.NewReader(big)
	if resp := reply(big, br); resp.Error == nil || resp.Error.Code != jsonrpc.InvalidRequest {
		t.Errorf("oversized line: %+v, want invalid request", resp)
	}
	healthy("an oversized line")

	// Half a request, then silence; and half a request, then a hang-up.
	dial().Write([]byte(`{"jsonrpc":"2.0","id":1,"meth`))
	half := dial()
	half.Write([]byte(`{"jsonrpc":"2.0","id":1,"meth`))
	half.Close()
	healthy("half-written requests")

	// A client that sends and never reads: it writes until a write stalls
	// (the socket's buffers are full: the daemon stopped reading it), or
	// all 20000 requests are out.
	deaf := dial()
	stalled := make(chan struct{})
	go func() {
		defer close(stalled)
		line := []byte(`{"jsonrpc":"2.0","id":1,"method":"status"}` + "\n")
		for range 20000 {
			deaf.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
			if _, err := deaf.Write(line); err != nil {
				return
			}
		}
	}()
	<-stalled
	healthy("a client that never reads")

	// 200 idle connections.
	for range 200 {
		dial()
	}
	start := time.Now()
	healthy("200 idle connections")
	if el := time.Since(start); el > time.Second {
		t.Errorf("status took %v with 200 idle connections", el)
	}
}
