package mcpserve

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/yazses/yazses/lib/daemonapi"
)

// TestReplyTextsClaimOnlyWhatIsKnown: a question that
// reached the speaker may or may not have been heard (a cancel, a hold or
// a broken pipe stops it part way), so no reply says "the person heard
// it"; one that may have played says "may have heard it" and that it was
// charged; and a reply says "nothing was spoken" only for results the
// daemon gives before any audio (deferred, refused, and unavailable for
// its known pre-audio reasons), never for a daemon that failed mid-call.
func TestReplyTextsClaimOnlyWhatIsKnown(t *testing.T) {
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	text := func(r *mcp.CallToolResult) string {
		var b strings.Builder
		for _, c := range r.Content {
			if tc, ok := c.(mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	type reply struct {
		name string
		text string
		// mayHaveBeenHeard: the question may have played.
		mayHaveBeenHeard bool
	}
	var replies []reply
	for _, reason := range []string{daemonapi.ReasonSilence, daemonapi.ReasonTimeout, daemonapi.ReasonInterrupted,
		daemonapi.ReasonCancelled, daemonapi.ReasonSpeakFailed, daemonapi.ReasonDecodeFail, daemonapi.ReasonCaptureFailed} {
		r := daemonapi.AskResult{Result: daemonapi.NoAnswer, Reason: reason}
		replies = append(replies,
			reply{"no_answer " + reason, text(askResult(r)), true},
			reply{"cancelled, no_answer " + reason, text(s.cancelled(r)), true})
	}
	for _, r := range []daemonapi.AskResult{
		{Result: daemonapi.Unavailable, Reason: "daemon_error"},
		{Result: daemonapi.Unavailable, Reason: "unknown"},
		closed(daemonapi.AskResult{Result: "maybe"}),
	} {
		replies = append(replies,
			reply{"unavailable " + r.Reason, text(askResult(r)), true},
			reply{"cancelled, unavailable " + r.Reason, text(s.cancelled(r)), true})
	}
	for _, r := range []daemonapi.AskResult{
		{Result: daemonapi.Deferred, Reason: daemonapi.ReasonHolding},
		{Result: daemonapi.Deferred, Reason: daemonapi.ReasonCancelled},
		{Result: daemonapi.Refused, Reason: daemonapi.ReasonBudgetExhausted, RetryAfterS: 10},
		{Result: daemonapi.Refused, Reason: daemonapi.ReasonDisabled},
		{Result: daemonapi.Unavailable, Reason: daemonapi.ReasonTTSUnavailable},
		{Result: daemonapi.Unavailable, Reason: daemonapi.ReasonAuditUnavailable},
		{Result: daemonapi.Unavailable, Reason: daemonapi.ReasonDaemonNotRunning},
	} {
		replies = append(replies,
			reply{string(r.Result) + " " + r.Reason, text(askResult(r)), false},
			reply{"cancelled, " + string(r.Result) + " " + r.Reason, text(s.cancelled(r)), false})
	}
	for _, r := range replies {
		low := strings.ToLower(r.text)
		if strings.Contains(low, "heard it") && !strings.Contains(low, "may have heard it") {
			t.Errorf("%s: %q claims the person heard it", r.name, r.text)
		}
		claim := low
		for _, ok := range []string{"nothing was spoken", "before the question was spoken", "whether the question was spoken"} {
			claim = strings.ReplaceAll(claim, ok, "")
		}
		if strings.Contains(claim, "was spoken") {
			t.Errorf("%s: %q claims the question was spoken", r.name, r.text)
		}
		if r.mayHaveBeenHeard {
			if strings.Contains(low, "nothing was spoken") || strings.Contains(low, "nothing was charged") {
				t.Errorf("%s: %q says nothing was spoken or charged, but the question may have played", r.name, r.text)
			}
			if strings.Contains(r.name, "no_answer") && (!strings.Contains(low, "may have heard it") || !strings.Contains(low, "charged")) {
				t.Errorf("%s: %q, want it to say the person may have heard it and it was charged", r.name, r.text)
			}
		} else if !strings.Contains(low, "nothing was spoken") && !strings.Contains(low, "before the question was spoken") {
			t.Errorf("%s: %q, want it to say nothing was spoken", r.name, r.text)
		}
	}
}
