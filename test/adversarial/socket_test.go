package adversarial

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
)

// floodStats counts the flood connections the daemon closed, and those
// of them told "server busy" (refused) first.
type floodStats struct {
	closed, busy atomic.Int64
}

// flood opens n connections to the daemon socket that never finish a
// request: every other one sends nothing, the rest half a line.
func flood(t *testing.T, sock string, n int, stats *floodStats, changed chan<- struct{}) {
	t.Helper()
	for i := range n {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		t.Cleanup(func() { conn.Close() })
		if i%2 == 1 {
			io.WriteString(conn, `{"jsonrpc":"2.0","id":1,"meth`)
		}
		go func() {
			b, _ := io.ReadAll(conn) // until the daemon closes it
			if strings.Contains(string(b), fmt.Sprintf(`"code":%d`, jsonrpc.ServerBusy)) {
				stats.busy.Add(1)
			}
			stats.closed.Add(1)
			select {
			case changed <- struct{}{}:
			default:
			}
		}()
	}
}

// controlHold calls a hold method on the daemon's control socket
// (control.sock beside yazsesd.sock), dialled by hand.
func controlHold(t *testing.T, d *daemon, method string) daemonapi.HoldResult {
	t.Helper()
	conn, err := net.Dial("unix", filepath.Join(d.SocketDir(), "control.sock"))
	if err != nil {
		t.Fatalf("dial the control socket: %v", err)
	}
	c := jsonrpc.NewClient(conn)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var h daemonapi.HoldResult
	if err := c.Call(ctx, method, nil, &h); err != nil {
		t.Fatalf("%s on the control socket: %v", method, err)
	}
	return h
}

// waitClosed waits until at least n flood connections were closed by the
// daemon, or fails after limit.
func waitClosed(t *testing.T, closed *atomic.Int64, changed <-chan struct{}, n int64, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	for closed.Load() < n {
		select {
		case <-changed: // buffered: a close after the check leaves its token
		case <-deadline:
			t.Fatalf("%d flood connections closed by the daemon after %v, want at least %d", closed.Load(), limit, n)
		}
	}
}

// TestIdleConnectionsDoNotStarveControl: 300 and then
// 300 more same-uid connections that never send a whole request do not
// lock out the compositor's `yazsesd ctl hold start|stop` or `status`
// (they go to the control socket, which the flood of the main one does not
// reach), and the daemon's log holds a few summary lines about them, not
// one per connection.
func TestIdleConnectionsDoNotStarveControl(t *testing.T) {
	d := startDaemon(t)
	sock := d.Socket()
	var stats floodStats
	changed := make(chan struct{}, 1)
	const wave = 300
	free := int64(wave - jsonrpc.DefaultMaxConns) // beyond the ordinary slots

	flood(t, sock, wave, &stats, changed)
	// Whatever the policy (refuse the newcomers, or evict the idlest),
	// 44 of the 300 are closed at once: then all 300 have been dealt with.
	waitClosed(t, &stats.closed, changed, free, 30*time.Second)

	ctl := func(args ...string) string {
		t.Helper()
		out, errOut, code := ctl(d, args...)
		if code != 0 {
			t.Errorf("ctl %s with %d idle connections open: exit %d: %s", strings.Join(args, " "), wave, code, strings.TrimSpace(errOut))
		}
		return out
	}
	var h daemonapi.HoldResult
	if out := ctl("hold", "start"); json.Unmarshal([]byte(out), &h) != nil || h.Hold != daemonapi.HoldHolding {
		t.Errorf("ctl hold start printed %q, want the hold state holding", out)
	}
	if out := ctl("hold", "stop"); json.Unmarshal([]byte(out), &h) != nil || h.Hold != daemonapi.HoldIdle || h.Outcome == "" {
		t.Errorf("ctl hold stop printed %q, want the hold state idle and an outcome", out)
	}
	var st daemonapi.Status
	if out := ctl("status"); json.Unmarshal([]byte(out), &st) != nil || st.PID == 0 {
		t.Errorf("ctl status printed %q, want the daemon's status", out)
	}
	if h := controlHold(t, d, daemonapi.MethodHoldStart); h.Hold != daemonapi.HoldHolding {
		t.Errorf("hold.start on the control socket = %+v, want holding", h)
	}
	if h := controlHold(t, d, daemonapi.MethodHoldStop); h.Hold != daemonapi.HoldIdle || h.Outcome == "" {
		t.Errorf("hold.stop on the control socket = %+v, want idle and an outcome", h)
	}

	// A second wave, then status again.
	before := stats.closed.Load()
	flood(t, sock, wave, &stats, changed)
	waitClosed(t, &stats.closed, changed, before+wave, 60*time.Second)
	if out := ctl("status"); json.Unmarshal([]byte(out), &st) != nil || st.PID == 0 {
		t.Errorf("ctl status after %d connections printed %q, want the daemon's status", 2*wave, out)
	}
	opened := int64(2 * wave)
	closedByDaemon, busy := stats.closed.Load(), stats.busy.Load()

	d.Stop() // the last summary line is written at the end
	lines, total := 0, int64(0)
	for _, m := range d.LogRecords() {
		msg, _ := m["msg"].(string)
		if m["part"] != "socket" || m["level"] != "WARN" || !strings.Contains(msg, "connection") {
			continue
		}
		lines++
		if n, ok := m["count"].(float64); ok {
			total += int64(n)
		} else {
			total++
		}
	}
	t.Logf("%d flood connections opened, %d closed by the daemon, %d of them told server busy; %d WARN lines about connections, accounting for %d refused",
		opened, closedByDaemon, busy, lines, total)
	if busy < free {
		t.Errorf("only %d flood connections were told server busy; want at least %d (else this test proves nothing)", busy, free)
	}
	if lines > 4 {
		t.Errorf("the daemon logged %d WARN lines about %d connections; want a few summary lines (at most 4)", lines, total)
	}
	if total < busy {
		t.Errorf("the WARN lines account for %d connections; want at least the %d told server busy", total, busy)
	}
}

