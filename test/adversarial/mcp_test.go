package adversarial

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testmcp"
)

// TestMCPQuestionRules: yaz-mcp checks a question the
// way the daemon does (daemonapi.CheckQuestion): one of zero-width
// characters only is an invalid argument; a short question padded with
// 600 of them is within the cap and goes on to the daemon (none runs
// here: unavailable).
func TestMCPQuestionRules(t *testing.T) {
	home := t.TempDir()
	cfg := filepath.Join(home, ".config", "yazses", "config.toml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("[mcp]\nask_human = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runtimeDir := filepath.Join(home, "run") // empty: no daemon
	if err := os.Mkdir(runtimeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	r := testmcp.Start(t, bin("yaz-mcp"), []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_RUNTIME_DIR=" + runtimeDir})
	r.Initialize("2025-11-25")
	questions := []string{
		"\u200b",
		"\u200b\u2060\ufeff\u200d",
		"Is it" + strings.Repeat("\u200b", 600) + " ready?",
	}
	// All three in flight at once; stdin stays open until every answer
	// is in (mcp-go cancels on EOF).
	var calls []chan testmcp.Message
	for _, q := range questions {
		uq, err := strconv.Unquote(`"` + q + `"`)
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, r.CallTool("ask_human", map[string]any{"question": uq, "timeout_s": 5}))
	}
	got := make([]string, len(calls))
	for i, ch := range calls {
		_, got[i] = r.ToolResult("ask_human", r.Wait("ask_human", ch))
	}
	r.Close()
	for _, i := range []int{0, 1} {
		if !strings.HasPrefix(got[i], "invalid_argument:") {
			t.Errorf("question %s = %q; want invalid_argument", questions[i], got[i])
		}
	}
	if !strings.HasPrefix(got[2], "unavailable (daemon_not_running)") {
		t.Errorf("a short question padded with 600 zero-width spaces = %q; want it passed on (unavailable: no daemon)", got[2])
	}
}
