package dictation

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/cmd/yazsesd/internal/hold"
	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/config"
)

// script writes an executable shell script into a test folder.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "filter")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

const said = "secret words said"

// TestPostProcess runs real filters: the output of one that works is
// typed (under the transcript rule); a failure, a timeout, no output, too
// much or non-UTF-8 output types the text as it was, and the log says why
// without the text or the filter's stderr.
func TestPostProcess(t *testing.T) {
	cases := []struct {
		name, body string
		want       string
		reason     string
	}{
		{"uppercase", `tr a-z A-Z`, "SECRET WORDS SAID", ""},
		{"output trimmed, line breaks spaced", `printf '  one\ntwo\n\n'`, "one two", ""},
		{"fails", `cat >&2; echo partial; exit 3`, said, PostExitStatus},
		{"killed by a signal", `kill -9 $$`, said, PostSignal},
		{"prints nothing", `cat >/dev/null`, said, PostEmpty},
		{"prints only spaces", `echo "   "`, said, PostEmpty},
		{"too much", `head -c 70000 /dev/zero | tr '\0' a`, said, PostTooLong},
		{"not UTF-8", `printf '\377\376'`, said, PostInvalidUTF8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			p := PostProcess{Argv: []string{script(t, tc.body)}, Timeout: 30 * time.Second}
			if got := p.Apply(context.Background(), log, said); got != tc.want {
				t.Errorf("Apply = %q, want %q", got, tc.want)
			}
			checkLog(t, logs.String(), tc.reason)
		})
	}
}

func checkLog(t *testing.T, logs, reason string) {
	t.Helper()
	if strings.Contains(logs, "secret") || strings.Contains(logs, "SECRET") {
		t.Errorf("the log carries the text: %s", logs)
	}
	if reason == "" {
		if strings.Contains(logs, "reason=") {
			t.Errorf("a run that worked logged a failure: %s", logs)
		}
		return
	}
	if !strings.Contains(logs, "reason="+reason) || !strings.Contains(logs, "stderr_bytes=") {
		t.Errorf("log %q: want reason=%s and stderr_bytes", logs, reason)
	}
}

// TestPostProcessTimeout: a filter that outlives its bound is killed with
// every process it started (its process group), and the text is typed as
// it was.
func TestPostProcessTimeout(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The script's own child holds stdout open and sleeps: only killing
	// the group ends it.
	p := PostProcess{Argv: []string{script(t, `sleep 600 & echo $! > "$1"; wait`), pidFile}, Timeout: 300 * time.Millisecond}
	var logs bytes.Buffer
	got := p.Apply(context.Background(), slog.New(slog.NewTextHandler(&logs, nil)), said)
	if got != said {
		t.Errorf("Apply = %q, want the text as it was", got)
	}
	checkLog(t, logs.String(), PostTimeout)
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the filter did not start its child: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	exited, err := testwait.Exited(pid)
	if err != nil {
		return // already gone and reaped: no pidfd to open
	}
	testwait.Closed(t, exited, "the filter's child, killed with its group")
}

// TestPostProcessEnv: the filter gets the minimal environment, not the
// daemon's session (bus, display, anything else).
func TestPostProcessEnv(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nowhere")
	t.Setenv("DISPLAY", ":99")
	t.Setenv("LANG", "C.UTF-8")
	p := PostProcess{Argv: []string{script(t, `cat >/dev/null; env | sort | tr '\n' ' '`)}, Timeout: 30 * time.Second}
	got := p.Apply(context.Background(), slog.New(slog.DiscardHandler), said)
	for _, v := range strings.Fields(got) {
		k, _, _ := strings.Cut(v, "=")
		switch k {
		case "PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "PWD", "SHLVL", "_":
			// The shell itself sets PWD, SHLVL and _.
		default:
			t.Errorf("the filter's environment has %s", k)
		}
	}
	if !strings.Contains(got, "LANG=C.UTF-8") || !strings.Contains(got, "PATH=") {
		t.Errorf("environment %q: want PATH and LANG", got)
	}
}

// TestPostProcessStartFails: a program that cannot start types the text.
func TestPostProcessStartFails(t *testing.T) {
	var logs bytes.Buffer
	p := PostProcess{Argv: []string{filepath.Join(t.TempDir(), "missing")}, Timeout: time.Second}
	if got := p.Apply(context.Background(), slog.New(slog.NewTextHandler(&logs, nil)), said); got != said {
		t.Errorf("Apply = %q, want the text as it was", got)
	}
	checkLog(t, logs.String(), PostStartFailed)
}

// TestFinishPostProcess: Finish types and keeps the filter's output, after
// the replacements.
func TestFinishPostProcess(t *testing.T) {
	rec := &record{backend: "x11"}
	env := Env{Typer: rec, Decoder: rec, Report: rec, Separator: " ",
		PostProcess: PostProcess{Argv: []string{script(t, `tr a-z A-Z`)}, Timeout: 30 * time.Second}}
	env.Replace = []config.Replacement{{From: "yaz says", To: "YazSes"}}
	res, kept := Finish(context.Background(), env, hold.Result{Outcome: hold.Decoded, Text: "yaz says hi", Audio: time.Second})
	if res.Outcome != "typed" || kept != "YAZSES HI" || res.Chars != len("YAZSES HI") {
		t.Errorf("Finish = %+v, kept %q; want typed YAZSES HI", res, kept)
	}
	if got := strings.Join(rec.typed, ""); got != "YAZSES HI " {
		t.Errorf("typed %q, want %q", got, "YAZSES HI ")
	}
}
