// Package notify shows desktop notifications: freedesktop.org
// notifications through `notify-send` (Debian package libnotify-bin), or
// through `gdbus call` on org.freedesktop.Notifications when notify-send is
// missing.
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
// the rest are dropped. Notifications never get in the way of dictation: a
// missing notify-send, no session bus or no notification server is logged
// once at debug level and reported as [Unavailable], never as an error.
package notify

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/yazses/yazses/lib/untrusted"
)

// Limits.
const (
	// DefaultPerMinute is used when Options.PerMinute is 0 or less.
	DefaultPerMinute = 6
	// DefaultTimeout bounds one run of notify-send or gdbus.
	DefaultTimeout = 3 * time.Second
	// ExpireMs is how long a notification stays up, in milliseconds.
	ExpireMs = 5000
	// maxSummary and maxBody cap the sanitised texts, in runes.
	maxSummary = 80
	maxBody    = 300
	// AppName is the application name the server shows.
	AppName = "YazSes"
)

// stringConstant can only be written as a string constant by other
// packages: they cannot name the type, so a string variable does not
// convert to it.
type stringConstant string

// Message is one notification: a summary line and a body.
type Message struct {
	summary, body string
	urgency       string
}

// Text makes a Message from two string constants.
func Text(summary, body stringConstant) Message {
	return Message{summary: string(summary), body: string(body), urgency: "normal"}
}

// Urgent returns m with critical urgency.
func (m Message) Urgent() Message { m.urgency = "critical"; return m }

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
	Off         Outcome = "off"          // notifications are switched off
	RateLimited Outcome = "rate_limited" // PerMinute reached
	Unavailable Outcome = "unavailable"  // no tool, no bus or no server
)

// Options configure a Notifier.
type Options struct {
	// Enabled is config notify.enabled.
	Enabled bool
	// PerMinute is config notify.per_minute; 0 or less is DefaultPerMinute.
	PerMinute int
	// Environ is the environment of the tools (DBUS_SESSION_BUS_ADDRESS,
	// XDG_RUNTIME_DIR, PATH); nil is os.Environ().
	Environ []string
	// Timeout bounds one tool run; 0 is DefaultTimeout.
	Timeout time.Duration
	// Log gets the one debug line about unavailable notifications; nil
	// discards it.
	Log *slog.Logger
	// Now is the clock of the rate limit; nil is time.Now.
	Now func() time.Time
}

// Notifier shows notifications. It is safe for concurrent use.
type Notifier struct {
	o Options

	mu      sync.Mutex
	enabled bool
	perMin  int
	sent    []time.Time // times of the notifications of the last minute
	logged  bool        // the unavailable line was logged

	wg sync.WaitGroup // posted notifications
}

// New returns a Notifier.
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

// take reserves a slot of the rate limit, or says why not.
func (n *Notifier) take() (Outcome, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.enabled {
		return Off, false
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
		return RateLimited, false
	}
	n.sent = append(n.sent, now)
	return Shown, true
}

// Notify shows m, waiting at most Options.Timeout for the notification
// server. It never fails in a way that matters to the caller: the outcome
// is for the audit log. A caller that cannot wait runs it in a goroutine.
func (n *Notifier) Notify(ctx context.Context, m Message) Outcome {
	if out, ok := n.take(); !ok {
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, n.o.Timeout)
	defer cancel()
	err := n.show(ctx, m)
	if err == nil {
		return Shown
	}
	n.mu.Lock()
	first := !n.logged
	n.logged = true
	n.mu.Unlock()
	if first {
		n.o.Log.Debug("desktop notifications unavailable; going on without them", "err", err)
	}
	return Unavailable
}

// Post shows m in the background, so that a slow notification server never
// holds up the caller (a hold starting, say). Wait waits for what was
// posted; the context of a posted notification is ctx, cut at
// Options.Timeout.
func (n *Notifier) Post(ctx context.Context, m Message) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.Notify(ctx, m)
	}()
}

// Wait waits until every posted notification is done.
func (n *Notifier) Wait() { n.wg.Wait() }

// show runs notify-send, or gdbus when notify-send is missing.
func (n *Notifier) show(ctx context.Context, m Message) error {
	if path, ok := n.look("notify-send"); ok {
		return n.run(ctx, path, NotifySendArgs(m)...)
	}
	if path, ok := n.look("gdbus"); ok {
		return n.run(ctx, path, GdbusArgs(m)...)
	}
	return fmt.Errorf("neither notify-send nor gdbus found")
}

// NotifySendArgs is the argv of notify-send for m (after the program).
func NotifySendArgs(m Message) []string {
	return []string{
		"--app-name=" + AppName,
		"--urgency=" + m.urgency,
		"--expire-time=" + strconv.Itoa(ExpireMs),
		"--icon=audio-input-microphone",
		"--transient",
		"--", m.Summary(), m.Body(),
	}
}

// GdbusArgs is the argv of gdbus for m: a Notify call whose arguments are
// GVariant text, the strings quoted by gvariantString.
func GdbusArgs(m Message) []string {
	return []string{
		"call", "--session",
		"--dest", "org.freedesktop.Notifications",
		"--object-path", "/org/freedesktop/Notifications",
		"--method", "org.freedesktop.Notifications.Notify",
		"--",
		gvariantString(AppName), "uint32 0", gvariantString("audio-input-microphone"),
		gvariantString(m.Summary()), gvariantString(m.Body()),
		"@as []",
		"{'urgency': <byte " + urgencyByte(m.urgency) + ">, 'transient': <true>}",
		"int32 " + strconv.Itoa(ExpireMs),
	}
}

func urgencyByte(u string) string {
	switch u {
	case "low":
		return "0"
	case "critical":
		return "2"
	}
	return "1"
}

// gvariantString quotes s as a GVariant text-format string.
func gvariantString(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch r {
		case '\'', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// look finds a tool in the PATH of the environment.
func (n *Notifier) look(name string) (string, bool) {
	path := ""
	for _, kv := range n.o.Environ {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			continue
		}
		if p, err := exec.LookPath(dir + "/" + name); err == nil {
			return p, true
		}
	}
	return "", false
}

// run runs a tool in its own process group, killed when ctx ends.
func (n *Notifier) run(ctx context.Context, path string, args ...string) error {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = n.o.Environ
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		if len(msg) > 200 {
			msg = strings.ToValidUTF8(msg[:200], "")
		}
		return fmt.Errorf("%s: %w: %s", path, err, msg)
	}
	return nil
}
