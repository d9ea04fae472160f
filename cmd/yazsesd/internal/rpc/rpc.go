// Package rpc is yazsesd's socket API as JSON-RPC methods (the contract
// is lib/daemonapi's): the method table of yazsesd.sock (Register) and of
// control.sock (RegisterControl), each method's parameters decoded
// strictly and checked before the daemon sees them, and the peer of a
// connection (SO_PEERCRED), which goes with each of its requests. What a
// method does is the daemon's: the Daemon interface, which package daemon
// implements.
package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"

	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
	"github.com/yazses/yazses/lib/safesocket"
	"github.com/yazses/yazses/lib/untrusted"
)

// Daemon is what the methods ask of the daemon.
type Daemon interface {
	Status(ctx context.Context) daemonapi.Status
	BudgetStatus(ctx context.Context) daemonapi.BudgetStatus
	// Last is the last dictation's transcript (the last method).
	Last() daemonapi.Last
	// AskHuman is ask_human, for a question already checked
	// (daemonapi.CheckQuestion).
	AskHuman(ctx context.Context, q untrusted.Question, timeoutS int) (daemonapi.AskResult, error)
	// Audit reads the last max events of the audit log.
	Audit(max int) ([]audit.Event, error)
	// Transcribe transcribes the file at path (an absolute path);
	// progress, if not nil, is told how far it is.
	Transcribe(ctx context.Context, path string, progress func(done, total int64)) (daemonapi.TranscribeResult, error)
	// Watch is the watch stream.
	Watch(ctx context.Context, params json.RawMessage, send func(any) error) error
	// The hold.* methods. ErrShuttingDown: the daemon stops.
	HoldStart(ctx context.Context) (daemonapi.HoldResult, error)
	HoldStop(ctx context.Context) (daemonapi.HoldResult, error)
	HoldToggle(ctx context.Context) (daemonapi.HoldResult, error)
	HoldCancel(ctx context.Context) (daemonapi.HoldResult, error)
}

// ErrShuttingDown is a hold method's error while the daemon stops: the
// caller is told daemonapi.CodeUnavailable.
var ErrShuttingDown = errors.New("shutting down")

// Register installs every method of the main socket (yazsesd.sock): the
// control methods (RegisterControl) and the rest. Parameters are decoded
// strictly (jsonrpc.DecodeParams: member names exactly as documented,
// letter case included, each once; valid UTF-8). A connection's calls are
// applied in the order sent (five pipelined hold.toggle: holding, idle,
// holding, idle, holding), except ask_human and transcribe, which wait for
// a person or the decoder and run beside them (HandleConcurrent), and the
// streams: watch, and transcribe.stream (transcribe with progress).
func Register(s *jsonrpc.Server, d Daemon) {
	RegisterControl(s, d)
	s.HandleStream(daemonapi.MethodWatch, d.Watch)
	s.Handle(daemonapi.MethodBudgetStatus, noParams(func(ctx context.Context) (any, error) { return d.BudgetStatus(ctx), nil }))
	s.Handle(daemonapi.MethodLast, noParams(func(ctx context.Context) (any, error) { return d.Last(), nil }))
	s.HandleConcurrent(daemonapi.MethodAskHuman, func(ctx context.Context, params json.RawMessage) (any, error) {
		var p daemonapi.AskParams
		if err := jsonrpc.DecodeParams(params, &p); err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "ask_human takes {\"question\": string, \"timeout_s\": integer}")
		}
		q, err := daemonapi.CheckQuestion(p.Question)
		if err != nil {
			return nil, questionError(err)
		}
		return d.AskHuman(ctx, q, p.TimeoutS) // q: checked here, once
	})
	s.Handle(daemonapi.MethodAudit, func(ctx context.Context, params json.RawMessage) (any, error) {
		var p daemonapi.AuditParams
		if !emptyParams(params) {
			if err := jsonrpc.DecodeParams(params, &p); err != nil || p.Max < 0 {
				return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "audit takes {\"max\": integer >= 0}")
			}
		}
		if p.Max == 0 {
			p.Max = 100
		}
		evs, err := d.Audit(p.Max)
		if err != nil {
			return nil, err
		}
		if evs == nil {
			evs = []audit.Event{}
		}
		return daemonapi.AuditResult{Events: evs}, nil
	})
	s.HandleConcurrent(daemonapi.MethodTranscribe, func(ctx context.Context, params json.RawMessage) (any, error) {
		var p daemonapi.TranscribeParams
		if err := jsonrpc.DecodeParams(params, &p); err != nil || !filepath.IsAbs(p.Path) {
			return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "transcribe takes {\"path\": absolute path}")
		}
		return d.Transcribe(ctx, p.Path, nil)
	})
	s.HandleStream(daemonapi.MethodTranscribeStream, func(ctx context.Context, params json.RawMessage, send func(any) error) error {
		var p daemonapi.TranscribeParams
		if err := jsonrpc.DecodeParams(params, &p); err != nil || !filepath.IsAbs(p.Path) {
			return jsonrpc.Errorf(jsonrpc.InvalidParams, "transcribe.stream takes {\"path\": absolute path}")
		}
		// A progress event that cannot be written (the caller does not
		// read) is dropped: the call goes on, and ends when the caller
		// goes away.
		r, err := d.Transcribe(ctx, p.Path, func(done, total int64) {
			_ = send(daemonapi.TranscribeEvent{DoneMs: done, TotalMs: total})
		})
		if err != nil {
			return err
		}
		return send(daemonapi.TranscribeEvent{DoneMs: r.AudioMs, Result: &r})
	})
}

