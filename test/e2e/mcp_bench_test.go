package e2e

import (
	"context"
	"os/exec"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMCPTranscribeOverhead: transcribe through yaz-mcp (an MCP
// client, the Go SDK, over stdio) against yaz-decode run directly, on the
// same 60 s file and the same tiny.en-sized model with the same decoder
// settings. Each iteration runs both, alternating which goes first; it
// reports the mean of each and their ratio.
//
//	go test ./test/e2e -run '^$' -bench MCPTranscribeOverhead -benchtime 5x
func BenchmarkMCPTranscribeOverhead(b *testing.B) {
	long := longWAV(b)
	env := mcpEnv(b, false, world.tinyEn)
	cmd := exec.Command(bin("yaz-mcp"), "--daemon", "never")
	cmd.Env = env
	client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	ctx := context.Background()
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	viaMCP := func() time.Duration {
		start := time.Now()
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "transcribe", Arguments: map[string]any{"path": long}})
		if err != nil || r.IsError {
			b.Fatalf("transcribe: %v %s", err, resultText(r))
		}
		return time.Since(start)
	}
	direct := func() time.Duration {
		start := time.Now()
		c := exec.Command(bin("yaz-decode"), "--model="+world.tinyEn, "--output=json", "--language=en",
			"--threads=2", "--beam-size=1", "--max-duration=4h0m0s", long)
		c.Env = env
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("yaz-decode: %v\n%s", err, out)
		}
		return time.Since(start)
	}
	viaMCP() // warm the page cache for both
	var sumMCP, sumDirect time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			sumMCP += viaMCP()
			sumDirect += direct()
		} else {
			sumDirect += direct()
			sumMCP += viaMCP()
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(sumMCP.Milliseconds())/n, "mcp-ms/op")
	b.ReportMetric(float64(sumDirect.Milliseconds())/n, "direct-ms/op")
	b.ReportMetric(float64(sumMCP)/float64(sumDirect), "ratio")
}
