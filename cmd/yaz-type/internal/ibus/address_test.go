package ibus

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAddress: the address comes from IBUS_ADDRESS, else from the file
// libibus names for the session (machine id, DISPLAY's host and number,
// XDG_CONFIG_HOME or HOME/.config), read for its IBUS_ADDRESS line.
func TestAddress(t *testing.T) {
	dir := t.TempDir()
	id := filepath.Join(dir, "machine-id")
	if err := os.WriteFile(id, []byte("abc123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(path, addr string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		body := "# This file is created by ibus-daemon, please do not modify it\nIBUS_ADDRESS=" + addr + "\nIBUS_DAEMON_PID=4242\n"
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "cfg")
	home := filepath.Join(dir, "home")
	write(filepath.Join(cfg, "ibus", "bus", "abc123-unix-0"), "unix:path=/x0")
	write(filepath.Join(cfg, "ibus", "bus", "abc123-unix-wayland-1"), "unix:path=/w1")
	write(filepath.Join(cfg, "ibus", "bus", "abc123-unix-1"), "unix:path=/x1")
	write(filepath.Join(cfg, "ibus", "bus", "abc123-host-2"), "unix:path=/h2")
	write(filepath.Join(home, ".config", "ibus", "bus", "abc123-unix-0"), "unix:path=/home0")
	named := filepath.Join(dir, "named")
	write(named, "unix:path=/named")

	for _, c := range []struct {
		name string
		env  []string
		want string
	}{
		{"IBUS_ADDRESS wins", []string{"IBUS_ADDRESS=unix:path=/env", "XDG_CONFIG_HOME=" + cfg}, "unix:path=/env"},
		{"IBUS_ADDRESS_FILE", []string{"IBUS_ADDRESS_FILE=" + named, "XDG_CONFIG_HOME=" + cfg}, "unix:path=/named"},
		{"no DISPLAY is unix-0", []string{"XDG_CONFIG_HOME=" + cfg}, "unix:path=/x0"},
		{"Wayland first", []string{"XDG_CONFIG_HOME=" + cfg, "WAYLAND_DISPLAY=wayland-1", "DISPLAY=:1"}, "unix:path=/w1"},
		{"no Wayland file: DISPLAY's", []string{"XDG_CONFIG_HOME=" + cfg, "WAYLAND_DISPLAY=wayland-0"}, "unix:path=/x0"},
		{"DISPLAY :1.0", []string{"XDG_CONFIG_HOME=" + cfg, "DISPLAY=:1.0"}, "unix:path=/x1"},
		{"DISPLAY host:2", []string{"XDG_CONFIG_HOME=" + cfg, "DISPLAY=host:2"}, "unix:path=/h2"},
		{"HOME/.config", []string{"HOME=" + home}, "unix:path=/home0"},
	} {
		got, err := Address(c.env, id)
		if err != nil || got != c.want {
			t.Errorf("%s: Address = %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	if got, err := Address([]string{"XDG_CONFIG_HOME=" + cfg, "DISPLAY=:7"}, id); err == nil {
		t.Errorf("no file for display 7: Address = %q, want an error", got)
	}
	if got, err := Address([]string{"XDG_CONFIG_HOME=" + cfg}, filepath.Join(dir, "none")); err == nil {
		t.Errorf("no machine id: Address = %q, want an error", got)
	}
}
