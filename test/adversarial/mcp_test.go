package adversarial

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMCPQuestionRules (issue 11, item 8): yaz-mcp checks a question the
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
	cmd := exec.Command(bin("yaz-mcp"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_RUNTIME_DIR=" + runtimeDir}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()

	questions := map[int]string{
		3: `\u200b`,
		4: `\u200b\u2060\ufeff\u200d`,
		5: "Is it" + strings.Repeat(`\u200b`, 600) + " ready?",
	}
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"adversarial","version":"1"}}}`)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for id, q := range questions {
		fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"ask_human","arguments":{"question":"%s","timeout_s":5}}}`+"\n", id, q)
	}
	// Keep stdin open until every answer is in (mcp-go cancels on EOF).
	got := map[int]string{}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(time.Minute)
	for len(got) < len(questions) {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("yaz-mcp ended with answers to %d of %d calls", len(got), len(questions))
			}
			var resp struct {
				ID     int `json:"id"`
				Result struct {
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"result"`
			}
			if json.Unmarshal([]byte(line), &resp) != nil || questions[resp.ID] == "" || len(resp.Result.Content) == 0 {
				continue
			}
			got[resp.ID] = resp.Result.Content[0].Text
		case <-timeout:
			t.Fatalf("yaz-mcp answered %d of %d calls within a minute: %v", len(got), len(questions), got)
		}
	}
	for _, id := range []int{3, 4} {
		if !strings.HasPrefix(got[id], "invalid_argument:") {
			t.Errorf("question %s = %q; want invalid_argument", questions[id], got[id])
		}
	}
	if !strings.HasPrefix(got[5], "unavailable (daemon_not_running)") {
		t.Errorf("a short question padded with 600 zero-width spaces = %q; want it passed on (unavailable: no daemon)", got[5])
	}
}
