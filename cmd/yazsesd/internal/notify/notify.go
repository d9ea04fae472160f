// Package notify shows desktop notifications: freedesktop.org
// notifications, org.freedesktop.Notifications.Notify called over the
// session bus (godbus, no helper program). The bus is the one the daemon's
// environment names: DBUS_SESSION_BUS_ADDRESS, else the socket "bus" in
// XDG_RUNTIME_DIR.
//
// Only fixed sentences can be shown: a [Message] is made by [Text] from
// string constants written in the daemon's source (a string variable, such
// as a transcript or a question, does not compile), and its text is
// sanitised again with untrusted.Line (control characters removed, length
// capped). The messages the daemon needs are here: [Listening],
// [NoTextTarget], [QuestionWaiting], [Lost] and [TypingFailed], for a
// child left down [ModelMissing], [ModelInvalid], [LanguageUnsupported] and
// [ChildDown], and for a hold refused because the decoder is down
// [RefusedModelMissing] and its kin, also by kind word in [Kinds].
//
// A Notifier can be switched off (config notify.enabled) and shows at most
// PerMinute notifications in any sliding minute (config notify.per_minute);
// the rest are dropped. Notifications never get in the way of dictation:
// [Notifier.Post] never blocks. It puts the message in a queue of at most
// [MaxQueue] for the Notifier's one goroutine, which owns the one bus
// connection (dialled at the first notification, dialled again after it
// ends) and sends them in turn; a message that finds the queue full is
// dropped ([Dropped]). Each notification, the dial included, is bounded
// by Options.Timeout, so a notification server that does not answer holds
// up only the notifications behind it, never a caller. No session bus, no
// notification server or no answer in time is logged once at debug level
// and reported as [Unavailable], never as an error; a connection that ends
// is logged, and the next notification dials again. [Notifier.Wait] waits
// for what was posted, then ends the goroutine and closes the connection.
package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/yazses/yazses/lib/bcast"
	"github.com/yazses/yazses/lib/untrusted"
	"github.com/yazses/yazses/lib/xdp"
)

// Limits.
const (
	// DefaultPerMinute is used when Options.PerMinute is 0 or less.
	DefaultPerMinute = 6
	// DefaultTimeout bounds one notification: the dial when there is no
	// connection, and the Notify call.
	DefaultTimeout = 3 * time.Second
	// MaxQueue is how many notifications wait for the bus at most; one
	// more is dropped.
	MaxQueue = 8
	// ExpireMs is how long a notification stays up, in milliseconds.
	ExpireMs = 5000
	// maxSummary and maxBody cap the sanitised texts, in runes.
	maxSummary = 80
	maxBody    = 300
	// AppName is the application name the server shows.
	AppName = "YazSes"
	// Icon is the icon name the server shows.
	Icon = "audio-input-microphone"
)

// The notification service on the session bus.
const (
	service = "org.freedesktop.Notifications"
	path    = dbus.ObjectPath("/org/freedesktop/Notifications")
	method  = "org.freedesktop.Notifications.Notify"
)

// stringConstant can only be written as a string constant by other
// packages: they cannot name the type, so a string variable does not
// convert to it.
type stringConstant string

// Message is one notification: a summary line and a body.
type Message struct {
	summary, body string
	urgency       byte // the "urgency" hint: 0 low, 1 normal, 2 critical
}

// Text makes a Message from two string constants.
func Text(summary, body stringConstant) Message {
	return Message{summary: string(summary), body: string(body), urgency: 1}
}

// Urgent returns m with critical urgency.
func (m Message) Urgent() Message { m.urgency = 2; return m }

// Summary and Body are the sanitised texts that are shown.
func (m Message) Summary() string { return untrusted.Line(m.summary, maxSummary) }
func (m Message) Body() string    { return untrusted.Line(m.body, maxBody) }

