package mcpserve

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yazses/yazses/lib/daemonapi"
	"github.com/yazses/yazses/lib/jsonrpc"
	"github.com/yazses/yazses/lib/safesocket"
)

// TestNoDaemonCauseLoggedOnce: when transcribe decodes locally and ask_human
// answers unavailable because no daemon was found, the log says why at
// INFO (where the socket was looked for and what was refused), once per
// cause and consequence, not on every call; a daemon found again and lost
// again is logged again.
func TestNoDaemonCauseLoggedOnce(t *testing.T) {
	runtime := noDaemon(t)
	opt := baseOptions(t)
	opt.Config.MCP.AskHuman = true
	opt.Decoder = fakeDecoder(t, serveFake)
	s, logs := startSession(t, opt)
	s.initialize("2025-11-25")
	wav := wavFile(t, t.TempDir(), "a.wav")
	for range 3 {
		if r := s.tool("transcribe", map[string]any{"path": wav}); r.IsError {
			t.Fatalf("transcribe: %s", r.text())
		}
		if r := s.tool("ask_human", map[string]any{"question": "Ship it?"}); !strings.Contains(string(r.StructuredContent), "daemon_not_running") {
			t.Fatalf("ask_human = %s", r.StructuredContent)
		}
	}
	count := func(msg string) (n int, line string) {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `msg="`+msg+`"`) {
				n++
				line = l
			}
		}
		return n, line
	}
	for _, msg := range []string{"no daemon found: decoding locally", "no daemon found: ask_human unavailable"} {
		n, line := count(msg)
		if n != 1 {
			t.Fatalf("%q logged %d times in 3 calls, want once:\n%s", msg, n, logs.String())
		}
		if !strings.HasPrefix(line, "time=") || !strings.Contains(line, "level=INFO") {
			t.Errorf("%q not at INFO: %s", msg, line)
		}
		if want := filepath.Join(runtime, safesocket.DirName); !strings.Contains(line, want) {
			t.Errorf("cause does not name the folder looked for (%s): %s", want, line)
		}
	}

	// Another cause is logged, once: XDG_RUNTIME_DIR not absolute.
	t.Setenv("XDG_RUNTIME_DIR", "relative/run")
	for range 2 {
		s.tool("transcribe", map[string]any{"path": wav})
	}
	if n, line := count("no daemon found: decoding locally"); n != 2 || !strings.Contains(line, "is not an absolute path") {
		t.Errorf("after the cause changed: logged %d times, last %s; want 2, naming the relative path", n, line)
	}
	// A daemon found resets the note; losing it again is logged again.
	t.Run("daemon back", func(t *testing.T) {
		fakeDaemon(t, map[string]jsonrpc.Handler{daemonapi.MethodTranscribe: func(context.Context, json.RawMessage) (any, error) {
			return daemonapi.TranscribeResult{Text: "hi", Segments: []daemonapi.Segment{}, AudioMs: 1000}, nil
		}})
		if r := s.tool("transcribe", map[string]any{"path": wav}); r.IsError || r.text() != "hi" {
			t.Fatalf("transcribe on the daemon = %q", r.text())
		}
	})
	s.tool("transcribe", map[string]any{"path": wav})
	if n, _ := count("no daemon found: decoding locally"); n != 3 {
		t.Errorf("after a daemon came and went: logged %d times, want 3", n)
	}
	if strings.Contains(logs.String(), "Ship it") || strings.Contains(logs.String(), wav) || strings.Contains(logs.String(), "hello there") {
		t.Errorf("a question, transcript or audio path reached the log:\n%s", logs.String())
	}
}

// TestRefusedDaemonFolderLogged: a socket folder that fails the checks
// (writable by others) is not used; the log says so once, at WARN.
func TestRefusedDaemonFolderLogged(t *testing.T) {
	runtime := noDaemon(t)
	dir := filepath.Join(runtime, safesocket.DirName)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	opt := baseOptions(t)
	opt.Decoder = fakeDecoder(t, serveFake)
	s, logs := startSession(t, opt)
	s.initialize("2025-11-25")
	wav := wavFile(t, t.TempDir(), "a.wav")
	for range 2 {
		if r := s.tool("transcribe", map[string]any{"path": wav}); r.IsError {
			t.Fatalf("transcribe: %s", r.text())
		}
	}
	var lines []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `msg="daemon refused: decoding locally"`) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], dir) || !strings.Contains(lines[0], "mode 0777") {
		t.Errorf("log lines about the refused folder: %q, want one WARN naming %s and its mode", lines, dir)
	}
}
