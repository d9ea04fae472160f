package daemon

import (
	"context"
	"strings"
	"sync"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/lib/audit"
)

// health follows the children's states (supervise's OnState hooks) and
// makes what it sees visible:
//
//   - READY=1 (Options.Ready) once every child started at boot (gate,
//     speak, decode, and capture in always mode) is up, or has ended its
//     first start: failed for a known cause, crashed, or not ready in
//     time. systemd then shows the status line below, not a healthy
//     "active (running)" with nothing to say.
//   - One line on what works ("ready", or each child that is down or
//     restarting and why), for status and the systemd status line
//     (Options.Health).
//   - A child left down for a cause it named (exit 125) gets the daemon's
//     own ERROR line ("decode: model not found: … — fetch one with
//     yaz-fetch-model base.en"), an audit event child.exited with the
//     cause, and one notification; a crash loop gets the notification
//     too (its ERROR line is Run's).
type health struct {
	d *Daemon

	mu       sync.Mutex
	st       map[string]supervise.Status // latest status of each child
	boot     map[string]bool             // boot children → settled
	settled  chan struct{}               // closed once every boot child settled
	logged   map[string]string           // child → the failure last logged
	notified map[string]bool             // child+cause notified
	line     string
	order    []string
}

func newHealth(d *Daemon, order []string, boot ...string) *health {
	h := &health{
		d:        d,
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

// watch follows c.
func (h *health) watch(name string, c interface{ OnState(func(supervise.Status)) }) {
	c.OnState(func(st supervise.Status) { h.changed(name, st) })
}

func (h *health) changed(name string, st supervise.Status) {
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
				logIt = name + ": " + reasonOf(st)
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
		h.d.log.Error(logIt, "cause", st.Cause, "last_exit", st.LastExit)
		ev := audit.Event{Kind: "child.exited", Child: name}
		if audit.ValidWord(st.Cause) {
			ev.Reason = st.Cause
		}
		h.d.auditf(ev)
	}
	if notifyKind != "" {
		h.d.notify(notifyKind)
	}
	if changed && h.d.opt.Health != nil {
		h.d.opt.Health(h.d.healthLine(line))
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

// reasonOf says in a sentence why a child is not running.
func reasonOf(st supervise.Status) string {
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

// lineLocked is the one-line summary.
func (h *health) lineLocked() string {
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
			problems = append(problems, n+": "+reasonOf(st))
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

func (h *health) isBoot(name string) bool {
	_, ok := h.boot[name]
	return ok
}

// summary is the current line.
func (h *health) summary() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lineLocked()
}

// awaitSettled calls ready with the summary once every boot child has
// settled, unless ctx ends first.
func (h *health) awaitSettled(ctx context.Context, ready func(string)) {
	select {
	case <-h.settled:
		ready(h.summary())
	case <-ctx.Done():
	}
}
