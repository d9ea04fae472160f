package sdnotify

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/yazses/yazses/internal/testwait"
	"github.com/yazses/yazses/lib/xdp"
)

// unitPath is the shipped systemd user unit that talks to this package.
func unitPath(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "packaging", "systemd", "app-"+xdp.AppID+".service")
}

// verify runs `systemd-analyze --user verify` on a unit, with a private
// HOME that holds an executable ~/.local/bin/yazsesd, and returns what it
// printed.
func verify(t *testing.T, unit string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Fatalf("systemd-analyze is needed (package systemd): %v", err)
	}
	home := t.TempDir()
	bin := filepath.Join(home, ".local", "bin")
	os.MkdirAll(bin, 0o755)
	if err := os.WriteFile(filepath.Join(bin, "yazsesd"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	rt := t.TempDir()
	cmd := exec.CommandContext(testwait.Context(t), "systemd-analyze", "--user", "--man=no", "verify", unit)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_RUNTIME_DIR="+rt, "SYSTEMD_LOG_COLOR=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func TestShippedUnit(t *testing.T) {
	path := unitPath(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := verify(t, path)
	if err != nil || strings.TrimSpace(out) != "" {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	keys := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			keys[k] = v
		}
	}
	for k, want := range map[string]string{
		"Type":                     "notify",
		"ExecStart":                "%h/.local/bin/yazsesd run",
		"ExecReload":               "/bin/kill -HUP $MAINPID",
		"Restart":                  "on-failure",
		"RestartPreventExitStatus": "125",
		"NoNewPrivileges":          "yes",
		"RestrictAddressFamilies":  "AF_UNIX",
		"After":                    "graphical-session.target",
		"Alias":                    "yazsesd.service",
	} {
		if keys[k] != want {
			t.Errorf("%s=%q, want %q", k, keys[k], want)
		}
	}
	// Settings that would cut off audio, typing or the hotkey.
	for _, k := range []string{"PrivateDevices", "PrivateTmp", "DevicePolicy", "IPAddressDeny"} {
		if _, ok := keys[k]; ok {
			t.Errorf("%s is set", k)
		}
	}
	// The check above can fail: a broken copy is reported.
	bad := filepath.Join(t.TempDir(), "yazsesd.service")
	os.WriteFile(bad, bytes.Replace(data, []byte("RestrictAddressFamilies=AF_UNIX"), []byte("RestrictAddressFamilies=AF_UNIXX"), 1), 0o644)
	if out, _ := verify(t, bad); !strings.Contains(out, "AF_UNIXX") {
		t.Errorf("a broken unit verified cleanly: %q", out)
	}
}
