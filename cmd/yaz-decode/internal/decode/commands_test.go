package decode

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/yazses/yazses/cmd/yaz-decode/internal/decodetest"
	"github.com/yazses/yazses/lib/devices"
	"github.com/yazses/yazses/lib/frame"
)

// TestCommandsRunAsOldFlags: each command and the old flag that stands
// for it run the same: the same exit and the same answer on stdout for
// the same input (serve's decode times and the devices' free memory
// aside), as the daemon and scripts see them.
func TestCommandsRunAsOldFlags(t *testing.T) {
	dir := t.TempDir()
	model := decodetest.MiniModel(t, dir)
	var frames bytes.Buffer
	w := frame.NewWriter(&frames)
	w.Audio(decodetest.Speech(2 * time.Second))
	w.End()
	w.Audio(decodetest.Silence(time.Second))
	w.End()
	served := func(stdout string) []map[string]any {
		var out []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
			var r map[string]any
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("serve answered %q: %v", line, err)
			}
			delete(r, "decode_ms")
			out = append(out, r)
		}
		return out
	}
	listed := func(stdout string) devices.List {
		var l devices.List
		if err := json.Unmarshal([]byte(stdout), &l); err != nil {
			t.Fatalf("devices answered %q: %v", stdout, err)
		}
		for i := range l.Devices {
			l.Devices[i].FreeMiB = 0
		}
		if l.Chosen != nil {
			l.Chosen.FreeMiB = 0
		}
		return l
	}
	for _, tc := range []struct {
		name     string
		old, cmd []string
		stdin    []byte
		norm     func(string) any
	}{
		{"serve", []string{"--serve", "-m", model, "-t", "2", "--vad", "energy"}, []string{"serve", "-m", model, "-t", "2", "--vad", "energy"},
			frames.Bytes(), func(s string) any { return served(s) }},
		{"devices", []string{"--list-devices", "-f", "json", "--device", "cpu", "-m", model}, []string{"devices", "-f", "json", "--device", "cpu", "-m", model},
			nil, func(s string) any { return listed(s) }},
		{"devices/config check", []string{"--serve", "--list-devices", "-f", "json", "--device=gpu:99", "--model", model},
			[]string{"devices", "-f", "json", "--device=gpu:99", "--model", model}, nil, func(s string) any { return listed(s) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oldOut, oldErr, oldCode := runMain(tc.stdin, tc.old...)
			newOut, newErr, newCode := runMain(tc.stdin, tc.cmd...)
			if oldCode != newCode || oldOut == "" {
				t.Fatalf("%q: exit %d, stdout %q, stderr %q; %q: exit %d, stderr %q", tc.old, oldCode, oldOut, oldErr, tc.cmd, newCode, newErr)
			}
			if d := cmp.Diff(tc.norm(oldOut), tc.norm(newOut)); d != "" {
				t.Errorf("%q and %q answer differently (-old +new):\n%s", tc.old, tc.cmd, d)
			}
		})
	}
}

// TestVADStreamCommand: vad-stream, the command, reports what --vad-stream
// reports, bit for bit.
func TestVADStreamCommand(t *testing.T) {
	model := sileroModel(t)
	jfk := vadAudio(t)["jfk"]
	var got [2][]float32
	for i, spelling := range []string{"--vad-stream", "vad-stream"} {
		c := startChild(t, spelling, "--vad-model", model, "--vad-threshold", "0.3")
		sent := c.sendIn(jfk, 4096)
		got[i] = c.use(t)
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
		if code := c.wait(t); code != 0 {
			t.Fatalf("%s: exit %d, stderr %s", spelling, code, c.stderr.String())
		}
	}
	if len(got[0]) == 0 {
		t.Fatal("--vad-stream reported no probabilities")
	}
	if d := cmp.Diff(got[0], got[1], sameBits); d != "" {
		t.Errorf("vad-stream differs from --vad-stream (-old +new):\n%s", d)
	}
}
