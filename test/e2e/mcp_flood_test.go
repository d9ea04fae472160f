package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testmcp"
	"github.com/yazses/yazses/lib/daemonapi"
)

// TestMCPRefusalFloodKeepsTheSpokenRecord: an MCP
// client that floods ask_human once the budget is spent cannot rotate the
// record of what reached the person out of the audit log. 1,000 refused
// asks through one yaz-mcp, with a log of 16 KiB and one rotated file
// (32 KiB in all; a line a refusal would be about 130 KiB): daemon.started
// and the one ask.spoken are still there, and the refusals are all
// accounted for, summed over ask.refused lines (each one refusal, or a
// count of them). It used to write a line each and rotate everything else
// away.
func TestMCPRefusalFloodKeepsTheSpokenRecord(t *testing.T) {
	t.Parallel()
	const flood, batch = 1000, 50
	cfg := baseConfig().With("audit.max_bytes", "16384").With("audit.keep", "1")
	d := startDaemon(t, cfg)
	if r := d.Ask("Shall I deploy the build?", 30); r.Result != daemonapi.Answered {
		t.Fatalf("first ask = %+v, want answered", r)
	}
	m := startRawMCP(t, hostEnv(d.Dir, "XDG_RUNTIME_DIR="+d.Runtime))
	m.Initialize("2025-11-25")
	start := time.Now()
	for done := 0; done < flood; done += batch {
		var pending []chan testmcp.Message
		for range batch {
			pending = append(pending, m.CallTool("ask_human", map[string]any{"question": "Again?", "timeout_s": 5}))
		}
		for _, ch := range pending {
			isErr, text := m.ToolResult("ask_human", m.Wait("ask_human in the flood", ch))
			if isErr || !strings.HasPrefix(text, "refused (budget_exhausted)") {
				t.Fatalf("ask in the flood: isError=%v %q, want refused (budget_exhausted)", isErr, text)
			}
		}
	}
	t.Logf("%d refused asks through yaz-mcp in %v", flood, time.Since(start).Round(time.Millisecond))
	m.Close()
	d.Stop() // the log is closed: every count is written

	var size int64
	for _, p := range []string{d.Audit, d.Audit + ".1"} {
		if fi, err := os.Stat(p); err == nil {
			size += fi.Size()
		}
	}
	refused := 0
	for _, e := range d.Events() {
		if e.Kind == "ask.refused" {
			refused += max(1, e.Count)
		}
	}
	t.Logf("audit after the flood: %d bytes, %d refusals accounted for", size, refused)
	if n := d.Count("daemon.started", ""); n != 1 {
		t.Errorf("audit after the flood has %d daemon.started, want 1: rotated away", n)
	}
	if n := d.Count("ask.spoken", ""); n != 1 {
		t.Errorf("audit after the flood has %d ask.spoken, want 1: the record of what was spoken was rotated away", n)
	}
	if refused != flood {
		t.Errorf("audit accounts for %d refusals, want %d", refused, flood)
	}
}
