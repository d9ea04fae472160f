package app

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/livestate"
	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
	"github.com/yazses/yazses/lib/safesocket"
)

// stubDaemon serves only the watch method, from live, on the real daemon
// socket in a fresh XDG_RUNTIME_DIR. stop ends it as a stopping daemon
// does (the state closes, then the server).
func stubDaemon(t *testing.T, live *livestate.State) (stop func()) {
	t.Helper()
	base := t.TempDir()
	if err := os.Chmod(base, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", base)
	dir, err := safesocket.Dir(base)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := safesocket.Listen(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := jsonrpc.NewServer(nil)
	srv.HandleStream(daemonapi.MethodWatch, live.Serve)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			live.Close()
			cancel()
			if err := <-done; err != nil {
				t.Errorf("stub daemon: Serve = %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// lineSink is stdout: it passes each whole line on.
type lineSink struct {
	mu    sync.Mutex
	buf   []byte
	lines chan string
	all   bytes.Buffer
}

func (s *lineSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all.Write(p)
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		s.lines <- string(s.buf[:i])
		s.buf = s.buf[i+1:]
	}
}

// watcher is a running `yazsesd ctl watch`.
type watcher struct {
	t      *testing.T
	out    *lineSink
	errs   bytes.Buffer
	cancel context.CancelFunc
	code   chan int
}

func startWatch(t *testing.T, args ...string) *watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{t: t, out: &lineSink{lines: make(chan string, 1000)}, cancel: cancel, code: make(chan int, 1)}
	go func() {
		w.code <- Main(ctx, append([]string{"ctl", "watch"}, args...), strings.NewReader(""), w.out, &w.errs, "test")
	}()
	t.Cleanup(func() { cancel() })
	return w
}

// next returns the next line printed.
func (w *watcher) next() string {
	w.t.Helper()
	select {
	case l := <-w.out.lines:
		return l
	case <-time.After(10 * time.Second):
		w.t.Fatalf("no line within 10 s; stderr: %s", w.errs.String())
	}
	return ""
}

// exit waits for the command's exit status.
func (w *watcher) exit() int {
	w.t.Helper()
	select {
	case c := <-w.code:
		return c
	case <-time.After(10 * time.Second):
		w.t.Fatal("ctl watch still running 10 s later")
	}
	return -1
}

// parseWaybar checks one line as Waybar reads a custom module's output
// with "return-type": "json": one JSON object with the string members
// text, alt, class and tooltip, nothing else, class one of the known
// classes. It returns the members.
func parseWaybar(t *testing.T, line string) map[string]string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("waybar line %q is not a JSON object: %v", line, err)
	}
	got := map[string]string{}
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			t.Errorf("waybar line %q: %s is %T, want a string", line, k, v)
		}
		got[k] = s
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"alt", "class", "text", "tooltip"}; !slices.Equal(keys, want) {
		t.Errorf("waybar line %q has members %v, want %v", line, keys, want)
	}
	if !slices.Contains(WaybarClasses, got["class"]) {
		t.Errorf("waybar class %q is not one of %v", got["class"], WaybarClasses)
	}
	if got["alt"] != got["class"] || got["text"] == "" {
		t.Errorf("waybar line %q: want alt = class and some text", line)
	}
	return got
}

// marker is a distinctive dictated text, with markup and a polybar tag in
// it.
const marker = "Zebra-Quokka-7719 <b>bold</b> & %{A1:xterm:}click%{A}"

// holdSequence drives live through a hold with a question, as the daemon
// will, waiting for each line; it returns the classes printed. The marker
// is given as the preview while the hold listens and decodes.
func holdSequence(t *testing.T, live *livestate.State, w *watcher, parse func(string) string) []string {
	t.Helper()
	var states []string
	step := func(f func()) {
		f()
		states = append(states, parse(w.next()))
	}
	states = append(states, parse(w.next())) // the state at once
	step(func() { live.SetHold(daemonapi.StateListening); live.SetPreview(marker) })
	step(func() { live.SetPreview(marker + " again"); live.AddWaiting(1) })
	step(func() { live.SetHold(daemonapi.StateDecoding) }) // released: the question still waits
	step(func() { live.AddWaiting(-1) })
	step(func() { live.SetPreview(marker + " decoded"); live.SetHold(daemonapi.StateTyping) })
	step(func() { live.EndHold("typed") })
	step(func() { live.SetAsk(daemonapi.StateSpeaking) })
	step(func() { live.SetAsk(daemonapi.StateListening) })
	step(func() { live.EndAsk(daemonapi.Answered) }) // the call's result, before the question leaves
	step(func() { live.SetAsk(daemonapi.StateIdle) })
	return states
}

