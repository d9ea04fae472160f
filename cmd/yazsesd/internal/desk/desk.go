// Package desk is the daemon's side of the person's desktop: what the
// command line gives the daemon of it (Desktop: notifications, the
// injector, the push-to-talk key's source), the injector opened for
// dictation.inject and what status says of it, and the key's listener,
// run until the daemon stops, and what status says of it. What a press
// and a release do (a hold's start and its release) is the daemon's.
package desk

import (
	"context"
	"log/slog"
	"os"
	"sync"

	"github.com/yazses/yazses/lib/audit"
	"github.com/yazses/yazses/lib/config"
	"github.com/yazses/yazses/lib/daemonapi"
)

// Desktop is the person's desktop as the daemon reaches it.
type Desktop interface {
	// Notify shows a desktop notification of a kind ("listening",
	// "no_target", "question_waiting", "lost", "typing_failed",
	// "model_missing", "model_invalid", "language_unsupported",
	// "child_down", "refused_…"); ctx bounds the showing.
	Notify(ctx context.Context, kind string)
	// OpenInjector opens the injection backend named by
	// dictation.inject, pasting texts over dictation.paste_over_chars, at
	// start and when a reload changes either; an error with no Injector
	// keeps every transcript for `last`, one with an Injector says that
	// nothing can type now and the Injector tries again at each text.
	OpenInjector(name string, pasteOverChars int) (Injector, error)
	// OpenHotkey opens the key source of hotkey.source (the evdev
	// listener, or the desktop's GlobalShortcuts portal), when
	// hotkey.enabled is set.
	OpenHotkey() (Hotkey, error)
}

// Hotkey is the push-to-talk key source.
type Hotkey interface {
	// Listen reads the key until ctx ends and calls press with true for
	// a press (a hold's start) and false for a release (its stop).
	Listen(ctx context.Context, press func(down bool)) error
}

// WaitingHotkey is a Hotkey that may wait before it can listen (the
// desktop's shortcut portal not on the bus yet): ListenWaiting is Listen
// that calls waiting with what it waits for, and with "" once it
// listens; status shows it.
type WaitingHotkey interface {
	Hotkey
	ListenWaiting(ctx context.Context, press func(down bool), waiting func(what string)) error
}

// Injector types text into the focused window.
type Injector interface {
	// Type types text and returns the backend used (a closed-vocabulary
	// word). An error that is inject.ErrNoTarget (errors.Is) means no
	// window had focus: nothing was typed.
	Type(ctx context.Context, text string) (backend string, err error)
	// Backends lists the backends Type tries, in order (what "auto"
	// resolves to).
	Backends() []string
}

// Reporter is what the desk tells the daemon.
type Reporter interface {
	// Audit writes an audit event (hotkey.failed).
	Audit(audit.Event)
	// Notify shows a notification of a kind (no_route), when
	// notifications are on.
	Notify(kind string)
}

// Desk is the desktop's injector and key listener, and their status.
type Desk struct {
	desktop Desktop // nil: none
	r       Reporter
	log     *slog.Logger

	injMu  sync.Mutex
	inj    Injector
	injFor string // the dictation.inject the injector was opened for
	injErr string // why there is none

	hotkeyMu sync.Mutex
	hotkey   daemonapi.HotkeyStatus
}

// New returns the desk of desktop (nil: none: every transcript is kept
// for `last`), with the key of hk.
func New(desktop Desktop, hk config.Hotkey, r Reporter, log *slog.Logger) *Desk {
	return &Desk{desktop: desktop, r: r, log: log,
		hotkey: daemonapi.HotkeyStatus{Enabled: hk.Enabled, Source: hk.Source, Key: hk.Key, Mode: hk.Mode}}
}

// OpenInjector opens the injection backend for dictation.inject (and
// paste_over_chars); on failure dictation keeps its transcripts for
// `last`.
func (d *Desk) OpenInjector(dc config.Dictation) {
	if d.desktop == nil {
		return
	}
	name := dc.Inject
	if name == "stdout" && os.Getenv("JOURNAL_STREAM") != "" {
		// systemd connected stdout to the journal (it sets JOURNAL_STREAM).
		d.log.Warn(`dictation.inject = "stdout" under systemd: what you dictate goes to the journal; choose another backend, or run yazsesd in a terminal`)
	}
	inj, err := d.desktop.OpenInjector(name, dc.PasteOverChars)
	why := ""
	if err != nil {
		// An injector returned with the error tries again at each text
		// (the typing child: a route that comes up after the start).
		d.log.Warn("no way to type here now: dictated text is kept for `yazsesd ctl last`", "inject", name, "err", err, "tries_again", inj != nil)
		why = err.Error()
		d.r.Notify("no_route")
	}
	d.injMu.Lock()
	d.inj, d.injFor, d.injErr = inj, name, why
	d.injMu.Unlock()
}

// Typing reports the injection backends for status; inject is
// dictation.inject in force, named while no injector was opened.
func (d *Desk) Typing(inject string) daemonapi.TypingStatus {
	d.injMu.Lock()
	defer d.injMu.Unlock()
	t := daemonapi.TypingStatus{Inject: d.injFor, Backends: []string{}, Error: d.injErr}
	if t.Inject == "" {
		t.Inject = inject
	}
	if d.inj != nil {
		t.Backends = append(t.Backends, d.inj.Backends()...)
		if e, ok := d.inj.(interface{ Explain(*daemonapi.TypingStatus) }); ok {
			e.Explain(&t) // the route, why, and the portal's consent
		}
	} else if t.Error == "" {
		t.Error = "no typing backend: dictated text is kept for `yazsesd ctl last`"
	}
	return t
}

// Injector is the injector opened last; nil when there is none.
func (d *Desk) Injector() Injector {
	d.injMu.Lock()
	defer d.injMu.Unlock()
	return d.inj
}

// RunHotkey opens the push-to-talk key's source and runs it until ctx
// ends, calling press with each press (true) and release (false); status
// shows whether it listens and why not (Hotkey).
func (d *Desk) RunHotkey(ctx context.Context, press func(down bool)) {
	set := func(listening bool, err error) {
		d.hotkeyMu.Lock()
		d.hotkey.Listening = listening
		if !listening {
			d.hotkey.Waiting = ""
		}
		if err != nil {
			d.hotkey.Error = err.Error()
		}
		d.hotkeyMu.Unlock()
	}
	keys, err := d.desktop.OpenHotkey()
	if err == nil {
		set(true, nil)
		if w, ok := keys.(WaitingHotkey); ok {
			err = w.ListenWaiting(ctx, press, func(what string) {
				d.hotkeyMu.Lock()
				d.hotkey.Waiting = what
				d.hotkeyMu.Unlock()
			})
		} else {
			err = keys.Listen(ctx, press)
		}
	}
	set(false, err)
	if err != nil && ctx.Err() == nil {
		d.log.Error("hotkey listener stopped: use a compositor binding that runs `yazsesd ctl hold start|stop`", "err", err)
		d.r.Audit(audit.Event{Kind: "hotkey.failed"})
	}
}

// Hotkey is the key's status.
func (d *Desk) Hotkey() daemonapi.HotkeyStatus {
	d.hotkeyMu.Lock()
	defer d.hotkeyMu.Unlock()
	return d.hotkey
}
