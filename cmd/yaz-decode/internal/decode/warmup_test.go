package decode

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/decodetest"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/frame"
)

// TestServeWarmsUpBeforeReady: under a supervisor, serve runs the model
// once before it says it is ready, so the first utterance after a start
// does not set whisper.cpp up. The log and the readiness line go down one pipe, in the order they
// were written: the warm-up record and the first state's compute buffers
// (whisper.cpp logs them for the first state of a process only) come
// before the readiness line, and nothing is set up after it, the first
// utterance's decode included.
func TestServeWarmsUpBeforeReady(t *testing.T) {
	dir := t.TempDir()
	model := decodetest.MiniModel(t, dir)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var in bytes.Buffer
	fw := frame.NewWriter(&in)
	fw.Audio(decodetest.Speech(time.Second))
	fw.End()
	frames := bytes.Clone(in.Bytes())
	a, _ := json.Marshal([]string{"serve", "-m", model, "-t", "2", "--device", "cpu", "--no-vad-gate", "--vad", "energy",
		"--log-format", "json", "--log-level", "debug"})
	cmd := exec.CommandContext(testwait.Context(t), os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+string(a), "YAZ_READY_FD=3")
	cmd.Stdin = &in
	cmd.Stderr = w
	cmd.ExtraFiles = []*os.File{w}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	err = cmd.Run()
	w.Close()
	if err != nil {
		t.Fatalf("yaz-decode serve: %v", err)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	ready := -1
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if _, ok := m["device"].(map[string]any); ok && m["msg"] == nil {
			ready = len(lines)
		}
		lines = append(lines, m)
	}
	if ready < 0 {
		t.Fatalf("no readiness line among %d", len(lines))
	}
	warm, buffers, utt := -1, -1, -1
	for i, m := range lines {
		msg, _ := m["msg"].(string)
		switch {
		case msg == "model warmed up":
			warm = i
			if _, ok := m["ms"].(float64); !ok {
				t.Errorf("warm-up record %v: no ms", m)
			}
		case strings.HasPrefix(msg, "whisper_init_state: compute buffer"):
			buffers = i
			if i > ready {
				t.Errorf("whisper.cpp set a state up after the readiness line: %q", msg)
			}
		case msg == "utterance":
			utt = i
		}
	}
	if warm < 0 || warm > ready {
		t.Errorf("warm-up record at line %d, readiness line at %d: want the warm-up before it", warm, ready)
	}
	if buffers < 0 || buffers > ready {
		t.Errorf("compute buffers allocated at line %d, readiness line at %d: want them before it", buffers, ready)
	}
	if utt < ready {
		t.Errorf("utterance record at line %d, readiness line at %d: want it after", utt, ready)
	}
	if !strings.Contains(stdout.String(), `"utt":1`) {
		t.Errorf("stdout %q: want the utterance's result", stdout.String())
	}

	// Without a supervisor waiting for its readiness (yaz-mcp's decoder of
	// one file) there is nothing to warm up for.
	out, stderr, code := runMain(frames, "serve", "-m", model, "-t", "2", "--device", "cpu", "--no-vad-gate", "--vad", "energy")
	if code != 0 || !strings.Contains(out, `"utt":1`) || strings.Contains(stderr, "warmed up") {
		t.Errorf("serve without YAZ_READY_FD: exit %d, stdout %q, stderr %q; want the result and no warm-up", code, out, stderr)
	}
}