var wantStates = []string{"idle", "listening", "waiting", "waiting", "decoding", "typing", "idle", "speaking", "listening", "listening", "idle"}

// TestCtlWatchWaybar: against a daemon, `ctl watch --format waybar` prints
// one Waybar object per change, with a known class each; with the preview
// off no line carries the dictated text; when the daemon stops it prints
// an offline line and exits 1, saying so.
func TestCtlWatchWaybar(t *testing.T) {
	live := livestate.New(livestate.Options{Preview: false})
	live.SetBudget(daemonapi.BudgetStatus{PerHour: 3, Used: 1, NextFreeS: 600, Available: true})
	stop := stubDaemon(t, live)
	w := startWatch(t, "--format", "waybar")
	var tooltips []string
	got := holdSequence(t, live, w, func(line string) string {
		m := parseWaybar(t, line)
		tooltips = append(tooltips, m["tooltip"])
		return m["class"]
	})
	if !slices.Equal(got, wantStates) {
		t.Errorf("classes = %v, want %v", got, wantStates)
	}
	if !strings.Contains(tooltips[0], "2 of 3 left") || !strings.Contains(tooltips[3], "questions waiting for the hold to end: 1") ||
		!strings.Contains(tooltips[len(tooltips)-1], "last dictation: typed\nlast question: answered") {
		t.Errorf("tooltips lack the counters:\n%s", strings.Join(tooltips, "\n---\n"))
	}
	stop()
	off := parseWaybar(t, w.next())
	if off["class"] != "offline" {
		t.Errorf("line after the daemon stopped = %v, want class offline", off)
	}
	if code := w.exit(); code != 1 || !strings.Contains(w.errs.String(), "yazsesd stopped") {
		t.Errorf("ctl watch after the daemon stopped: exit %d, stderr %q; want 1, yazsesd stopped", code, w.errs.String())
	}
	if out := w.out.all.String() + w.errs.String(); strings.Contains(out, "Zebra") {
		t.Errorf("preview off, yet the dictated text was printed:\n%s", out)
	}
}

// TestCtlWatchNoPreviewAnyFormat: with the preview off, no format prints
// the dictated text (the marker test), and each prints the hold's states.
func TestCtlWatchNoPreviewAnyFormat(t *testing.T) {
	for _, format := range []string{"json", "polybar"} {
		t.Run(format, func(t *testing.T) {
			live := livestate.New(livestate.Options{})
			stop := stubDaemon(t, live)
			w := startWatch(t, "--format", format)
			got := holdSequence(t, live, w, func(line string) string {
				if format == "polybar" {
					return line
				}
				var ev daemonapi.WatchEvent
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					t.Fatalf("json line %q: %v", line, err)
				}
				return ev.State
			})
			if !slices.Equal(got, wantStates) {
				t.Errorf("states = %v, want %v", got, wantStates)
			}
			stop()
			w.exit()
			if out := w.out.all.String() + w.errs.String(); strings.Contains(out, "Zebra") {
				t.Errorf("preview off, yet the dictated text was printed:\n%s", out)
			}
		})
	}
}

