package child

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/yazses/yazses/cmd/yazsesd/internal/supervise"
	"github.com/yazses/yazses/lib/linebound"
	"github.com/yazses/yazses/lib/typewire"
)

const (
	// statusWait bounds a status request (a child typing a long text
	// still answers at once; one that does not is hung or down).
	statusWait = time.Second
	// maxEventLine caps one event line from the child.
	maxEventLine = 64 << 10
)

// Typer is the daemon's end of `yaz-type --serve` (lib/typewire):
// requests on its stdin, outcomes from its stdout, routed by id. Its
// settings (the route named by dictation.inject, paste_over_chars) are
// arguments of the child: a change restarts it.
type Typer struct {
	process
	argv []string // the program and its fixed arguments

	mu       sync.Mutex
	w        *os.File // the child's stdin; nil while down
	gen      int      // counts starts; events of an older start are dropped
	pending  map[string]chan typewire.Event
	nextID   int
	up       level // the current start signalled readiness
	ready    typewire.Ready
	name     string // the route asked for ("auto", "x11", …)
	paste    int
	cfgGen   int // counts Configure calls that changed the settings
	readyGen int // the cfgGen the current start was made with
	startGen int // the cfgGen the next start is made with
	notify   func(kind string)
	lg       *slog.Logger
	bound    func(chars int) time.Duration // typewire.Bound; tests shorten it
}

// NewTyper returns the end of the typing child run as spec; spec.Argv is
// the program and its fixed arguments, to which each start adds the
// settings of the last Configure. notify shows the notifications the
// child asks for (nil: none).
func NewTyper(spec supervise.Spec, notify func(kind string), log *slog.Logger) *Typer {
	t := &Typer{argv: slices.Clone(spec.Argv), pending: make(map[string]chan typewire.Event), name: "auto", notify: notify, lg: log, bound: typewire.Bound}
	spec.Argv = nil
	spec.ArgvFor = t.argvFor
	spec.Stdin, spec.Stdout, spec.Ready = t.openStdin, t.openStdout, true
	t.init(spec, log)
	t.OnStart(t.started)
	return t
}

// argvFor is the supervisor's ArgvFor: the fixed arguments and the
// current settings.
func (t *Typer) argvFor(int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.startGen = t.cfgGen
	return append(slices.Clone(t.argv), "--backend="+t.name, "--paste-over-chars="+strconv.Itoa(t.paste))
}

// Configure sets the route and paste_over_chars; a change restarts a
// running child with them.
func (t *Typer) Configure(name string, pasteOverChars int) {
	t.mu.Lock()
	changed := name != t.name || pasteOverChars != t.paste
	if changed {
		t.name, t.paste = name, pasteOverChars
		t.cfgGen++
	}
	running := t.w != nil
	t.mu.Unlock()
	if changed && running {
		t.Restart()
	}
}

// Open waits, up to ctx, until a child started with the current settings
// is ready, and returns what it said: the backends it tries, or why
// there are none.
func (t *Typer) Open(ctx context.Context) (typewire.Ready, error) {
	for {
		t.mu.Lock()
		ok, r, want := t.up.on && t.readyGen == t.cfgGen, t.ready, t.cfgGen
		// Up with older settings: the restart that brings the new ones is
		// a change of state (Changed); waiting on up would spin.
		var up <-chan struct{}
		if !t.up.on {
			up = t.up.C()
		}
		changed := t.Changed()
		t.mu.Unlock()
		if ok {
			return r, nil
		}
		down := t.Down()
		select {
		case <-ctx.Done():
			return typewire.Ready{}, fmt.Errorf("the typing child (yaz-type) was not ready with settings %d: %w", want, ctx.Err())
		case <-down:
			st := t.Status()
			return typewire.Ready{}, fmt.Errorf("the typing child (yaz-type) is down (%s, %s)", st.State, st.LastExit)
		case <-up:
		case <-changed:
		}
	}
}

// openStdin is the supervisor's Stdin hook: a fresh pipe per start.
func (t *Typer) openStdin() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("type stdin: %w", err)
	}
	t.mu.Lock()
	if t.w != nil {
		t.w.Close()
	}
	t.w = w
	t.up.set(false)
	t.mu.Unlock()
	return r, nil
}

