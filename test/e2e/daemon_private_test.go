package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/lib/daemonapi"
)

// TestPromptNeverOnACommandLine: decode.prompt and dictation.prompt are
// private (the docs say so), and a command line is not: every local user
// reads /proc/PID/cmdline (ps). No process of the daemon carries either
// prompt in its argv, yet the decoder still gets decode.prompt with each
// utterance (its log counts the prompt's characters, never the text).
func TestPromptNeverOnACommandLine(t *testing.T) {
	t.Parallel()
	const decodePrompt = "Zanzibarqux Oyelaran-Whitfield"
	const dictationPrompt = "Quillfeather Mbeki-Sandoval"
	d := startDaemon(t, baseConfig().
		With("decode.prompt", q(decodePrompt)).
		With("dictation.prompt", q(dictationPrompt)))
	c := d.Client()
	defer c.Close()
	var r daemonapi.TranscribeResult
	if err := c.Call(t.Context(), daemonapi.MethodTranscribe, daemonapi.TranscribeParams{Path: world.jfk}, &r); err != nil {
		t.Fatal(err)
	}
	for _, pid := range d.Processes() {
		cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err != nil {
			continue // ended meanwhile
		}
		for _, secret := range []string{decodePrompt, dictationPrompt} {
			if bytes.Contains(cmdline, []byte(secret)) {
				t.Errorf("pid %d's command line, readable by every local user, holds a private prompt: %q",
					pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
			}
		}
	}
	// The decoder's log line is relayed through its stderr, after its
	// answer on stdout: wait for it.
	var utt map[string]any
	d.WaitFor(10*time.Second, "the decoder's utterance record", func() bool {
		for _, m := range d.LogRecords() {
			if m["child"] == "decode" && m["msg"] == "utterance" {
				utt = m
				return true
			}
		}
		return false
	})
	if n, _ := utt["prompt_chars"].(float64); int(n) != len([]rune(decodePrompt)) {
		t.Errorf("the decoder decoded the file with a prompt of %v characters, want decode.prompt's %d", utt["prompt_chars"], len([]rune(decodePrompt)))
	}
	for _, line := range bytes.Split([]byte(d.Log.String()), []byte("\n")) {
		if bytes.Contains(line, []byte(decodePrompt)) || bytes.Contains(line, []byte(dictationPrompt)) {
			t.Errorf("a log line holds a private prompt: %.200q", line)
		}
	}
}

// TestStdoutInjectUnderJournalWarns: dictation.inject = "stdout" writes
// what was said to the daemon's stdout; under systemd (JOURNAL_STREAM set)
// that is the journal, so the daemon says so at start.
func TestStdoutInjectUnderJournalWarns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  []string
		warn bool
	}{{[]string{"JOURNAL_STREAM=8:123456"}, true}, {nil, false}} {
		d := startDaemon(t, baseConfig().With("dictation.inject", q("stdout")), tc.env...)
		d.WaitRunning("gate", "speak", "decode")
		warned := false
		for _, m := range d.LogRecords() {
			if msg, _ := m["msg"].(string); m["level"] == "WARN" && strings.Contains(msg, "journal") {
				warned = true
			}
		}
		if warned != tc.warn {
			t.Errorf("env %v: warned about the journal %v, want %v", tc.env, warned, tc.warn)
		}
		d.Stop()
	}
}