// RegisterControl installs the control methods (daemonapi.ControlMethods:
// hold.* and status), on the control socket (control.sock, served by a
// server of its own, so that no number of clients on the main socket keeps
// a press or a release out) and on the main one. They are ordered calls.
func RegisterControl(s *jsonrpc.Server, d Daemon) {
	hold := func(f func(context.Context) (daemonapi.HoldResult, error)) jsonrpc.Handler {
		return noParams(func(ctx context.Context) (any, error) {
			r, err := f(ctx)
			if errors.Is(err, ErrShuttingDown) {
				return nil, &jsonrpc.Error{Code: daemonapi.CodeUnavailable, Message: "yazsesd is shutting down"}
			}
			return r, err
		})
	}
	s.Handle(daemonapi.MethodStatus, noParams(func(ctx context.Context) (any, error) { return d.Status(ctx), nil }))
	s.Handle(daemonapi.MethodHoldStart, hold(d.HoldStart))
	s.Handle(daemonapi.MethodHoldStop, hold(d.HoldStop))
	s.Handle(daemonapi.MethodHoldToggle, hold(d.HoldToggle))
	s.Handle(daemonapi.MethodHoldCancel, hold(d.HoldCancel))
}

// noParams is the handler of a method that takes no parameters (none, {}
// or []).
func noParams(f func(ctx context.Context) (any, error)) jsonrpc.Handler {
	return func(ctx context.Context, params json.RawMessage) (any, error) {
		if !emptyParams(params) {
			return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "this method takes no parameters")
		}
		return f(ctx)
	}
}

func emptyParams(p json.RawMessage) bool {
	p = bytes.TrimSpace(p)
	return len(p) == 0 || string(p) == "null" || string(p) == "{}" || string(p) == "[]"
}

// questionError is the InvalidParams error for a question CheckQuestion
// refused: a fixed sentence, never the question.
func questionError(err error) *jsonrpc.Error {
	switch {
	case errors.Is(err, daemonapi.ErrQuestionInvalid):
		return jsonrpc.Errorf(jsonrpc.InvalidParams, "question is not valid UTF-8 text")
	case errors.Is(err, daemonapi.ErrQuestionTooLong):
		return jsonrpc.Errorf(jsonrpc.InvalidParams, "question is longer than %d characters", daemonapi.MaxQuestionRunes)
	default:
		return jsonrpc.Errorf(jsonrpc.InvalidParams, "question is empty")
	}
}

// Peer is the client of one socket connection.
type Peer struct{ PID, UID int }

type peerKey struct{}

// WithPeer is the servers' ConnContext: the peer's pid and uid
// (SO_PEERCRED) go with each request.
func WithPeer(ctx context.Context, conn net.Conn) context.Context {
	if c, ok := conn.(*safesocket.Conn); ok {
		pid, uid, _ := c.PeerCred()
		return context.WithValue(ctx, peerKey{}, Peer{PID: pid, UID: uid})
	}
	return ctx
}

// PeerOf is the peer of the connection a request came on (WithPeer); the
// zero Peer when none is known.
func PeerOf(ctx context.Context) Peer {
	p, _ := ctx.Value(peerKey{}).(Peer)
	return p
}
