package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/yazses/yazses/lib/cli"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
)

// Output formats of ctl watch.
const (
	formatJSON    = "json"
	formatWaybar  = "waybar"
	formatPolybar = "polybar"
)

// classOffline is the Waybar class (and alt) of the line printed when the
// daemon is not there; the other classes are the states.
const classOffline = "offline"

// textRunes caps the preview shown as a bar's text (its end is shown);
// tooltipRunes caps it in the tooltip.
const (
	textRunes    = 40
	tooltipRunes = 300
)

// watchHelp is the long help of ctl, which tells of watch.
const watchHelp = `ctl watch prints one line for the live state at once, then one per change,
until interrupted. States: idle, listening, decoding, typing, speaking (a
question is spoken), waiting (a question waits for your hold to end). A reader
that falls behind gets the latest state; the seq numbers show what it skipped.

When the daemon is not running, or stops, ctl watch prints one "offline" line
(waybar: class "offline"; polybar: "off") and exits 1: a status bar runs it
again (Waybar "restart-interval", polybar "tail = true" with "interval").
Ctrl-C, SIGTERM or the reader going away end it with exit 0.

The text decoded so far in a hold is shown only with [dictation] preview = true
in the daemon's configuration. Waybar text is Pango-escaped and polybar text
has its % doubled, so dictated text is never read as markup or an action.`

// watch is `yazsesd ctl watch [--format FORMAT]`: it streams the live state.
func watch(e *env, format string) error {
	switch format {
	case "":
		format = formatJSON
	case formatJSON, formatWaybar, formatPolybar:
	default:
		return cli.Usagef("--format must be json, waybar or polybar, got %q", format)
	}
	ctx, stop := signal.NotifyContext(e.ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := &lineWriter{w: e.stdout, format: format}
	c, err := dial(ctx, daemonapi.Dial)
	if err != nil {
		out.offline("yazsesd is not running")
		return err
	}
	defer c.Close()
	err = c.Watch(ctx, out.event)
	var rpcErr *jsonrpc.Error
	switch {
	case ctx.Err() != nil:
		return nil // interrupted: a clean end
	case errors.Is(err, syscall.EPIPE):
		return nil // the reader is gone
	case errors.Is(err, daemonapi.ErrWatchEnded):
		out.offline("yazsesd stopped")
		return errors.New("watch: yazsesd stopped (a status bar runs watch again: see ctl watch --help)")
	case errors.As(err, &rpcErr):
		out.offline("the daemon refused the watch")
		return fmt.Errorf("watch: %s (code %d)", rpcErr.Message, rpcErr.Code)
	default:
		out.offline("the watch failed")
		return fmt.Errorf("watch: %w", err)
	}
}

// lineWriter prints events in one format, one whole line per write.
type lineWriter struct {
	w      io.Writer
	format string
}

func (l *lineWriter) event(ev daemonapi.WatchEvent) error {
	var line []byte
	switch l.format {
	case formatWaybar:
		line = waybarLine(ev)
	case formatPolybar:
		line = []byte(polybarText(ev))
	default:
		b, err := marshal(ev)
		if err != nil {
			return fmt.Errorf("encode event: %w", err)
		}
		line = b
	}
	_, err := l.w.Write(append(line, '\n'))
	return err
}

// offline prints the line of a daemon that is not there (none in json:
// the exit status and stderr say it). why is a fixed sentence.
func (l *lineWriter) offline(why string) {
	switch l.format {
	case formatWaybar:
		b, _ := marshal(waybar{Text: "off", Alt: classOffline, Class: classOffline, Tooltip: markupEscape(why)})
		l.w.Write(append(b, '\n'))
	case formatPolybar:
		io.WriteString(l.w, "off\n")
	}
}

// marshal is json.Marshal without HTML escapes ("<" stays "<"): the
// lines are for scripts and bars, not for a web page.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// waybar is a line of Waybar's custom module with "return-type": "json".
type waybar struct {
	Text    string `json:"text"`
	Alt     string `json:"alt"`     // picks the icon of "format-icons"
	Class   string `json:"class"`   // a state or "offline", for style.css
	Tooltip string `json:"tooltip"` // Pango markup, escaped
}

// WaybarClasses are the classes ctl watch --format waybar gives.
var WaybarClasses = append(append([]string(nil), daemonapi.States...), classOffline)

func waybarLine(ev daemonapi.WatchEvent) []byte {
	b, _ := marshal(waybar{
		Text:    markupEscape(barText(ev)),
		Alt:     ev.State,
		Class:   ev.State,
		Tooltip: markupEscape(tooltip(ev)),
	})
	return b
}

// barText is the state, or the end of the preview when there is one.
func barText(ev daemonapi.WatchEvent) string {
	if ev.Preview == "" {
		return ev.State
	}
	return oneLine(lastRunes(ev.Preview, textRunes))
}

func polybarText(ev daemonapi.WatchEvent) string {
	return strings.ReplaceAll(barText(ev), "%", "%%")
}

// tooltip says everything of the event a person would want, one item a
// line.
func tooltip(ev daemonapi.WatchEvent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "yazsesd: %s", ev.State)
	if ev.Waiting > 0 {
		fmt.Fprintf(&b, "\nquestions waiting for the hold to end: %d", ev.Waiting)
	}
	bu := ev.Budget
	switch {
	case !bu.Available:
		b.WriteString("\nask_human budget: unknown (the gate is restarting)")
	default:
		fmt.Fprintf(&b, "\nask_human budget: %d of %d left this hour", bu.Left, bu.PerHour)
		if bu.NextFreeAtMs > 0 {
			fmt.Fprintf(&b, ", next free at %s", time.UnixMilli(bu.NextFreeAtMs).Format("15:04"))
		}
		if bu.FailClosed {
			b.WriteString(" (fail closed)")
		}
	}
	if p := ev.Pieces; p.Decided > 0 {
		fmt.Fprintf(&b, "\nlive text: %d of %d pieces typed", p.Typed, p.Decided)
		if p.Stopped {
			b.WriteString(", stopped (the rest is kept for ctl last)")
		}
	}
	if ev.LastHold != "" {
		fmt.Fprintf(&b, "\nlast dictation: %s", ev.LastHold)
	}
	if ev.LastAsk != "" {
		fmt.Fprintf(&b, "\nlast question: %s", ev.LastAsk)
	}
	if ev.Preview != "" {
		fmt.Fprintf(&b, "\nso far: %s", oneLine(lastRunes(ev.Preview, tooltipRunes)))
	}
	return b.String()
}

// lastRunes returns the last n runes of s, after "…" when it was cut.
func lastRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := len(s)
	for range n {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return "…" + s[i:]
}

// oneLine turns control characters (line breaks, tabs) into spaces.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// markupEscape escapes text for Pango markup, as g_markup_escape_text does.
var markupEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "'", "&#39;", `"`, "&quot;").Replace