// TestCtlWatchPreview: with the opt-in, the text shows, escaped for the
// bar: Pango markup for Waybar, doubled % for polybar, as is in JSON.
func TestCtlWatchPreview(t *testing.T) {
	for _, tc := range []struct {
		format   string
		want     string // the end of the line's text while the hold listens
		notWants []string
	}{
		{"waybar", "&lt;/b&gt; &amp; %{A1:xterm:}click%{A}", []string{"<b>", "</b>"}},
		{"polybar", "</b> & %%{A1:xterm:}click%%{A}", []string{" %{"}},
		{"json", marker, nil},
	} {
		t.Run(tc.format, func(t *testing.T) {
			live := livestate.New(livestate.Options{Preview: true})
			stubDaemon(t, live)
			w := startWatch(t, "--format", tc.format)
			w.next()
			live.SetHold(daemonapi.StateListening)
			w.next()
			live.SetPreview(marker)
			line := w.next()
			text := line
			switch tc.format {
			case "waybar":
				m := parseWaybar(t, line)
				if m["class"] != "listening" {
					t.Errorf("class with a preview = %q, want listening", m["class"])
				}
				text = m["text"]
				if !strings.Contains(m["tooltip"], "so far: Zebra-Quokka-7719 &lt;b&gt;") {
					t.Errorf("tooltip with a preview = %q, want the whole text, escaped", m["tooltip"])
				}
			case "json":
				var ev daemonapi.WatchEvent
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					t.Fatal(err)
				}
				text = ev.Preview
			}
			if !strings.HasSuffix(text, tc.want) {
				t.Errorf("text with the preview = %s\nwant it to end with %s", text, tc.want)
			}
			for _, bad := range tc.notWants {
				if strings.Contains(line, bad) {
					t.Errorf("line with the preview = %s: holds %q unescaped", line, bad)
				}
			}
			live.EndHold("typed")
			if line := w.next(); strings.Contains(line, "Zebra") {
				t.Errorf("the preview outlived the hold: %s", line)
			}
			w.cancel()
			if code := w.exit(); code != 0 {
				t.Errorf("ctl watch interrupted: exit %d, want 0", code)
			}
		})
	}
}

// TestCtlWatchNoDaemon: with no daemon, watch says so (an offline line for
// a bar) and exits 1; bad use exits 2.
func TestCtlWatchNoDaemon(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	for format, want := range map[string]string{"waybar": `"class":"offline"`, "polybar": "off\n", "json": ""} {
		out, stderr, code := run("ctl", "watch", "--format", format)
		if code != 1 || !strings.Contains(stderr, "not running") || !strings.Contains(out, want) || format == "json" && out != "" {
			t.Errorf("watch --format %s with no daemon: exit %d, stdout %q, stderr %q; want 1, %q", format, code, out, stderr, want)
		}
	}
	for _, args := range [][]string{{"ctl", "watch", "--format", "xml"}, {"ctl", "watch", "{}"}, {"ctl", "status", "--format", "waybar"}} {
		if _, stderr, code := run(args...); code != 2 {
			t.Errorf("%v: exit %d, %q; want 2", args, code, stderr)
		}
	}
}

// TestWaybarEscapes: text and tooltip are Pango-escaped, on one line.
func TestWaybarEscapes(t *testing.T) {
	ev := daemonapi.WatchEvent{State: "listening", Preview: "a<b>&'\"\nc", Budget: daemonapi.WatchBudget{Available: true, PerHour: 1, Left: 1}}
	m := parseWaybar(t, string(waybarLine(ev)))
	if m["text"] != "a&lt;b&gt;&amp;&#39;&quot; c" {
		t.Errorf("text = %q", m["text"])
	}
	if !strings.Contains(m["tooltip"], "so far: a&lt;b&gt;&amp;&#39;&quot; c") {
		t.Errorf("tooltip = %q", m["tooltip"])
	}
	long := strings.Repeat("x", 100) + "END"
	ev.Preview = long
	if text := parseWaybar(t, string(waybarLine(ev)))["text"]; text != "…"+long[len(long)-textRunes:] {
		t.Errorf("a long preview's text = %q, want its end after …", text)
	}
}

// TestTooltipPieces: the tooltip says how many live pieces were decided
// and typed during a hold, and when typing stopped; none without pieces.
func TestTooltipPieces(t *testing.T) {
	ev := daemonapi.WatchEvent{State: daemonapi.StateListening}
	if got := tooltip(ev); strings.Contains(got, "live text") {
		t.Errorf("tooltip without pieces = %q", got)
	}
	ev.Pieces = daemonapi.WatchPieces{Decided: 3, Typed: 2}
	if got := tooltip(ev); !strings.Contains(got, "\nlive text: 2 of 3 pieces typed") || strings.Contains(got, "stopped") {
		t.Errorf("tooltip = %q, want the pieces' count", got)
	}
	ev.Pieces.Stopped = true
	if got := tooltip(ev); !strings.Contains(got, "live text: 2 of 3 pieces typed, stopped") {
		t.Errorf("tooltip = %q, want the stop said", got)
	}
}