// The daemon's messages.
var (
	Listening       = Text(AppName, "Listening…")
	NoTextTarget    = Text(AppName, "No text field had focus: the text is kept (yazsesd ctl last).")
	QuestionWaiting = Text(AppName, "A question is waiting.")
	Lost            = Text(AppName, "Dictation failed: the speech could not be transcribed.")
	TypingFailed    = Text(AppName, "The text could not be typed here: it is kept (yazsesd ctl last).")

	// Said before the desktop's remote-desktop dialog (the portal
	// route), and when nothing on this desktop can type.
	PortalConsent = Text(AppName, "YazSes asks to type into your windows: allow the desktop's remote-desktop dialog so that dictation can type here.")
	NoRoute       = Text(AppName, "Nothing can type on this desktop: the text is kept (yazsesd ctl last). `yazsesd status` says what to install or allow.")
	// Said when the focused field is a password or PIN field, where the
	// route can tell (ibus): nothing was typed.
	RefusedField = Text(AppName, "A password field has the focus: nothing was typed. The text is kept (yazsesd ctl last).")

	// Said once when a child is left down for a cause a restart cannot
	// fix; `yazsesd status` names the file and the fix.
	ModelMissing        = Text(AppName, "No speech model: dictation cannot work. `yazsesd status` says which file is missing and how to fetch one.")
	ModelInvalid        = Text(AppName, "The speech model file is not a whisper model: dictation cannot work. `yazsesd status` says which file.")
	LanguageUnsupported = Text(AppName, "The speech model does not know the configured language: dictation cannot work. See `yazsesd status`.")
	ChildDown           = Text(AppName, "A part of YazSes could not start and is left down. See `yazsesd status`.")
	VADModelMissing     = Text(AppName, "No voice-detector model where [vad] model says: dictation cannot work. `yazsesd status` says which file and how to fetch it.")
	VADModelInvalid     = Text(AppName, "The [vad] model file is not a Silero VAD model: dictation cannot work. `yazsesd status` says which file.")

	// Said when hold.start is refused because the decoder is down for
	// good (the daemon says it at most once per cause in 30 s): the key
	// was pressed and nothing is recorded.
	RefusedModelMissing = Text(AppName, "Not listening: no speech model. `yazsesd status` says which file is missing and how to fetch one.")
	RefusedModelInvalid = Text(AppName, "Not listening: the speech model file is not a whisper model. `yazsesd status` says which file.")
	RefusedLanguage     = Text(AppName, "Not listening: the speech model does not know the configured language. See `yazsesd status`.")
	RefusedDecoderDown  = Text(AppName, "Not listening: the speech decoder is down. See `yazsesd status`.")
)

// Kinds name the daemon's messages with closed-vocabulary words.
var Kinds = map[string]Message{
	"listening":        Listening,
	"no_target":        NoTextTarget,
	"question_waiting": QuestionWaiting,
	"lost":             Lost,
	"typing_failed":    TypingFailed,
	"portal_consent":   PortalConsent,
	"refused_field":    RefusedField,
	"no_route":         NoRoute,

	"model_missing":        ModelMissing,
	"model_invalid":        ModelInvalid,
	"language_unsupported": LanguageUnsupported,
	"child_down":           ChildDown,
	"vad_model_missing":    VADModelMissing,
	"vad_model_invalid":    VADModelInvalid,

	"refused_model_missing":        RefusedModelMissing,
	"refused_model_invalid":        RefusedModelInvalid,
	"refused_language_unsupported": RefusedLanguage,
	"refused_decoder_down":         RefusedDecoderDown,
}

// ByKind returns the message of a kind word (see Kinds).
func ByKind(kind string) (Message, bool) {
	m, ok := Kinds[kind]
	return m, ok
}

// Outcome is what became of one notification: a closed vocabulary for the
// audit log.
type Outcome string

const (
	Shown       Outcome = "shown"
	Queued      Outcome = "queued"       // Post: waiting for the bus
	Off         Outcome = "off"          // notifications are switched off
	RateLimited Outcome = "rate_limited" // PerMinute reached
	Dropped     Outcome = "dropped"      // MaxQueue were waiting already
	Unavailable Outcome = "unavailable"  // no bus, no server, or no answer in time
)

