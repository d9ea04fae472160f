// Package health follows the daemon's children's states (supervise's
// OnState hooks) and makes what it sees visible:
//
//   - Ready (READY=1 for systemd) once every child started at boot (gate,
//     speak, decode, and capture in always mode) is up, or has ended its
//     first start: failed for a known cause, crashed, or not ready in
//     time. systemd then shows the status line below, not a healthy
//     "active (running)" with nothing to say.
//   - One line on what works ("ready", or each child that is down or
//     restarting and why), for status and the systemd status line
//     (Reporter.Line).
//   - A child left down for a cause it named (exit 125) gets the daemon's
//     own ERROR line ("decode: model not found: … — fetch one with
//     yaz-fetch-model base.en"), an audit event child.exited with the
//     cause, and one notification; a crash loop gets the notification
//     too (its ERROR line is the daemon's Run's).
//   - Each child's entry in status (Child), and the line of a refused
//     reload that the daemon shows after the children's (ReloadRefused).
package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
)

// Reporter is told what the children's states come to. Its methods are
// called without a lock held, from the supervisors' goroutines.
type Reporter interface {
	// Audit writes an audit event (child.exited).
	Audit(audit.Event)
	// Notify shows a desktop notification of a kind (notify.ByKind).
	Notify(kind string)
	// Line is the health line, each time it changes.
	Line(line string)
}

// Health is what the daemon knows of its children's health. Make it
// with New.
type Health struct {
	r   Reporter
	log *slog.Logger

	mu       sync.Mutex
	st       map[string]supervise.Status // latest status of each child
	boot     map[string]bool             // boot children → settled
	settled  chan struct{}               // closed once every boot child settled
	logged   map[string]string           // child → the failure last logged
	notified map[string]bool             // child+cause notified
	line     string
	order    []string
}

// New returns the Health of the children named in order (the order of
// the line), of which boot are started at boot (Ready waits for them).
func New(r Reporter, log *slog.Logger, order []string, boot ...string) *Health {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Health{
		r:        r,
		log:      log,
		st:       map[string]supervise.Status{},
		boot:     map[string]bool{},
		settled:  make(chan struct{}),
		logged:   map[string]string{},
		notified: map[string]bool{},
		order:    order,
	}
	for _, n := range boot {
		h.boot[n] = false
	}
	if len(boot) == 0 {
		close(h.settled)
	}
	return h
}

// Watch follows c, the child named name.
func (h *Health) Watch(name string, c interface{ OnState(func(supervise.Status)) }) {
	c.OnState(func(st supervise.Status) { h.changed(name, st) })
}

func (h *Health) changed(name string, st supervise.Status) {
	h.mu.Lock()
	h.st[name] = st
	if settled, ok := h.boot[name]; ok && !settled {
		switch st.State {
		case supervise.StateRunning, supervise.StateBackoff, supervise.StateExited,
			supervise.StateCrashLoop, supervise.StateStopped:
			h.boot[name] = true
			all := true
			for _, s := range h.boot {
				all = all && s
			}
			if all {
				close(h.settled)
			}
		}
	}
	var logIt, notifyKind string
	if st.State.Failed() { // left down by a failure; a stop is none
		key := string(st.State) + "/" + st.Cause + "/" + st.Reason
		if h.logged[name] != key {
			h.logged[name] = key
			if st.State == supervise.StateExited {
				logIt = name + ": " + Reason(st)
			}
			notifyKind = notifyKindOf(st.Cause)
			if h.notified[name+"/"+notifyKind] {
				notifyKind = ""
			} else {
				h.notified[name+"/"+notifyKind] = true
			}
		}
	}
	line := h.lineLocked()
	changed := line != h.line
	h.line = line
	h.mu.Unlock()

	if logIt != "" {
		h.log.Error(logIt, "cause", st.Cause, "last_exit", st.LastExit)
		ev := audit.Event{Kind: "child.exited", Child: name}
		if audit.ValidWord(st.Cause) {
			ev.Reason = st.Cause
		}
		h.r.Audit(ev)
	}
	if notifyKind != "" {
		h.r.Notify(notifyKind)
	}
	if changed {
		h.r.Line(line)
	}
}

// notifyKindOf is the notification for a child left down with cause.
func notifyKindOf(cause string) string {
	switch cause {
	case "model_missing", "model_invalid", "language_unsupported", "vad_model_missing", "vad_model_invalid":
		return cause
	}
	return "child_down"
}

// Reason says in a sentence why a child is not running: its own reason
// when it gave one (contract 2), else what its state says.
func Reason(st supervise.Status) string {
	if st.Reason != "" {
		return st.Reason
	}
	switch st.State {
	case supervise.StateExited:
		return "exited (" + st.LastExit + ") and asked not to be restarted; see its log lines"
	case supervise.StateCrashLoop:
		return "kept failing (last: " + st.LastExit + ") and is left down; see its log lines"
	case supervise.StateBackoff:
		return "restarting after " + st.LastExit
	}
	return string(st.State)
}

// Child is a child's entry in status: its state, and for one that is not
// running its reason and cause; version is its --version.
func Child(s supervise.Status, version string) daemonapi.ChildStatus {
	cs := daemonapi.ChildStatus{Name: s.Name, State: string(s.State), PID: s.PID, Restarts: s.Restarts,
		LastExit: s.LastExit, Version: version, Cause: s.Cause}
	switch {
	case s.State.Failed(), s.State == supervise.StateBackoff:
		cs.Reason = Reason(s)
		if cs.Cause == "" && s.State == supervise.StateCrashLoop {
			cs.Cause = "crash_loop"
		}
	case s.Cause != "":
		cs.Reason = s.Reason
	}
	return cs
}

// ReloadRefused is the line of a reload refused for err, which the
// daemon shows after the children's line until a reload succeeds: its
// first problem, with its line.
func ReloadRefused(err error) string {
	var ce *config.Error
	if !errors.As(err, &ce) {
		return "config: reload refused: " + err.Error()
	}
	s := "config: reload refused"
	if ce.Line > 0 {
		s += " at line " + strconv.Itoa(ce.Line)
	}
	s += ": "
	if ce.Key != "" {
		s += ce.Key + ": "
	}
	s += ce.Msg
	if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) > 1 {
		s += fmt.Sprintf(" (and %d more: yazsesd config check lists them)", len(j.Unwrap())-1)
	}
	return s
}

// lineLocked is the one-line summary.
func (h *Health) lineLocked() string {
	var problems []string
	starting := false
	for _, n := range h.order {
		st, ok := h.st[n]
		if !ok {
			starting = starting || h.isBoot(n)
			continue
		}
		switch {
		case st.State.Failed(), st.State == supervise.StateBackoff:
			problems = append(problems, n+": "+Reason(st))
		case st.State == supervise.StateStarting:
			starting = starting || h.isBoot(n)
		}
	}
	switch {
	case len(problems) > 0:
		return strings.Join(problems, "; ")
	case starting:
		return "starting"
	}
	return "ready"
}

func (h *Health) isBoot(name string) bool {
	_, ok := h.boot[name]
	return ok
}

// Summary is the current line.
func (h *Health) Summary() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lineLocked()
}

// AwaitSettled calls ready with the summary once every boot child has
// settled, unless ctx ends first.
func (h *Health) AwaitSettled(ctx context.Context, ready func(string)) {
	select {
	case <-h.settled:
		ready(h.Summary())
	case <-ctx.Done():
	}
}