// started is the supervisor's hook, after readiness: the child takes
// requests, and its readiness line says with what.
func (t *Typer) started(pid, restart int) {
	var r typewire.Ready
	if err := json.Unmarshal([]byte(t.Status().Ready), &r); err != nil {
		r = typewire.Ready{Error: "the typing child said nothing of its route"}
	}
	t.mu.Lock()
	t.ready, t.readyGen = r, t.startGen
	// Settings that changed while this start was being made (after its
	// arguments, before its stdin, when Configure could not see it
	// running) are not its own: it starts again with them, or Open
	// would wait for them for ever.
	stale := t.startGen != t.cfgGen
	t.up.set(t.w != nil)
	t.mu.Unlock()
	t.changed.Broadcast()
	if stale {
		t.Restart() // kept for the supervisor's next turn (a buffered request)
	}
}

// openStdout is the supervisor's Stdout hook: a fresh pipe per start,
// read until the child's end closes it.
func (t *Typer) openStdout() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("type stdout: %w", err)
	}
	t.mu.Lock()
	t.gen++
	gen, in := t.gen, t.w
	t.failPendingLocked()
	t.mu.Unlock()
	t.goroutines.Go(func() { t.read(r, gen, in) })
	return w, nil
}

// read routes the events of one start (whose stdin is in); at its end
// every request still pending is told by closing its channel with no
// event.
func (t *Typer) read(r *os.File, gen int, in *os.File) {
	defer r.Close()
	lr := linebound.NewReader(r, linebound.Options{Max: maxEventLine, Long: linebound.Skip})
	for {
		line, err := lr.ReadLine()
		if errors.Is(err, linebound.ErrTooLong) {
			continue
		}
		if err != nil {
			break
		}
		var ev typewire.Event
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		if ev.ID == "" {
			if ev.Notify != "" && t.notify != nil {
				t.notify(ev.Notify)
			}
			continue
		}
		t.mu.Lock()
		if ch, ok := t.pending[ev.ID]; ok && gen == t.gen {
			delete(t.pending, ev.ID)
			ch <- ev // buffered for the one answer
			close(ch)
		}
		t.mu.Unlock()
	}
	t.mu.Lock()
	if gen == t.gen {
		t.failPendingLocked()
		t.up.set(false)
	}
	if t.w != nil && t.w == in {
		t.w.Close()
		t.w = nil
	}
	t.mu.Unlock()
}

func (t *Typer) failPendingLocked() {
	for id, ch := range t.pending {
		close(ch)
		delete(t.pending, id)
	}
}

// send writes one request and returns the channel of its answer.
// ErrNotRunning means nothing was sent.
func (t *Typer) send(req typewire.Request, deadline time.Time) (<-chan typewire.Event, func(), error) {
	t.mu.Lock()
	if t.w == nil || !t.up.on {
		t.mu.Unlock()
		return nil, nil, ErrNotRunning
	}
	t.nextID++
	req.ID = "t" + strconv.Itoa(t.nextID)
	ch := make(chan typewire.Event, 1)
	t.pending[req.ID] = ch
	w := t.w
	t.mu.Unlock()
	forget := func() {
		t.mu.Lock()
		delete(t.pending, req.ID)
		t.mu.Unlock()
	}
	line, err := json.Marshal(req)
	if err != nil {
		forget()
		return nil, nil, fmt.Errorf("type request: %w", err)
	}
	// A long text is more than a pipe holds: the write waits for the
	// child to read it, within the request's bound (a stopped child
	// never reads).
	_ = w.SetWriteDeadline(deadline)
	if _, err := w.Write(append(line, '\n')); err != nil {
		forget()
		return nil, nil, fmt.Errorf("%w: %w", ErrNotRunning, err)
	}
	return ch, forget, nil
}