// Options configure a Notifier.
type Options struct {
	// Enabled is config notify.enabled.
	Enabled bool
	// PerMinute is config notify.per_minute; 0 or less is DefaultPerMinute.
	PerMinute int
	// Environ names the session bus (DBUS_SESSION_BUS_ADDRESS, else
	// XDG_RUNTIME_DIR/bus); nil is os.Environ().
	Environ []string
	// Timeout bounds one notification, the dial included; 0 is
	// DefaultTimeout.
	Timeout time.Duration
	// Log gets the lines about unavailable notifications and a connection
	// that ended; nil discards them.
	Log *slog.Logger
	// Now is the clock of the rate limit; nil is time.Now.
	Now func() time.Time
}

// Notifier shows notifications. It is safe for concurrent use.
type Notifier struct {
	o Options

	mu      sync.Mutex
	wake    bcast.Signal // under mu: the queue grew, or the worker is asked to stop
	enabled bool
	perMin  int
	sent    []time.Time // times of the notifications of the last minute
	logged  bool        // the unavailable line was logged since the last shown
	queue   []item      // waiting for the worker, at most MaxQueue
	w       *worker     // the running worker; nil while none
}

// item is one queued notification.
type item struct {
	ctx  context.Context
	m    Message
	done chan Outcome // Notify's; nil for Post
}

// worker is one run of the goroutine that talks to the bus.
type worker struct {
	stop bool          // Wait asked it to end once the queue is empty
	done chan struct{} // closed when it has ended and closed the connection
	// cut ends one Timeout after Wait was called: the call then in flight
	// ends, and what is still queued is not sent.
	cut    context.Context
	cutNow context.CancelFunc
}

// New returns a Notifier. It starts nothing: the goroutine and the bus
// connection come with the first notification.
func New(o Options) *Notifier {
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	n := &Notifier{o: o}
	n.Set(o.Enabled, o.PerMinute)
	return n
}

// Set changes the switch and the rate (after a configuration reload).
func (n *Notifier) Set(enabled bool, perMinute int) {
	if perMinute <= 0 {
		perMinute = DefaultPerMinute
	}
	n.mu.Lock()
	n.enabled, n.perMin = enabled, perMinute
	n.mu.Unlock()
}

// Post queues m for the bus and returns at once: Queued, or why not (Off,
// RateLimited, Dropped). ctx is the notification's: one whose ctx has
// ended by its turn is not sent, and the call is cut at Options.Timeout.
func (n *Notifier) Post(ctx context.Context, m Message) Outcome {
	return n.enqueue(ctx, m, nil)
}

// Notify shows m and says what became of it, waiting for the
// notifications queued before it and for its own, each bounded by
// Options.Timeout. It never fails in a way that matters to the caller:
// the outcome is for the audit log.
func (n *Notifier) Notify(ctx context.Context, m Message) Outcome {
	done := make(chan Outcome, 1)
	if out := n.enqueue(ctx, m, done); out != Queued {
		return out
	}
	select {
	case out := <-done:
		return out
	case <-ctx.Done():
		return Unavailable
	}
}

// enqueue applies the switch, the queue's bound and the rate limit, and
// queues m, starting the worker when none runs.
func (n *Notifier) enqueue(ctx context.Context, m Message, done chan Outcome) Outcome {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.enabled {
		return Off
	}
	if len(n.queue) >= MaxQueue {
		n.o.Log.Debug("desktop notification dropped: the notification server is slow", "waiting", len(n.queue))
		return Dropped
	}
	now := n.o.Now()
	keep := n.sent[:0]
	for _, t := range n.sent {
		if now.Sub(t) < time.Minute {
			keep = append(keep, t)
		}
	}
	n.sent = keep
	if len(n.sent) >= n.perMin {
		return RateLimited
	}
	n.sent = append(n.sent, now)
	n.queue = append(n.queue, item{ctx: ctx, m: m, done: done})
	if n.w == nil {
		n.w = &worker{done: make(chan struct{})}
		n.w.cut, n.w.cutNow = context.WithCancel(context.Background())
		go n.run(n.w)
	} else {
		n.wake.Broadcast()
	}
	return Queued
}

// Wait waits until every notification queued so far is done, then ends the
// worker and closes the bus connection. It waits one Options.Timeout at
// most: then the call in flight is cut and what is still queued is not
// sent, so a server that does not answer holds up a shutdown by that much
// alone. A later notification starts the worker again.
func (n *Notifier) Wait() {
	n.mu.Lock()
	w := n.w
	if w != nil {
		w.stop = true
		n.wake.Broadcast()
	}
	n.mu.Unlock()
	if w == nil {
		return
	}
	timer := time.AfterFunc(n.o.Timeout, w.cutNow)
	<-w.done
	timer.Stop()
}

