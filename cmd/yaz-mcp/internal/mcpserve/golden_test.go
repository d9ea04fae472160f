package mcpserve

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden MCP sessions in testdata/sessions")

// TestGoldenSessions replays the JSON-RPC lines of each
// testdata/sessions/*.txtar ("in", one message per line, $DIR standing for
// a folder of fixtures) and compares the server's answers, in request
// order, with "out". A file "ask_human" in the archive turns the opt-in on.
// go test -run GoldenSessions -update rewrites "out".
func TestGoldenSessions(t *testing.T) {
	files, _ := filepath.Glob("testdata/sessions/*.txtar")
	if len(files) == 0 {
		t.Fatal("no golden sessions")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			noDaemon(t)
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var in []byte
			opt := baseOptions(t)
			for _, f := range ar.Files {
				switch f.Name {
				case "in":
					in = f.Data
				case "ask_human":
					opt.Config.MCP.AskHuman = true
				}
			}
			dir := fixtures(t)
			s, _ := startSession(t, opt)
			var got bytes.Buffer
			for _, line := range strings.Split(strings.TrimRight(string(in), "\n"), "\n") {
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				line = strings.ReplaceAll(line, "$DIR", dir)
				got.WriteString(replay(t, s, line))
			}
			if strings.Contains(got.String(), dir) {
				t.Errorf("a path reached the client:\n%s", got.String())
			}
			var want []byte
			for _, f := range ar.Files {
				if f.Name == "out" {
					want = f.Data
				}
			}
			if *update {
				var files []txtar.File
				for _, f := range ar.Files {
					if f.Name != "out" {
						files = append(files, f)
					}
				}
				ar.Files = append(files, txtar.File{Name: "out", Data: got.Bytes()})
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("session differs (go test -run GoldenSessions -update to accept):\ngot:\n%s\nwant:\n%s", got.Bytes(), want)
			}
		})
	}
}

// replay sends one line and returns the answer it gets, canonical JSON on
// one line ("" for a notification, which gets none).
func replay(t *testing.T, s *session, line string) string {
	t.Helper()
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	var wait chan message
	if err := json.Unmarshal([]byte(line), &msg); err != nil {
		wait = s.nulls
	} else if len(msg.ID) > 0 && string(msg.ID) != "null" {
		wait = make(chan message, 1)
		s.mu.Lock()
		s.waits[string(msg.ID)] = wait
		s.mu.Unlock()
	}
	s.send(line)
	if wait == nil {
		// A notification takes effect before the next line is read:
		// mcp-go's stdio server handles notifications on its read loop
		// (requests go to goroutines of their own, and replay waits for
		// each one's answer).
		return ""
	}
	m := s.wait(wait, "the answer to "+line)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	json.Unmarshal(b, &v)
	out, _ := json.Marshal(canonical(v))
	return string(out) + "\n"
}

// canonical drops empty fields of a decoded message.
func canonical(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for k, x := range m {
		if x == nil || x == "" {
			continue
		}
		out[k] = canonical(x)
	}
	return out
}

// fixtures makes the folder $DIR stands for: a missing name, an empty file,
// a text file, a WAV file, a sub-folder.
func fixtures(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "empty.wav"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not audio\n"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	wavFile(t, dir, "ok.wav")
	return dir
}
