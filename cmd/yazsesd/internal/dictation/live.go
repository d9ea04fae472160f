package dictation

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/typewire"
)

// Live text (dictation.live): the pieces a hold decides while the key is
// held (hold.Owner.Piece) are typed at once, in order, append-only, each
// followed by one space, the join with the next. Each piece is shaped on
// its own (Text: the [[dictation.replace]] rules, the transcript rule),
// so a rule whose words fall into two pieces is not applied. Nothing is
// ever taken back: what is typed is the shaped piece and a space, and
// the transcript rule lets no control character through.
//
// The target is the window that took the first piece: where the route
// names windows (x11), every later piece and the rest are bound to it
// (typewire.Target), and one that finds another window focused types
// nothing (failed, focus_moved). Typing stops at the first piece that
// does not arrive whole (the focus moved before or during it, no window
// had the focus, a password field, a failure), and nothing more of the
// hold is typed anywhere; the pieces
// after it, and the rest at the release, are kept for `ctl last`. A
// pasted or committed piece (a route that cannot see whether the window
// took it) does not stop the typing; the outcome says it.
//
// Tentative text (hold.Owner.Tentative, where the typing route shows a
// preedit: Preediter): the guess at the piece being spoken is shown as
// the field's preedit, in order with the pieces; a newer guess replaces
// one not shown yet, a piece drops the guesses before it (its text takes
// the preedit's place), and the end of the hold takes a preedit still
// shown away (Clear, at the release; Close and Cancel). A preedit is
// never text: nothing of it stays in the field, and none is shown once
// typing has stopped.

// Live types one hold's pieces as they are decided, on a goroutine of
// its own that Close or Cancel waits for.
type Live struct {
	ctx  context.Context
	env  Env
	wake chan struct{}
	done chan struct{}

	mu        sync.Mutex
	queue     []liveItem // shaped pieces (and guesses) not yet typed (shown)
	closed    bool       // no more pieces come
	cancelled bool       // what is not typed yet is never typed
	rep       LiveReport
	// shown: a preedit is shown (the typing goroutine's; read at the end).
	shown bool
	// preedits: the route shows tentative text; noPreedit: it showed
	// none when asked, and no more are asked in this hold.
	preedits, noPreedit bool
}

// liveItem is a piece to type, or a guess to show (preedit).
type liveItem struct {
	text    string
	preedit bool
}

// Preediter is a Typer that can show tentative text (the daemon's typing
// child where its route has a preedit).
type Preediter interface {
	// Preedits reports whether the route shows tentative text.
	Preedits() bool
	// Preedit shows text as the focused field's tentative text, replacing
	// the one shown; "" takes it away.
	Preedit(ctx context.Context, text string) error
}

// Preedits reports whether t shows tentative text.
func Preedits(t Typer) bool {
	p, ok := t.(Preediter)
	return ok && p.Preedits()
}

// LiveReport is what the live typing of a hold came to.
type LiveReport struct {
	// Texts are the pieces handed out, shaped, in order: typed or not.
	Texts []string
	// Typed pieces arrived whole (with their space); Arrived counts the
	// characters that arrived, those of the piece that stopped too.
	Typed, Arrived int
	// Backend is the last backend used.
	Backend string
	// Window is the window that took the first piece, where the route
	// names it (typewire.Event.Window): every later piece, and the rest,
	// goes there or nowhere. Empty: the route cannot tell.
	Window string
	// Stop is the typing outcome that stopped the typing (nil: none did),
	// an error of Typer.Type; Unseen the last piece pasted or committed.
	Stop, Unseen error
}

// errNoTyper stops live typing where nothing can type (Env.Typer nil).
var errNoTyper = errors.New("no way to type here")

// StartLive begins the live typing of a hold: env's Typer, Replace and
// Report (Pieces, Notify at the end); ctx bounds each piece's typing.
func StartLive(ctx context.Context, env Env) *Live {
	if env.Log == nil {
		env.Log = slog.New(slog.DiscardHandler)
	}
	l := &Live{ctx: ctx, env: env, wake: make(chan struct{}, 1), done: make(chan struct{}), preedits: Preedits(env.Typer)}
	go l.run() // owned: Close and Cancel wait for it (done)
	return l
}

// Piece hands out a piece decided while the key is held (its raw
// text). It returns at once.
func (l *Live) Piece(raw string) {
	text := Text(raw, l.env.Replace)
	if text == "" {
		return
	}
	l.mu.Lock()
	if l.closed || l.cancelled {
		l.mu.Unlock()
		return
	}
	l.rep.Texts = append(l.rep.Texts, text)
	// The piece takes the place of the guesses at it.
	l.queue = slices.DeleteFunc(l.queue, func(it liveItem) bool { return it.preedit })
	l.queue = append(l.queue, liveItem{text: text})
	l.reportLocked()
	l.mu.Unlock()
	l.poke()
}