// TestSlowlorisCannotHoldASlot: a client that sends a
// request one byte a second is closed before its line is complete; the
// request never runs.
func TestSlowlorisCannotHoldASlot(t *testing.T) {
	d := startDaemon(t)
	conn, err := net.Dial("unix", d.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	line := `{"jsonrpc":"2.0","id":1,"method":"status"}` + "\n"
	closed := make(chan []string, 1)
	go func() {
		var got []string
		sc := bufio.NewScanner(conn)
		for sc.Scan() {
			got = append(got, sc.Text())
		}
		closed <- got
	}()
	var got []string
	ended := false
	sent := 0
	start := time.Now()
	for !ended && sent < len(line) {
		if _, err := conn.Write([]byte{line[sent]}); err != nil {
			break
		}
		sent++
		// The second between bytes is the attack under test, not a wait
		// for something: it ends early only if the daemon hangs up.
		select {
		case got = <-closed:
			ended = true
		case <-time.After(time.Second):
		}
	}
	if !ended {
		select {
		case got = <-closed:
		case <-time.After(10 * time.Second):
			t.Fatalf("the slow client sent its whole line (%d bytes, one a second) and is still connected", sent)
		}
	}
	t.Logf("slow client closed after %d of %d bytes, %v", sent, len(line), time.Since(start).Round(time.Second))
	if sent >= len(line) {
		t.Errorf("the daemon let the slow client send its whole %d-byte line", len(line))
	}
	for _, l := range got {
		if strings.Contains(l, `"result"`) {
			t.Errorf("the slow client's request ran: %s", l)
		}
	}
}

// TestBusyConnectionsLeaveRoomForControl: with every
// connection of the main socket running a request (256 questions waiting
// for a hold to end), the compositor's `ctl hold stop` and `ctl status`
// still get through, on the control socket; other methods (main socket)
// are told the server is busy.
func TestBusyConnectionsLeaveRoomForControl(t *testing.T) {
	d := startDaemon(t)
	if _, errOut, code := ctl(d, "hold", "start"); code != 0 {
		t.Fatalf("ctl hold start: exit %d: %s", code, errOut)
	}
	sock := d.Socket()
	for i := range jsonrpc.DefaultMaxConns {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		t.Cleanup(func() { conn.Close() })
		// The status reply (id 2) comes after the question (id 1) was
		// read: then this connection has a request in flight.
		io.WriteString(conn, `{"jsonrpc":"2.0","id":1,"method":"ask_human","params":{"question":"Waiting?","timeout_s":40}}`+"\n"+
			`{"jsonrpc":"2.0","id":2,"method":"status"}`+"\n")
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil || !strings.Contains(line, `"id":2`) || !strings.Contains(line, `"result"`) {
			t.Fatalf("connection %d: status after the question = %q, %v", i, line, err)
		}
		conn.SetReadDeadline(time.Time{})
	}
	if out, errOut, code := ctl(d, "last"); code == 0 || !strings.Contains(errOut, "server busy") {
		t.Errorf("ctl last with every connection busy: exit %d, %q %q; want server busy", code, out, errOut)
	}
	var st daemonapi.Status
	out, errOut, code := ctl(d, "status")
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Hold != daemonapi.HoldHolding || st.Waiting < jsonrpc.DefaultMaxConns {
		t.Errorf("ctl status with every connection busy: exit %d, %q %q; want holding and %d questions waiting", code, out, errOut, jsonrpc.DefaultMaxConns)
	}
	var h daemonapi.HoldResult
	out, errOut, code = ctl(d, "hold", "stop")
	if code != 0 || json.Unmarshal([]byte(out), &h) != nil || h.Hold != daemonapi.HoldIdle {
		t.Errorf("ctl hold stop with every connection busy: exit %d, %q %q; want idle", code, out, errOut)
	}
	// Dialled by hand: the control socket answers a press and a release.
	if h := controlHold(t, d, daemonapi.MethodHoldStart); h.Hold != daemonapi.HoldHolding {
		t.Errorf("hold.start on the control socket = %+v, want holding", h)
	}
	if h := controlHold(t, d, daemonapi.MethodHoldCancel); h.Hold != daemonapi.HoldIdle {
		t.Errorf("hold.cancel on the control socket = %+v, want idle", h)
	}
}
