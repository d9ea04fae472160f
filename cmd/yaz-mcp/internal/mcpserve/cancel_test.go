package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

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

// TestCancelledTranscribeIsNotAnswered: the official MCP Go SDK, as a
// host, cancels a transcribe while the decoder runs (it sends
// notifications/cancelled). MCP says the receiver should not answer a
// cancelled request, and above all yaz-mcp must not tell the model that
// the file failed to decode: no response to that call ever comes (the
// wire is read until yaz-mcp logs that it left the call unanswered), the
// decoder is killed, and the server goes on serving the same client.
// (It used to answer "decode_failed: The speech decoder failed on this
// file".)
func TestCancelledTranscribeIsNotAnswered(t *testing.T) {
	noDaemon(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	opt := baseOptions(t)
	opt.Decoder = fakeDecoder(t, "echo $$ > "+pidFile+"\nexec sleep 600\n")
	logs := &testwait.Buffer{}
	opt.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := New(opt)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		err := srv.Serve(context.Background(), inR, outW)
		inR.Close()
		outW.Close()
		served <- err
	}()
	wire := &testwait.Buffer{} // every message either way, as the SDK logs them
	client := sdk.NewClient(&sdk.Implementation{Name: "cancel-test", Version: "1"}, nil)
	cs, err := client.Connect(testwait.Context(t),
		&sdk.LoggingTransport{Transport: &sdk.IOTransport{Reader: outR, Writer: inW}, Writer: wire}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer func() {
		cs.Close()
		if err := testwait.Recv(t, served, "Serve to end after the client closed"); err != nil {
			t.Errorf("Serve = %v", err)
		}
	}()

	ctx, cancel := context.WithCancel(testwait.Context(t))
	called := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "transcribe",
			Arguments: map[string]any{"path": wavFile(t, t.TempDir(), "a.wav")}})
		called <- err
	}()
	pid := waitPID(t, pidFile)
	exited, err := testwait.Exited(pid)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := testwait.Recv(t, called, "CallTool to return after its cancel"); !errors.Is(err, context.Canceled) {
		t.Errorf("CallTool after its cancel = %v, want context.Canceled", err)
	}
	testwait.Closed(t, exited, fmt.Sprintf("the decoder %d to be killed by the cancel", pid))

	// The call's id, from what the client wrote; then any response to it.
	type msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	lines := func(prefix string) []msg {
		var out []msg
		for _, l := range strings.Split(wire.String(), "\n") {
			if rest, ok := strings.CutPrefix(l, prefix); ok {
				var m msg
				if json.Unmarshal([]byte(rest), &m) == nil {
					out = append(out, m)
				}
			}
		}
		return out
	}
	var id json.RawMessage
	for _, m := range lines("write: ") {
		if m.Method == "tools/call" {
			id = m.ID
		}
	}
	if id == nil {
		t.Fatalf("no tools/call on the wire:\n%s", wire.String())
	}
	answer := func() string {
		for _, m := range lines("read: ") {
			if m.Method == "" && string(m.ID) == string(id) {
				return string(m.Result) + string(m.Error)
			}
		}
		return ""
	}
	unanswered := func() bool { return strings.Contains(logs.String(), "cancelled call left unanswered") }
	if err := testwait.Until(testwait.Context(t), func() bool { return answer() != "" || unanswered() }, wire, logs); err != nil {
		t.Fatalf("waiting for a response to the cancelled call or the log line that none is sent: %v\n%s", err, logs.String())
	}
	if a := answer(); a != "" {
		t.Errorf("the cancelled call %s was answered: %s", id, a)
	}
	if _, err := cs.ListTools(testwait.Context(t), nil); err != nil {
		t.Errorf("tools/list after the cancel: %v", err)
	}
	if a := answer(); a != "" {
		t.Errorf("the cancelled call %s was answered: %s", id, a)
	}
}