// Tentative hands out a guess at the piece being spoken (its raw text),
// to show as the field's preedit where the route shows one; "" takes
// the preedit away (Clear). It returns at once.
func (l *Live) Tentative(raw string) {
	text := ""
	if raw != "" {
		if text = Text(raw, l.env.Replace); text == "" {
			return
		}
	}
	l.mu.Lock()
	if !l.preedits || l.closed || l.cancelled || l.noPreedit || l.rep.Stop != nil {
		l.mu.Unlock()
		return
	}
	if n := len(l.queue); n > 0 && l.queue[n-1].preedit {
		l.queue[n-1].text = text // not shown yet: the newer guess instead
	} else {
		l.queue = append(l.queue, liveItem{text: text, preedit: true})
	}
	l.mu.Unlock()
	l.poke()
}

// Clear takes a preedit shown away, after the pieces handed out: the
// hold stopped listening, and its rest is decoded.
func (l *Live) Clear() { l.Tentative("") }

func (l *Live) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Close waits until every piece handed out is typed (or kept) and
// returns the report.
func (l *Live) Close() LiveReport { return l.end(false) }

// Cancel stops the typing: what is not typed yet is never typed (a piece
// being typed is finished). It returns the report.
func (l *Live) Cancel() LiveReport { return l.end(true) }

func (l *Live) end(cancel bool) LiveReport {
	l.stop(cancel)
	<-l.done
	if l.shown { // the typing goroutine has ended: l.shown is ours
		l.preedit("")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.rep
	r.Texts = append([]string(nil), r.Texts...)
	return r
}

// stop takes no more pieces (cancel: types none of those waiting).
func (l *Live) stop(cancel bool) {
	l.mu.Lock()
	l.closed = true
	l.cancelled = l.cancelled || cancel
	l.mu.Unlock()
	l.poke()
}

func (l *Live) run() {
	defer close(l.done)
	for {
		l.mu.Lock()
		if l.cancelled || l.closed && len(l.queue) == 0 {
			l.mu.Unlock()
			return
		}
		if len(l.queue) == 0 {
			l.mu.Unlock()
			<-l.wake
			continue
		}
		it := l.queue[0]
		l.queue = l.queue[1:]
		stopped, noPreedit := l.rep.Stop != nil, l.noPreedit
		l.mu.Unlock()
		switch {
		case it.preedit:
			// A guess queued before the route said it shows none is
			// not asked either.
			if !stopped && !noPreedit && (it.text != "" || l.shown) {
				l.preedit(it.text)
			}
		case stopped:
			continue // kept for `ctl last`, never typed
		default:
			l.typePiece(it.text)
			l.shown = false // the text took the preedit's place
		}
	}
}

// preedit shows text as the preedit ("" takes it away). A route that
// shows none is not asked again in this hold.
func (l *Live) preedit(text string) {
	p, ok := l.env.Typer.(Preediter)
	if !ok {
		return
	}
	err := p.Preedit(l.ctx, text)
	l.shown = err == nil && text != ""
	if err != nil {
		// The cause, never the text.
		l.env.Log.Debug("live text: preedit not shown", "err", err)
		l.mu.Lock()
		l.noPreedit = true
		l.mu.Unlock()
	}
}

// typePiece types one piece and its space, and records what arrived.
func (l *Live) typePiece(text string) {
	n := utf8.RuneCountInString(text) + 1
	var backend string
	err := errNoTyper
	l.mu.Lock()
	tg := &typewire.Target{Want: l.rep.Window}
	l.mu.Unlock()
	if l.env.Typer != nil {
		backend, err = l.env.Typer.Type(typewire.WithTarget(l.ctx, tg), text+" ")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rep.Window == "" && tg.Got != "" && (err == nil || errors.Is(err, typewire.ErrPartial)) {
		l.rep.Window = tg.Got // the first piece that arrived names the target
	}
	if backend != "" {
		l.rep.Backend = backend
	}
	switch {
	case err == nil || errors.Is(err, typewire.ErrPasted) || errors.Is(err, typewire.ErrCommitted):
		l.rep.Typed++
		l.rep.Arrived += n
		if err != nil {
			l.rep.Unseen = err
		}
	default:
		var te *typewire.Error
		if errors.Is(err, typewire.ErrPartial) && errors.As(err, &te) {
			l.rep.Arrived += min(max(te.Event.Arrived, 0), n)
		}
		l.rep.Stop = err
	}
	l.reportLocked()
}

// reportLocked shows the pieces' state on the watch stream.
func (l *Live) reportLocked() {
	if l.env.Report != nil {
		l.env.Report.Pieces(daemonapi.WatchPieces{Decided: len(l.rep.Texts), Typed: l.rep.Typed, Stopped: l.rep.Stop != nil})
	}
}

// liveText is the hold's whole text: the pieces handed out and the rest,
// joined with one space.
func liveText(pieces []string, rest string) string {
	all := append([]string(nil), pieces...)
	if rest != "" {
		all = append(all, rest)
	}
	return strings.Join(all, " ")
}
