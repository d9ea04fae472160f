package versions

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/yazses/yazses/internal/testwait"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// script writes an executable shell script named name that runs body.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestQuery: each program's first line of --version, without its own
// name in front, cut at 100 bytes; a program that fails, prints nothing
// or is missing has "".
func TestQuery(t *testing.T) {
	dir := t.TempDir()
	progs := map[string]string{
		"decode":  script(t, dir, "yaz-decode", `echo "yaz-decode 0.3.0"; echo "whisper.cpp 1.9.1"`),
		"speak":   script(t, dir, "speak-tool", `echo "yaz-speak 0.3.0"`), // another program's name: kept
		"gate":    script(t, dir, "yaz-gate", `echo "yaz-gate 0.3.0"; exit 1`),
		"capture": script(t, dir, "yaz-capture", `:`),
		"vad":     filepath.Join(dir, "missing"),
		"long":    script(t, dir, "long", `echo `+strings.Repeat("v", 150)),
	}
	vs := New(progs)
	if got := vs.Get("decode"); got != "" {
		t.Errorf("Get before Query = %q, want empty", got)
	}
	vs.Query(context.Background())
	for name, want := range map[string]string{
		"decode":  "0.3.0",
		"speak":   "yaz-speak 0.3.0",
		"gate":    "",
		"capture": "",
		"vad":     "",
		"long":    strings.Repeat("v", 100),
		"unknown": "",
	} {
		if got := vs.Get(name); got != want {
			t.Errorf("Get(%s) = %q, want %q", name, got, want)
		}
	}
}

// TestQueryEndsWithCtx: a program that never answers does not keep Query
// (nor its process) once ctx ends.
func TestQueryEndsWithCtx(t *testing.T) {
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	w, err := testwait.WatchFile(started)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	vs := New(map[string]string{"decode": script(t, dir, "yaz-decode", `echo $$ > "$0.pid"; mv "$0.pid" `+started+`; exec sleep 1000`)})
	done := make(chan struct{})
	go func() { defer close(done); vs.Query(ctx) }()
	if err := testwait.Until(testwait.Context(t), func() bool { _, err := os.Stat(started); return err == nil }, w); err != nil {
		t.Fatalf("the program did not start: %v", err)
	}
	b, err := os.ReadFile(started)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	exited, err := testwait.Exited(pid)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	testwait.Closed(t, done, "Query to return once ctx ended")
	testwait.Closed(t, exited, "the program to be killed")
	if got := vs.Get("decode"); got != "" {
		t.Errorf("Get = %q, want empty", got)
	}
}