// run is the worker: it sends the queued notifications in turn over its
// connection until Wait asks it to stop and the queue is empty.
func (n *Notifier) run(w *worker) {
	var bus *dbus.Conn
	defer func() {
		if bus != nil {
			bus.Close()
		}
		w.cutNow()
		close(w.done)
	}()
	for {
		n.mu.Lock()
		for len(n.queue) == 0 && !w.stop {
			wake := n.wake.C() // taken under mu, where Broadcast is called
			n.mu.Unlock()
			<-wake
			n.mu.Lock()
		}
		if len(n.queue) == 0 {
			n.w = nil
			n.mu.Unlock()
			return
		}
		it := n.queue[0]
		n.queue[0] = item{}
		n.queue = n.queue[1:]
		n.mu.Unlock()
		var out Outcome
		bus, out = n.send(w.cut, bus, it)
		if it.done != nil {
			it.done <- out
		}
	}
}

// send shows one notification over bus, dialling first when bus is nil or
// has ended; it returns the connection to use next. The call ends at
// Options.Timeout, with the item's context, or when cut ends.
func (n *Notifier) send(cut context.Context, bus *dbus.Conn, it item) (*dbus.Conn, Outcome) {
	if it.ctx.Err() != nil || cut.Err() != nil {
		return bus, Unavailable
	}
	ctx, cancel := context.WithTimeout(it.ctx, n.o.Timeout)
	defer cancel()
	defer context.AfterFunc(cut, cancel)()
	bus = n.check(bus)
	if bus == nil {
		var err error
		if bus, err = n.dial(ctx); err != nil {
			n.unavailable(err)
			return nil, Unavailable
		}
	}
	hints := map[string]dbus.Variant{"urgency": dbus.MakeVariant(it.m.urgency), "transient": dbus.MakeVariant(true)}
	var id uint32
	err := bus.Object(service, path).CallWithContext(ctx, method, 0,
		AppName, uint32(0), Icon, it.m.Summary(), it.m.Body(), []string{}, hints, int32(ExpireMs)).Store(&id)
	if err != nil {
		n.unavailable(fmt.Errorf("%s: %w", method, err))
		if ctx.Err() == nil && !errors.As(err, new(dbus.Error)) {
			bus.Close() // neither an answer nor out of time: the connection broke
		}
		return n.check(bus), Unavailable
	}
	n.mu.Lock()
	n.logged = false
	n.mu.Unlock()
	return bus, Shown
}

// check returns bus, or nil when it has ended (the bus went away): that
// is logged, and the next notification dials again.
func (n *Notifier) check(bus *dbus.Conn) *dbus.Conn {
	if bus == nil || bus.Connected() {
		return bus
	}
	bus.Close()
	n.o.Log.Info("desktop notifications: the session bus connection ended; the next notification dials again")
	return nil
}

// dial connects to the session bus of the environment; the connection is
// closed, and the dial fails, when ctx ends before it is ready.
func (n *Notifier) dial(ctx context.Context) (*dbus.Conn, error) {
	addr, err := xdp.BusAddress(n.o.Environ)
	if err != nil {
		return nil, err
	}
	bus, err := dbus.Dial(addr)
	if err != nil {
		return nil, fmt.Errorf("dial the session bus: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { bus.Close() })
	err = bus.Auth(nil)
	if err == nil {
		err = bus.Hello()
	}
	if !stop() {
		err = errors.Join(err, ctx.Err())
	}
	if err != nil {
		bus.Close()
		return nil, fmt.Errorf("connect to the session bus %s: %w", addr, err)
	}
	return bus, nil
}

// unavailable logs the first failure since the last notification shown.
func (n *Notifier) unavailable(err error) {
	n.mu.Lock()
	first := !n.logged
	n.logged = true
	n.mu.Unlock()
	if first {
		n.o.Log.Debug("desktop notifications unavailable; going on without them", "err", err)
	}
}
