package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/gate"
	"github.com/yazses/yazses/lib/jsonrpc"
)

// register installs every method of the main socket (yazsesd.sock): the
// control methods (registerControl) and the rest. Parameters are decoded
// strictly (jsonrpc.DecodeParams: member names exactly as documented,
// letter case included, each once; valid UTF-8). A connection's calls are
// applied in the order sent (five pipelined hold.toggle: holding, idle,
// holding, idle, holding), except ask_human and transcribe, which wait for
// a person or the decoder and run beside them (HandleConcurrent), and the
// streams: watch, and transcribe.stream (transcribe with progress).
func (d *Daemon) register(s *jsonrpc.Server) {
	d.registerControl(s)
	s.HandleStream(daemonapi.MethodWatch, d.live.Serve)
	s.Handle(daemonapi.MethodBudgetStatus, noParams(func(ctx context.Context) (any, error) { return d.budgetStatus(ctx), nil }))
	s.Handle(daemonapi.MethodLast, noParams(func(ctx context.Context) (any, error) {
		d.state.mu.Lock()
		defer d.state.mu.Unlock()
		return d.state.last, nil
	}))
	s.HandleConcurrent(daemonapi.MethodAskHuman, func(ctx context.Context, params json.RawMessage) (any, error) {
		var p daemonapi.AskParams
		if err := jsonrpc.DecodeParams(params, &p); err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "ask_human takes {\"question\": string, \"timeout_s\": integer}")
		}
		q, err := daemonapi.CheckQuestion(p.Question)
		if err != nil {
			return nil, questionError(err)
		}
		return d.askHuman(ctx, q, p.TimeoutS) // q: checked here, once
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
		evs, err := audit.Read(d.opt.AuditPath, p.Max)
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
		return d.files.Transcribe(ctx, p.Path, nil)
	})
	s.HandleStream(daemonapi.MethodTranscribeStream, func(ctx context.Context, params json.RawMessage, send func(any) error) error {
		var p daemonapi.TranscribeParams
		if err := jsonrpc.DecodeParams(params, &p); err != nil || !filepath.IsAbs(p.Path) {
			return jsonrpc.Errorf(jsonrpc.InvalidParams, "transcribe.stream takes {\"path\": absolute path}")
		}
		// A progress event that cannot be written (the caller does not
		// read) is dropped: the call goes on, and ends when the caller
		// goes away.
		r, err := d.files.Transcribe(ctx, p.Path, func(done, total int64) {
			_ = send(daemonapi.TranscribeEvent{DoneMs: done, TotalMs: total})
		})
		if err != nil {
			return err
		}
		return send(daemonapi.TranscribeEvent{DoneMs: r.AudioMs, Result: &r})
	})
}

// registerControl installs the control methods (daemonapi.ControlMethods:
// hold.* and status), on the control socket (control.sock, served by a
// server of its own, so that no number of clients on the main socket keeps
// a press or a release out) and on the main one. They are ordered calls.
func (d *Daemon) registerControl(s *jsonrpc.Server) {
	hold := func(f func(context.Context) (daemonapi.HoldResult, error)) jsonrpc.Handler {
		return noParams(func(ctx context.Context) (any, error) {
			r, err := f(ctx)
			if errors.Is(err, errShuttingDown) {
				return nil, &jsonrpc.Error{Code: daemonapi.CodeUnavailable, Message: "yazsesd is shutting down"}
			}
			return r, err
		})
	}
	s.Handle(daemonapi.MethodStatus, noParams(func(ctx context.Context) (any, error) { return d.status(ctx), nil }))
	s.Handle(daemonapi.MethodHoldStart, hold(d.holdStart))
	s.Handle(daemonapi.MethodHoldStop, hold(d.holdStop))
	s.Handle(daemonapi.MethodHoldToggle, hold(d.holdToggle))
	s.Handle(daemonapi.MethodHoldCancel, hold(d.holdCancel))
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

// status is the status method.
func (d *Daemon) status(ctx context.Context) daemonapi.Status {
	cfg := d.config()
	on, _ := d.state.holding()
	d.state.mu.Lock()
	asking := d.state.asking != nil
	d.state.mu.Unlock()
	hold := daemonapi.HoldIdle
	if on {
		hold = daemonapi.HoldHolding
	}
	mic := d.childStatus(d.mic)
	if mic.State == "stopped" && !d.mic.Always() {
		mic.State = "idle" // on-demand: closed between holds
	}
	children := []daemonapi.ChildStatus{d.childStatus(d.gate), d.childStatus(d.speak), d.childStatus(d.decode), mic}
	if d.vad != nil {
		children = append(children, d.childStatus(d.vad))
	}
	if d.opt.Typing != nil {
		children = append(children, d.childStatus(d.opt.Typing))
	}
	return daemonapi.Status{
		Version:     d.opt.Version,
		PID:         os.Getpid(),
		UptimeS:     int64(time.Since(d.start) / time.Second),
		Config:      d.opt.ConfigPath,
		AskHuman:    cfg.MCP.AskHuman,
		CaptureMode: cfg.Capture.Mode,
		Hold:        hold,
		Asking:      asking,
		Waiting:     d.waiting(),
		Children:    children,
		Budget:      d.budgetStatus(ctx),

		Health:       d.healthLine(d.health.Summary()),
		AuditFailing: d.auditFailing(),
		StateFailing: d.stateFailing(),
		Model:        d.opt.Config.Decode.Model, // restart-only: the running value
		Language:     d.opt.Config.Decode.Language,
		DecodeDevice: daemonapi.DeviceStatus{Setting: d.opt.Config.Decode.Device, Device: d.decode.Device(), Notes: d.decode.DeviceNotes(),
			Warning: d.decode.DeviceWarning()},
		CaptureBackend: d.opt.Config.Capture.Backend,
		CaptureDevice:  d.opt.Config.Capture.Device,
		Typing:         d.typing(),
		Hotkey:         d.hotkeyStatus(),
	}
}

// waiting is status's count of the questions waiting: for the hold to end
// (counted by d.live, which watch streams) and for their turn behind
// another question (d.asks, the queue they wait in). Each is counted once,
// where it waits.
func (d *Daemon) waiting() int {
	_, queued := d.asks.State()
	return d.live.Current().Waiting + queued
}

// stateFailing says why the crash marker is not written ("" when it is).
func (d *Daemon) stateFailing() string {
	if d.marker == nil {
		return ""
	}
	return d.marker.Failing()
}

func (d *Daemon) hotkeyStatus() daemonapi.HotkeyStatus {
	d.hotkeyMu.Lock()
	defer d.hotkeyMu.Unlock()
	return d.hotkey
}

// budgetStatus asks the gate; a gate that is down reports unavailable.
func (d *Daemon) budgetStatus(ctx context.Context) daemonapi.BudgetStatus {
	failClosed, why := d.gate.FailClosed()
	b := daemonapi.BudgetStatus{PerHour: d.config().Budget.AskHumanPerHour, FailClosed: failClosed, FailClosedReason: why}
	gctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	err := d.gate.Do(gctx, 0, false, func(c *gate.Client) error {
		st, err := c.Status(gctx)
		if err == nil {
			b.PerHour, b.Used, b.NextFreeS, b.Available = st.PerHour, st.Used, st.NextFreeS, true
		}
		return err
	})
	if err != nil {
		b.Available = false
	}
	if b.FailClosed && b.Available && b.NextFreeS == 0 && b.Used < b.PerHour {
		b.FailClosed, b.FailClosedReason = false, "" // the spent hour has passed
	}
	return b
}
