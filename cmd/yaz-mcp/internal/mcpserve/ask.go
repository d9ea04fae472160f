package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
)

// askArgs checks the arguments of ask_human. The question is checked as
// the daemon checks it (daemonapi.CheckQuestion: valid text, control and
// invisible characters removed, something visible, at most
// daemonapi.MaxQuestionRunes) only so that a bad one is invalid_argument
// before dialling, with or without a daemon; the daemon checks it again
// where it enters, and that check is the one that counts. timeout_s must
// be 0 or a number of seconds of at least least (the daemon's rule,
// daemonapi.AskTiming.MinTimeoutS: a shorter wait could hear no answer);
// it is passed on in whole seconds (fractions rounded up) and absent is 0:
// the daemon alone takes 0 for its default and cuts a longer one to its
// maximum. ok is false with a fixed detail when an argument is wrong.
func askArgs(args map[string]any, least int) (p daemonapi.AskParams, detail string, ok bool) {
	raw, isString := args["question"].(string)
	if !isString {
		return p, detailQuestion, false
	}
	q, err := daemonapi.CheckQuestion(raw)
	if err != nil {
		return p, detailQuestion, false
	}
	timeout := 0
	switch v := args["timeout_s"].(type) {
	case nil:
	case float64:
		if math.IsNaN(v) || v < 0 {
			return p, detailTimeout(least), false
		}
		timeout = int(math.Min(math.Ceil(v), math.MaxInt32)) // an int on the wire
		if timeout > 0 && timeout < least {
			return p, detailTimeout(least), false
		}
	default:
		return p, detailTimeout(least), false
	}
	return daemonapi.AskParams{Question: q.Text(), TimeoutS: timeout}, "", true
}

// reasonRE is the shape of a reason word; anything else from the daemon is
// not passed on.
var reasonRE = regexp.MustCompile(`^[a-z][a-z_]{0,39}$`)

func (s *Server) askHuman(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, detail, ok := askArgs(req.GetArguments(), daemonapi.AskTimingOf(s.opt.Config).MinTimeoutS())
	if !ok {
		s.log.Info("ask_human refused", "code", string(InvalidArgument))
		return toolError(InvalidArgument, detail), nil
	}
	c, err := s.dialDaemon(ctx, "ask_human unavailable")
	if err != nil {
		return askResult(daemonapi.AskResult{Result: daemonapi.Unavailable, Reason: daemonapi.ReasonDaemonNotRunning}), nil
	}
	// Closing the connection is what cancels the ask in the daemon: an
	// ask not yet audible then costs nothing.
	defer c.Close()
	// No total: how long the daemon waits is its own policy (its default
	// and maximum), not known here.
	stop := newProgress(ctx, req).heartbeat(s.opt.ProgressEvery, 0, "waiting for the person")
	r, err := c.AskHuman(ctx, p)
	stop()
	if err != nil {
		var rpcErr *jsonrpc.Error
		switch {
		case ctx.Err() != nil:
			return s.cancelled(closed(r)), nil
		case errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.InvalidParams:
			// The daemon's settings may ask for a longer timeout than
			// this configuration (a file edited, not yet reloaded).
			var least int
			if n, _ := fmt.Sscanf(rpcErr.Message, daemonapi.TimeoutTooShort, &least); n == 1 && least > 0 {
				return toolError(InvalidArgument, detailTimeout(least)), nil
			}
			return toolError(InvalidArgument, detailQuestion), nil
		default:
			s.log.Warn("ask_human failed in the daemon", "err_kind", errKind(err))
			return askResult(daemonapi.AskResult{Result: daemonapi.Unavailable, Reason: "daemon_error"}), nil
		}
	}
	r = closed(r)
	s.log.Info("ask_human done", "result", string(r.Result), "reason", r.Reason)
	return askResult(r), nil
}

// cancelled answers a call the client cancelled, saying what the daemon
// said of it (daemonapi.Client.AskHuman waits a moment for that): a
// question cancelled once it had started playing may have been heard
// (the cancel stops it part way, or before the sound server played
// anything) and stays charged, as the budget charges whatever may have
// been audible.
func (s *Server) cancelled(r daemonapi.AskResult) *mcp.CallToolResult {
	s.log.Info("ask_human cancelled by the client", "result", string(r.Result), "reason", r.Reason)
	switch r.Result {
	case daemonapi.Answered:
		return askResult(r) // answered just before the cancel arrived
	case daemonapi.NoAnswer:
		return toolError(Unavailable, "The call was cancelled after the question started playing: the person may have heard it, and it was charged to the budget.")
	case daemonapi.Deferred, daemonapi.Refused, daemonapi.Unavailable:
		if r.Reason != "daemon_error" && r.Reason != "unknown" {
			return toolError(Unavailable, "The call was cancelled before the question was spoken; nothing was charged.")
		}
	}
	return toolError(Unavailable, "The call was cancelled; the daemon did not say whether the question had been spoken.")
}

// closed keeps a daemon result inside the closed vocabulary.
func closed(r daemonapi.AskResult) daemonapi.AskResult {
	switch r.Result {
	case daemonapi.Answered, daemonapi.NoAnswer, daemonapi.Deferred, daemonapi.Refused, daemonapi.Unavailable:
	default:
		return daemonapi.AskResult{Result: daemonapi.Unavailable, Reason: "daemon_error"}
	}
	if r.Reason != "" && !reasonRE.MatchString(r.Reason) {
		r.Reason = "unknown"
	}
	if r.Result != daemonapi.Answered {
		r.Answer = ""
	}
	if r.Result != daemonapi.Refused || r.RetryAfterS < 0 {
		r.RetryAfterS = 0
	}
	return r
}

// askResult is the structured result with a short text.
func askResult(r daemonapi.AskResult) *mcp.CallToolResult {
	var text string
	switch r.Result {
	case daemonapi.Answered:
		text = "answered: " + r.Answer
	case daemonapi.NoAnswer:
		text = fmt.Sprintf("no_answer (%s): the question was played, so the person may have heard it, and it was charged to the budget; no answer came back.", r.Reason)
	case daemonapi.Deferred:
		text = fmt.Sprintf("deferred (%s): the person was busy; nothing was spoken and nothing was charged. Try again later.", r.Reason)
	case daemonapi.Refused:
		text = fmt.Sprintf("refused (%s): nothing was spoken; retry after %d s.", r.Reason, r.RetryAfterS)
		if r.Reason == daemonapi.ReasonDisabled {
			text = "refused (disabled): the person has turned questions off; nothing was spoken."
		}
	default:
		text = fmt.Sprintf("unavailable (%s): nothing was spoken.", r.Reason)
		switch r.Reason {
		case daemonapi.ReasonDaemonNotRunning:
			text = "unavailable (daemon_not_running): the YazSes daemon (yazsesd) is not running; nothing was spoken."
		case "daemon_error", "unknown":
			// The daemon failed, or said something outside the
			// vocabulary, during the call: it may have been played.
			text = fmt.Sprintf("unavailable (%s): the daemon failed during the call; whether the question was spoken is not known.", r.Reason)
		}
	}
	return mcp.NewToolResultStructured(r, text)
}
