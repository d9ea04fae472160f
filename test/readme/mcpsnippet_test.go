package readme

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMCPSnippetsUseAbsolutePaths: an MCP host started
// without ~/.local/bin in its PATH (a desktop launcher, a systemd user
// manager) fails with "spawn yaz-mcp ENOENT" on a bare `yaz-mcp`, so no
// host snippet in the README or docs/trust-boundary.md names it bare: a
// JSON or TOML "command" is an absolute path, and a shell line names it
// by a path (~/.local/bin/yaz-mcp, which the shell expands).
func TestMCPSnippetsUseAbsolutePaths(t *testing.T) {
	bare := []*regexp.Regexp{
		regexp.MustCompile(`"command"\s*:\s*"yaz-mcp"`),
		regexp.MustCompile(`command\s*=\s*"yaz-mcp"`),
		regexp.MustCompile(`--\s+yaz-mcp\b`),
		regexp.MustCompile(`--cli\s+yaz-mcp\b`),
	}
	command := regexp.MustCompile(`"command"\s*:\s*"([^"]*)"|command\s*=\s*"([^"]*)"`)
	for _, doc := range []string{"README.md", "docs/trust-boundary.md"} {
		b, err := os.ReadFile(filepath.Join(world.root, doc))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, re := range bare {
				if re.MatchString(line) {
					t.Errorf("%s:%d names yaz-mcp bare (spawn ENOENT for a host without ~/.local/bin in PATH): %s", doc, i+1, line)
				}
			}
			for _, m := range command.FindAllStringSubmatch(line, -1) {
				if c := m[1] + m[2]; strings.HasSuffix(c, "yaz-mcp") && !filepath.IsAbs(c) {
					t.Errorf("%s:%d: command %q is not an absolute path (a host does not expand ~): %s", doc, i+1, c, line)
				}
			}
		}
	}
}

// TestInstallPrintsMCPSnippets: make install ends by
// printing the host snippets with this installation's absolute path of
// yaz-mcp, ready to paste: the Claude Code command line, and JSON that
// parses for Cursor and Claude Desktop (mcpServers) and for VS Code
// (servers).
func TestInstallPrintsMCPSnippets(t *testing.T) {
	inst := install(t)
	dest := t.TempDir()
	out, err := run(buildContext(t), world.root, makeEnv(), "make", "-s", "install", "DESTDIR="+dest, "PREFIX=/opt/yazses", "BIN="+inst.build,
		"UNITDIR=/etc/systemd/user", "CONFDIR=/etc/yazses")
	if err != nil {
		t.Fatal(err)
	}
	const mcp = "/opt/yazses/bin/yaz-mcp"
	if !strings.Contains(out, "claude mcp add yazses -- "+mcp+"\n") {
		t.Errorf("make install does not print the Claude Code line for %s:\n%s", mcp, out)
	}
	var jsons int
	for _, line := range strings.Split(out, "\n") {
		i := strings.Index(line, "{")
		if i < 0 {
			continue
		}
		var v map[string]map[string]struct {
			Command string `json:"command"`
		}
		if err := json.Unmarshal([]byte(line[i:]), &v); err != nil {
			t.Errorf("make install printed JSON that does not parse (%v): %s", err, line)
			continue
		}
		for top, servers := range v {
			if s, ok := servers["yazses"]; !ok || s.Command != mcp {
				t.Errorf("%s snippet %s: want yazses with command %s", top, line[i:], mcp)
			}
			jsons++
		}
	}
	if jsons < 2 {
		t.Errorf("make install printed %d JSON snippets, want mcpServers (Cursor, Claude Desktop) and servers (VS Code):\n%s", jsons, out)
	}
	if strings.Contains(out, dest) {
		t.Errorf("the snippets name the staging folder %s, not the final path:\n%s", dest, out)
	}
}
