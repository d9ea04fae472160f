package app

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/yazses/yazses/lib/config"
)

func TestParseCtl(t *testing.T) {
	tests := []struct {
		words  []string
		method string
		params string
		bad    bool
	}{
		{words: []string{"status"}, method: "status"},
		{words: []string{"hold", "start"}, method: "hold.start"},
		{words: []string{"hold", "toggle"}, method: "hold.toggle"},
		{words: []string{"ask_human", `{"question":"hi"}`}, method: "ask_human", params: `{"question":"hi"}`},
		{words: []string{"hold"}, bad: true},
		{words: []string{"hold", "sideways"}, bad: true},
		{words: []string{"budget.set"}, bad: true},
		{words: []string{"ask_human", "not json"}, bad: true},
		{words: []string{"audit", "{}", "{}"}, bad: true},
		{words: nil, bad: true},
	}
	for _, tt := range tests {
		m, p, err := parseCtl(tt.words)
		if (err != nil) != tt.bad {
			t.Errorf("parseCtl(%q) error = %v, want error %v", tt.words, err, tt.bad)
			continue
		}
		if !tt.bad && (m != tt.method || string(p) != tt.params) {
			t.Errorf("parseCtl(%q) = %q, %s; want %q, %s", tt.words, m, p, tt.method, tt.params)
		}
	}
}

func run(args ...string) (stdout, stderr string, code int) {
	var o, e bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(""), &o, &e, "test")
	return o.String(), e.String(), code
}

func TestConfigDefaultParses(t *testing.T) {
	out, _, code := run("config", "default")
	if code != 0 {
		t.Fatalf("config default: exit %d", code)
	}
	if _, err := config.Parse([]byte(out), "default"); err != nil {
		t.Errorf("the printed default does not parse: %v", err)
	}
}

func TestUsageAndErrors(t *testing.T) {
	if _, _, code := run("--no-such-flag"); code != 2 {
		t.Errorf("bad flag: exit %d, want 2", code)
	}
	if _, stderr, code := run("ctl", "budget.set"); code != 2 || !strings.Contains(stderr, "unknown method") {
		t.Errorf("unknown method: exit %d, %q; want 2 and the method list", code, stderr)
	}
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	if _, stderr, code := run("status"); code != 1 || !strings.Contains(stderr, "not running") {
		t.Errorf("status with no daemon: exit %d, %q; want 1, not running", code, stderr)
	}
	out, _, code := run("--help")
	if code != 0 || !strings.Contains(out, "ctl") || !strings.Contains(out, "run") {
		t.Errorf("--help: exit %d:\n%s", code, out)
	}
}

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	bad := dir + "/bad.toml"
	writeFile(t, bad, "[budget]\nask_human_per_hour = -1\n")
	if _, stderr, code := run("config", "check", bad); code != 1 || !strings.Contains(stderr, "bad.toml:2: budget.ask_human_per_hour") {
		t.Errorf("config check of a bad file: exit %d, %q", code, stderr)
	}
	good := dir + "/good.toml"
	writeFile(t, good, "[mcp]\nask_human = true\n")
	if out, _, code := run("config", "check", good); code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("config check of a good file: exit %d, %q", code, out)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}