// Type types text through the child and returns the backend it used.
// An outcome other than typed is a *typewire.Error (errors.Is with
// typewire.ErrPasted, ErrNoTarget, ErrPartial, ErrRefused, ErrFailed). A
// child that does not answer within typewire.Bound is killed and started
// again, and the text is failed with cause timeout; one that ends first
// fails it with cause child_gone. Neither is ever typed.
func (t *Typer) Type(ctx context.Context, text string) (string, error) {
	n := utf8.RuneCountInString(text)
	bound := t.bound(n)
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	fail := func(cause string) (string, error) {
		return "", typewire.Event{Outcome: typewire.OutcomeFailed, Cause: cause, Chars: n}.Err()
	}
	// A child starting (after a crash or a reload) is waited for, within
	// the bound.
	if _, err := t.Open(ctx); err != nil {
		t.lg.Warn("typing: the typing child is not up", "err", err)
		return fail(typewire.CauseChildGone)
	}
	deadline, _ := ctx.Deadline()
	tg := typewire.TargetOf(ctx)
	req := typewire.Request{Op: typewire.OpType, Text: text}
	if tg != nil {
		req.Window = tg.Want
	}
	ch, forget, err := t.send(req, deadline)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.lg.Warn("typing: the typing child did not take the text in time: it is restarted", "bound_ms", bound.Milliseconds())
			t.restart()
			return fail(typewire.CauseTimeout)
		}
		return fail(typewire.CauseChildGone)
	}
	select {
	case ev, ok := <-ch:
		if !ok {
			return fail(typewire.CauseChildGone)
		}
		if tg != nil {
			tg.Got = ev.Window
		}
		return ev.Backend, ev.Err()
	case <-ctx.Done():
		forget()
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// The caller gave up (the daemon stops): not the child's fault.
			return fail(typewire.CauseInterrupted)
		}
		t.lg.Warn("typing: the typing child did not answer in time: it is restarted", "bound_ms", bound.Milliseconds())
		// What it was doing is cut off: a restart puts back what its
		// routes held (the X server's keys, the portal's session) as a
		// crash would.
		t.restart()
		return fail(typewire.CauseTimeout)
	}
}

// Preedits reports whether the child's route shows tentative text
// (typewire.OpPreedit: the IBus route).
func (t *Typer) Preedits() bool { return t.Ready().Preedit }

// Preedit shows text as the focused field's tentative text ("" takes it
// away) through the child. An answer other than shown is a
// *typewire.Error. It waits no longer than a text of its length would;
// a child that does not answer by then is left to the next text's
// bound (a preedit is no text: nothing is lost).
func (t *Typer) Preedit(ctx context.Context, text string) error {
	ctx, cancel := context.WithTimeout(ctx, t.bound(utf8.RuneCountInString(text)))
	defer cancel()
	deadline, _ := ctx.Deadline()
	ch, forget, err := t.send(typewire.Request{Op: typewire.OpPreedit, Text: text}, deadline)
	if err != nil {
		return fmt.Errorf("preedit: %w", err)
	}
	select {
	case ev, ok := <-ch:
		switch {
		case !ok:
			return typewire.Event{Outcome: typewire.OutcomeFailed, Cause: typewire.CauseChildGone}.Err()
		case ev.Outcome == typewire.OutcomeShown:
			return nil
		}
		return ev.Err()
	case <-ctx.Done():
		forget()
		return fmt.Errorf("preedit: %w", ctx.Err())
	}
}

// restart kills a child taken for hung so that it starts again; until the
// new start is ready no text is sent (Open waits for it).
func (t *Typer) restart() {
	t.mu.Lock()
	t.up.set(false)
	t.mu.Unlock()
	t.Restart()
}

// Program is the child's executable.
func (t *Typer) Program() string { return t.argv[0] }

// Backends lists the backends the child tries, in order.
func (t *Typer) Backends() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.ready.Backends)
}

// Ready is what the current start said of its route.
func (t *Typer) Ready() typewire.Ready {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ready
}

// RouteStatus asks the child for its route's state now (the portal's session
// and consent); a child that does not answer within a second gives what
// its readiness line said.
func (t *Typer) RouteStatus(ctx context.Context) typewire.Status {
	r := t.Ready()
	st := typewire.Status{Route: r.Route, Why: r.Why, Backends: r.Backends, Error: r.Error}
	ctx, cancel := context.WithTimeout(ctx, statusWait)
	defer cancel()
	deadline, _ := ctx.Deadline()
	ch, forget, err := t.send(typewire.Request{Op: typewire.OpStatus}, deadline)
	if err != nil {
		return st
	}
	select {
	case ev, ok := <-ch:
		if ok && ev.Status != nil {
			return *ev.Status
		}
	case <-ctx.Done():
		forget()
	}
	return st
}

// Close closes the child's stdin: it ends at EOF.
func (t *Typer) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w != nil {
		t.w.Close()
		t.w = nil
	}
}
