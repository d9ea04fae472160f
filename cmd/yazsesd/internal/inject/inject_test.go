package inject

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	quietXGB() // before any test's own X connection reads xgb.Logger
	goleak.VerifyTestMain(m)
}

func TestRedact(t *testing.T) {
	tests := []struct{ msg, secret, want string }{
		{"Error: Can't open display: :9", "hello there", "Error: Can't open display: :9"},
		{"cannot type 'hello there'", "hello there", ""},
		{"bad keysym for Grüße", "Grüße, Ünïcödé", ""},
		{"first\nsecond", "", "first"},
		{"", "x", ""},
		{"it failed", "it is", "it failed"}, // two-letter words do not count
	}
	for _, tt := range tests {
		if got := redact(tt.msg, tt.secret); got != tt.want {
			t.Errorf("redact(%q, %q) = %q, want %q", tt.msg, tt.secret, got, tt.want)
		}
	}
	if got := redact(strings.Repeat("é", 300), ""); len(got) > 200 || !strings.HasPrefix(got, "é") || strings.ContainsRune(got, 0xfffd) {
		t.Errorf("redact cut badly: %d bytes", len(got))
	}
}

// A tool that fails and prints the text it was given never puts the text
// into the error.
func TestToolErrorsDoNotShowText(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"wtype: cannot type: $(cat)\" >&2\nexit 3\n"
	if err := os.WriteFile(filepath.Join(dir, "wtype"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + dir + ":/usr/bin:/bin", "WAYLAND_DISPLAY=wayland-test"}
	inj, err := New(Wtype, Options{Environ: env, WtypeDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	err = inj.Type(context.Background(), "confidential medical notes")
	if err == nil {
		t.Fatal("Type succeeded with a failing tool")
	}
	if s := err.Error(); strings.Contains(s, "confidential") || strings.Contains(s, "medical") || !strings.Contains(s, "exit status 3") {
		t.Errorf("error = %q: want the exit status and no text", s)
	}
}

// wtype and ydotool get the text on stdin and fixed arguments: a fake tool
// records both.
func TestArgvAndStdin(t *testing.T) {
	tests := []struct {
		name     string
		env      []string
		opts     Options
		wantArgv string
	}{
		{Wtype, []string{"WAYLAND_DISPLAY=wayland-test"}, Options{}, "-s 200 -"},
		{Wtype, []string{"WAYLAND_DISPLAY=wayland-test"}, Options{WtypeDelay: -1}, "-"},
		{Ydotool, nil, Options{}, "type --file /dev/stdin"},
	}
	for _, tt := range tests {
		t.Run(tt.name+tt.wantArgv, func(t *testing.T) {
			dir := t.TempDir()
			script := "#!/bin/sh\necho \"$@\" > \"$0.argv\"\ncat > \"$0.stdin\"\n"
			tool := filepath.Join(dir, tt.name)
			if err := os.WriteFile(tool, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			tt.opts.Environ = append([]string{"PATH=" + dir + ":/usr/bin:/bin"}, tt.env...)
			inj, err := New(tt.name, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			f, err := inj.Focus(context.Background())
			if err != nil || f != FocusUnknown {
				t.Errorf("Focus = %v, %v; want unknown", f, err)
			}
			if err := inj.Type(context.Background(), "-- --help\n"+unicodeText); err != nil {
				t.Fatalf("Type: %v", err)
			}
			argv, _ := os.ReadFile(tool + ".argv")
			stdin, _ := os.ReadFile(tool + ".stdin")
			if got := strings.TrimSpace(string(argv)); got != tt.wantArgv {
				t.Errorf("argv = %q, want %q", got, tt.wantArgv)
			}
			if got, want := string(stdin), "-- --help "+unicodeText; got != want {
				t.Errorf("stdin = %q, want %q", got, want)
			}
			// RequireFocus: unknown is no target, and the tool never runs.
			os.Remove(tool + ".argv")
			tt.opts.RequireFocus = true
			strict, _ := New(tt.name, tt.opts)
			if err := strict.Type(context.Background(), "x"); !errors.Is(err, ErrNoTarget) {
				t.Errorf("RequireFocus: Type = %v, want ErrNoTarget", err)
			}
			if _, err := os.Stat(tool + ".argv"); err == nil {
				t.Error("RequireFocus: the tool ran")
			}
		})
	}
}

func TestStdout(t *testing.T) {
	var buf bytes.Buffer
	typer, err := Open(Stdout, Options{Stdout: &buf})
	if err != nil {
		t.Fatal(err)
	}
	used, err := typer.Type(context.Background(), "one\ntwo")
	if err != nil || used != Stdout {
		t.Fatalf("Type = %q, %v", used, err)
	}
	if _, err := typer.Type(context.Background(), "\r\n"); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != "one two\n" {
		t.Errorf("stdout got %q", got)
	}
}

func TestOrderAndOpen(t *testing.T) {
	tests := []struct {
		env  []string
		want []string
	}{
		{[]string{"WAYLAND_DISPLAY=wayland-0", "DISPLAY=:0"}, []string{Wayland, Wtype, Ydotool, Clipboard}},
		{[]string{"DISPLAY=:0"}, []string{X11, Xdotool, Clipboard}},
		{[]string{"DISPLAY="}, nil},
		{nil, nil},
	}
	for _, tt := range tests {
		if got := Order(tt.env); !slices.Equal(got, tt.want) {
			t.Errorf("Order(%q) = %v, want %v", tt.env, got, tt.want)
		}
	}
	if _, err := Open(Auto, Options{Environ: []string{"PATH=/bin"}}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Open(auto) without a display = %v, want ErrUnavailable", err)
	}
	if _, err := Open("xdotool --delay 0", Options{}); !errors.Is(err, ErrUnknownBackend) {
		t.Errorf("Open(bad) = %v, want ErrUnknownBackend", err)
	}
	for _, name := range Backends {
		if _, err := New(name, Options{}); err != nil {
			t.Errorf("New(%q): %v", name, err)
		}
	}
	// No display at all: the X11 and Wayland backends are unavailable.
	for _, name := range []string{X11, Xdotool, Wtype, Clipboard} {
		inj, _ := New(name, Options{Environ: []string{"PATH=/usr/bin:/bin"}})
		if err := inj.Type(context.Background(), "x"); !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s without a display: %v, want ErrUnavailable", name, err)
		}
	}
}

func TestIsTerminal(t *testing.T) {
	for _, c := range []string{"xterm", "XTerm", "URxvt", "kitty", "Alacritty", "gnome-terminal-server", "Gnome-terminal", "konsole", "foot", "org.wezfurlong.wezterm", "Xfce4-terminal"} {
		if !IsTerminal(c) {
			t.Errorf("IsTerminal(%q) = false", c)
		}
	}
	for _, c := range []string{"", "firefox", "Navigator", "code", "org.gnome.TextEditor", "emacs"} {
		if IsTerminal(c) {
			t.Errorf("IsTerminal(%q) = true", c)
		}
	}
}

func TestParsers(t *testing.T) {
	if id, ok := propWindow("_NET_ACTIVE_WINDOW(WINDOW): window id # 0x1200007\n"); !ok || id != 0x1200007 {
		t.Errorf("propWindow = %x, %v", id, ok)
	}
	if id, ok := propWindow("_NET_ACTIVE_WINDOW(WINDOW): window id # 0x0\n"); !ok || id != 0 {
		t.Errorf("propWindow(0) = %x, %v", id, ok)
	}
	if _, ok := propWindow("_NET_ACTIVE_WINDOW:  not found.\n"); ok {
		t.Error("propWindow(not found) ok")
	}
	root := parseRoot("_NET_ACTIVE_WINDOW:  not found.\n_NET_SUPPORTING_WM_CHECK(WINDOW): window id # 0x20020b\n" +
		"_NET_SUPPORTED(ATOM) = _NET_SUPPORTING_WM_CHECK, _NET_ACTIVE_WINDOW, _NET_WORKAREA\n")
	if root.activeSet || !root.activeSupported || root.wmCheck != 0x20020b {
		t.Errorf("parseRoot = %+v", root)
	}
	root = parseRoot("_NET_ACTIVE_WINDOW(WINDOW): window id # 0x40000c\n_NET_SUPPORTING_WM_CHECK:  not found.\n_NET_SUPPORTED:  not found.\n")
	if !root.activeSet || root.active != 0x40000c || root.activeSupported {
		t.Errorf("parseRoot = %+v", root)
	}
	if id, ok := rootWindow("\nxwininfo: Window id: 0x50d (the root window) (has no name)\n"); !ok || id != 0x50d {
		t.Errorf("rootWindow = %x, %v", id, ok)
	}
	if got := quoted(`WM_CLASS(STRING) = "xterm", "XTerm"`); !slices.Equal(got, []string{"xterm", "XTerm"}) {
		t.Errorf("quoted = %q", got)
	}
	pke := []byte("keycode   8 =\nkeycode   9 = Escape NoSymbol Escape\nkeycode  93 =\nkeycode 255 =\n")
	if got := spareKeycodes(pke); !slices.Equal(got, []int{93, 255}) {
		t.Errorf("spareKeycodes = %v", got)
	}
}

func TestChunks(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want []string
	}{
		{"abc", 2, []string{"abc"}},
		{"äöü", 2, []string{"äö", "ü"}},
		{"a ä b ä ö c ü", 2, []string{"a ä b ä ö c ", "ü"}},
		{"ääää", 1, []string{"ääää"}},
	}
	for _, tt := range tests {
		got := chunks(tt.s, tt.n)
		if !slices.Equal(got, tt.want) {
			t.Errorf("chunks(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
		if strings.Join(got, "") != tt.s {
			t.Errorf("chunks(%q) lost text", tt.s)
		}
	}
}

func TestSwayTree(t *testing.T) {
	dir := t.TempDir()
	tree := `{"type":"root","focused":false,"nodes":[{"type":"output","nodes":[{"type":"workspace","focused":%s,"nodes":[
	  {"type":"con","focused":%s,"app_id":"foot","nodes":[]}],"floating_nodes":[
	  {"type":"floating_con","focused":%s,"app_id":null,"window_properties":{"class":"Firefox"},"nodes":[]}]}]}]}`
	tests := []struct {
		ws, con, float string
		want           Focus
		app            string
	}{
		{"true", "false", "false", FocusNone, ""},
		{"false", "true", "false", FocusWindow, "foot"},
		{"false", "false", "true", FocusWindow, "Firefox"},
	}
	for _, tt := range tests {
		body := tree
		for _, v := range []string{tt.ws, tt.con, tt.float} {
			body = strings.Replace(body, "%s", v, 1)
		}
		script := "#!/bin/sh\ncat <<'JSON'\n" + body + "\nJSON\n"
		if err := os.WriteFile(filepath.Join(dir, "swaymsg"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		env := []string{"PATH=" + dir + ":/usr/bin:/bin", "WAYLAND_DISPLAY=w", "SWAYSOCK=/nonexistent"}
		got, err := waylandFocus(context.Background(), call{env: env})
		if err != nil || got.focus != tt.want || got.appID != tt.app {
			t.Errorf("waylandFocus = %+v, %v; want %v %q", got, err, tt.want, tt.app)
		}
	}
}

// chunks cuts s into consecutive pieces with at most n distinct non-ASCII
// runes each (n >= 1).
func chunks(s string, n int) []string {
	var out []string
	seen := map[rune]bool{}
	start := 0
	for i, r := range s {
		if r > 0x7e && !seen[r] {
			if len(seen) == n {
				out = append(out, s[start:i])
				start = i
				clear(seen)
			}
			seen[r] = true
		}
	}
	return append(out, s[start:])
}
