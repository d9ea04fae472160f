package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
)

// TestPipelinedHoldToggles: five hold.toggle in one write to the real
// daemon are applied in the order sent (holding, idle, holding, idle,
// holding), each answered in turn, as if the client had waited for each
// answer; then a status on the same connection sees the hold that is open.
// (They used to run at once: holding ×3, idle ×2.)
func TestPipelinedHoldToggles(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, baseConfig())
	conn, err := net.Dial("unix", d.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var b strings.Builder
	for id := 1; id <= 5; id++ {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"%s"}`+"\n", id, daemonapi.MethodHoldToggle)
	}
	fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":6,"method":"%s"}`+"\n", daemonapi.MethodStatus)
	conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	want := []string{"holding", "idle", "holding", "idle", "holding", "holding"}
	var got []string
	for i := range want {
		// A toggle that ends a hold decodes it (too short here: at once);
		// the minute covers a loaded machine.
		conn.SetReadDeadline(time.Now().Add(time.Minute))
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("answer %d of %d (after %q): %v\n%s", i+1, len(want), got, err, d.LogTail(20))
		}
		var resp struct {
			ID     int `json:"id"`
			Result struct {
				Hold string `json:"hold"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(line, &resp); err != nil || resp.Error != nil {
			t.Fatalf("answer %d: %s (%v)", i+1, line, err)
		}
		got = append(got, fmt.Sprintf("%d:%s", resp.ID, resp.Result.Hold))
	}
	for i, w := range want {
		if got[i] != fmt.Sprintf("%d:%s", i+1, w) {
			t.Fatalf("answers %q, want ids 1-6 in order with holds %q", got, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := d.Client()
	defer c.Close()
	if r, err := c.Hold(ctx, daemonapi.MethodHoldCancel); err != nil || r.Hold != daemonapi.HoldIdle {
		t.Errorf("hold.cancel after the toggles = %+v, %v", r, err)
	}
}
