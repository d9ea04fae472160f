package wayland_test

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/yazses/yazses/internal/testbin"
)

// TestPipelineTypesIntoFoot: the yaz-type program, started with an empty
// environment (the compositor's variables alone: no LANG, the C locale),
// types its arguments and each line of stdin into foot under headless
// sway exactly, and exits 0.
func TestPipelineTypesIntoFoot(t *testing.T) {
	prog := testbin.Program(t, "yaz-type")
	env := startSway(t)
	rec := startFoot(t, env)
	var session []string
	for _, kv := range env {
		for _, k := range []string{"XDG_RUNTIME_DIR=", "WAYLAND_DISPLAY=", "SWAYSOCK="} {
			if strings.HasPrefix(kv, k) {
				session = append(session, kv)
			}
		}
	}
	want := ""
	for _, c := range []struct {
		args  []string
		stdin string
		typed string
	}{
		{[]string{"Grüße aus Köln —", "ψυχή, 日本語 ✓ 😀"}, "", "Grüße aus Köln — ψυχή, 日本語 ✓ 😀"},
		{nil, "\nzwei\tZeilen\r\nund € @ ~\n", "zwei Zeilen und € @ ~"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, prog, c.args...)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}, session...)
		cmd.Stdin = strings.NewReader(c.stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Fatalf("yaz-type %q: %v: %s", c.args, err, stderr.String())
		}
		want += c.typed
		rec.WaitFor(t, want)
	}
}
