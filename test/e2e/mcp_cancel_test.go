package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
)

// TestMCPCancelledAskSaysWhetherCharged: an MCP client that cancels an
// ask_human is told the truth about its slot. Cancelled while the question
// waits for a hold: nothing was spoken, nothing charged. Cancelled while
// the daemon listens for the answer: the question may have been heard and
// stays charged (it used to say only "The call was cancelled.", then that
// the person heard it, which a cancel part way cannot know).
func TestMCPCancelledAskSaysWhetherCharged(t *testing.T) {
	t.Parallel()
	cfg := baseConfig().
		With("budget.ask_human_per_hour", "5").
		With("ask.max_answer_s", "60").
		// A silent microphone: no answer ever comes, the daemon listens.
		With("children.capture", arr(bin("yaz-capture"), "--backend", "null"))
	d := startDaemon(t, cfg)
	m := startRawMCP(t, hostEnv(d.Dir, "XDG_RUNTIME_DIR="+d.Runtime))
	m.Initialize("2025-11-25")

	cancelAsk := func(wait func()) (text string, got bool) {
		t.Helper()
		ch := m.Request("tools/call", map[string]any{"name": "ask_human",
			"arguments": map[string]any{"question": "Shall I go on?", "timeout_s": 45}})
		wait()
		id := m.LastID()
		m.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + itoa(id) + `,"reason":"user"}}`)
		select {
		case r := <-ch:
			var res struct {
				Content []struct{ Text string } `json:"content"`
			}
			json.Unmarshal(r.Result, &res)
			for _, c := range res.Content {
				text += c.Text
			}
			return text, true
		case <-time.After(10 * time.Second):
			return "", false
		}
	}
	// yaz-mcp's own log says what it was told, whether or not the host
	// gets the response after its cancel.
	logged := func(result string) bool {
		for _, line := range strings.Split(m.Stderr.String(), "\n") {
			if strings.Contains(line, "ask_human cancelled by the client") && strings.Contains(line, "result="+result) {
				return true
			}
		}
		return false
	}

	// 1. During a hold: deferred, nothing charged.
	if _, err := d.Client().Hold(t.Context(), daemonapi.MethodHoldStart); err != nil {
		t.Fatal(err)
	}
	text, got := cancelAsk(func() {
		d.WaitFor(10*time.Second, "the question to wait for the hold", func() bool { return d.Status().Waiting > 0 })
	})
	if got && !strings.Contains(text, "before the question was spoken; nothing was charged") {
		t.Errorf("cancelled during a hold: %q, want it to say nothing was spoken or charged", text)
	}
	d.WaitFor(10*time.Second, "yaz-mcp to log the cancelled, deferred ask", func() bool { return logged("deferred") })
	if _, err := d.Client().Hold(t.Context(), daemonapi.MethodHoldCancel); err != nil {
		t.Fatal(err)
	}
	if used := d.Status().Budget.Used; used != 0 {
		t.Fatalf("after a cancel before speaking: %d slots used, want 0", used)
	}

	// 2. While listening for the answer: heard, charged, and said so.
	text, got = cancelAsk(func() {
		// Charged is not yet spoken: the slot is reserved before the
		// speaker starts, and a cancel during synthesis is released.
		d.WaitLog(30*time.Second, "the daemon to listen for the answer", func(m map[string]any) bool {
			return m["msg"] == "listening for the answer"
		})
	})
	if got && !strings.Contains(text, "may have heard it") || got && !strings.Contains(text, "charged") {
		t.Errorf("cancelled after speaking: %q, want it to say the person may have heard it and it was charged", text)
	}
	d.WaitFor(10*time.Second, "yaz-mcp to log the cancelled, spoken ask", func() bool { return logged("no_answer") })
	if used := d.Status().Budget.Used; used != 1 {
		t.Errorf("after a cancel once spoken: %d slots used, want 1", used)
	}
	t.Logf("response after cancel seen: %v", got)
}

// TestTranscribeCancelIsNotAWarning: a transcribe
// whose caller goes away (yaz-mcp closes its daemon connection when the
// MCP client cancels) is a normal end: the daemon logs no WARN or ERROR
// for it (it used to log "jsonrpc handler failed" at WARN, and the answer
// it then wrote to the closed connection failed with "broken pipe").
func TestTranscribeCancelIsNotAWarning(t *testing.T) {
	t.Parallel()
	speech := speechWAV(t, 3*time.Second)
	long := speechWAV(t, 66*time.Second)
	d := startDaemon(t, dictationConfig(speech, true).With("dictation.inject", q("stdout")), "YAZ_FAKE_MS_PER_S=200")
	// transcribe, and transcribe.stream (with progress: what yaz-mcp
	// calls when its client asked for progress).
	for i, progress := range []bool{false, true} {
		tc := d.Client()
		fileDone := make(chan error, 1)
		go func() {
			var err error
			if progress {
				_, err = tc.TranscribeProgress(context.Background(), long, nil)
			} else {
				_, err = tc.Transcribe(context.Background(), long)
			}
			fileDone <- err
		}()
		d.WaitFor(30*time.Second, "the file's decoding", func() bool { return d.decodes() == i+1 })
		before := len(d.LogRecords())
		tc.Close()
		if err := <-fileDone; err == nil {
			t.Fatalf("the cancelled transcribe (progress %v) returned a result", progress)
		}
		d.WaitLog(30*time.Second, "the decoder to abandon the file", func(m map[string]any) bool {
			return m["child"] == "decode" && m["msg"] == "abandoned utterance" && len(d.Records("decode", "abandoned utterance")) > i
		})
		// status on a new connection: everything the cancel logs came before.
		d.Status()
		for _, m := range d.LogRecords()[before:] {
			if lvl := m["level"]; lvl == "WARN" || lvl == "ERROR" {
				t.Errorf("a cancelled transcribe (progress %v) logged %v: %v", progress, lvl, m)
			}
		}
	}
}
