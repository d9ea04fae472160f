package mcpserve

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
)

// TestTranscribeCancelIsNotAWarning: a client that
// cancels a transcribe, on the local decoder or on the daemon, is a normal
// end of the call: yaz-mcp logs it at INFO (tool call, outcome
// cancelled), with no WARN or ERROR line (it used to log a WARN with
// "broken pipe").
func TestTranscribeCancelIsNotAWarning(t *testing.T) {
	cancelOnce := func(t *testing.T, opt Options, started func()) string {
		t.Helper()
		s, logs := startSession(t, opt)
		s.initialize("2025-06-18")
		id, _ := s.request("tools/call", map[string]any{"name": "transcribe",
			"arguments": map[string]any{"path": wavFile(t, t.TempDir(), "a.wav")},
			"_meta":     map[string]any{"progressToken": 5}})
		started()
		s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + strconv.Itoa(id) + `,"reason":"user"}}`)
		cancelled := func() bool { return strings.Contains(logs.String(), "outcome=cancelled") }
		if err := testwait.Until(testwait.Context(t), cancelled, logs); err != nil {
			t.Fatalf("waiting for the \"tool call … outcome=cancelled\" line after the cancel: %v\n%s", err, logs.String())
		}
		if names := s.toolNames(); len(names) != 1 { // still serving
			t.Fatalf("tools after cancel = %v", names)
		}
		s.close()
		return logs.String()
	}
	check := func(t *testing.T, logs string) {
		t.Helper()
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
				t.Errorf("a cancel logged %q", line)
			}
		}
	}
	t.Run("local", func(t *testing.T) {
		noDaemon(t)
		pidFile := filepath.Join(t.TempDir(), "pid")
		opt := baseOptions(t)
		// A decoder that draws its progress bar until it is killed.
		opt.Decoder = fakeDecoder(t, "echo $$ > "+pidFile+"\nwhile :; do printf '\\rdecoding [==  ]  10%% 1s' >&2; sleep 0.05; done\n")
		check(t, cancelOnce(t, opt, func() { waitPID(t, pidFile) }))
	})
	t.Run("daemon", func(t *testing.T) {
		called := make(chan struct{}, 1)
		fakeDaemon(t, map[string]jsonrpc.Handler{
			daemonapi.MethodTranscribe: func(ctx context.Context, params json.RawMessage) (any, error) {
				called <- struct{}{}
				<-ctx.Done()
				return nil, ctx.Err()
			},
		})
		opt := baseOptions(t)
		opt.Decoder = fakeDecoder(t, "exit 1\n")
		check(t, cancelOnce(t, opt, func() { testwait.Recv(t, called, "the daemon's transcribe to be called") }))
	})
}
