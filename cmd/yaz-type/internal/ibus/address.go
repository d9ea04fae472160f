package ibus

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Address finds the IBus bus of the session described by env (the
// variables of a process of that session), as libibus does
// (ibus_get_address and ibus_get_socket_path in src/ibusshare.c):
//
//  1. IBUS_ADDRESS, when set;
//  2. otherwise the file IBUS_ADDRESS_FILE names, or
//     $XDG_CONFIG_HOME/ibus/bus/<machine id>-<host>-<display>
//     (XDG_CONFIG_HOME defaults to $HOME/.config), where the machine id is
//     the first line of /var/lib/dbus/machine-id or /etc/machine-id, and
//     host and display are "unix" and WAYLAND_DISPLAY in a Wayland session
//     (IBus 1.5.32 under GNOME Shell 48 writes <id>-unix-wayland-0, and
//     <id>-unix-0 besides), else come from DISPLAY (":1" is host "unix",
//     display 1; no DISPLAY is "unix" and 0), read for its IBUS_ADDRESS=
//     line. Where the Wayland file is missing, the DISPLAY one is read.
//
// libibus also drops the address when the IBUS_DAEMON_PID the file names
// is not running; Address does not (the daemon may run in another PID
// namespace, where that number means nothing here): a stale file's
// address simply does not connect.
func Address(env []string, machineIDFiles ...string) (string, error) {
	if a := getenv(env, "IBUS_ADDRESS"); a != "" {
		return a, nil
	}
	paths, err := AddressFiles(env, machineIDFiles...)
	if err != nil {
		return "", err
	}
	var data []byte
	path := ""
	for _, path = range paths {
		if data, err = os.ReadFile(path); err == nil {
			break
		}
	}
	if err != nil {
		return "", fmt.Errorf("ibus address file: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		if a, ok := strings.CutPrefix(line, "IBUS_ADDRESS="); ok && a != "" {
			return a, nil
		}
	}
	return "", fmt.Errorf("ibus address file %s has no IBUS_ADDRESS line", path)
}

// DefaultMachineIDFiles are where libibus reads the machine id, in order.
var DefaultMachineIDFiles = []string{"/var/lib/dbus/machine-id", "/etc/machine-id"}

// AddressFiles are the files ibus-daemon writes its address to, in the
// order Address reads them (see Address).
func AddressFiles(env []string, machineIDFiles ...string) ([]string, error) {
	if f := getenv(env, "IBUS_ADDRESS_FILE"); f != "" {
		return []string{f}, nil
	}
	if len(machineIDFiles) == 0 {
		machineIDFiles = DefaultMachineIDFiles
	}
	id := ""
	for _, f := range machineIDFiles {
		if b, err := os.ReadFile(f); err == nil && len(bytes.TrimSpace(b)) > 0 {
			id = string(bytes.TrimSpace(b))
			break
		}
	}
	if id == "" {
		return nil, errors.New("no machine id (/var/lib/dbus/machine-id, /etc/machine-id)")
	}
	host, number := "unix", "0"
	if d := getenv(env, "DISPLAY"); d != "" {
		h, rest, found := strings.Cut(d, ":")
		host = h
		if found {
			number, _, _ = strings.Cut(rest, ".")
		}
		if host == "" {
			host = "unix"
		}
	}
	config := getenv(env, "XDG_CONFIG_HOME")
	if config == "" {
		home := getenv(env, "HOME")
		if home == "" {
			return nil, errors.New("neither XDG_CONFIG_HOME nor HOME is set")
		}
		config = filepath.Join(home, ".config")
	}
	dir := filepath.Join(config, "ibus", "bus")
	var files []string
	if w := getenv(env, "WAYLAND_DISPLAY"); w != "" && !strings.Contains(w, "/") {
		files = append(files, filepath.Join(dir, id+"-unix-"+w))
	}
	return append(files, filepath.Join(dir, id+"-"+host+"-"+number)), nil
}

// getenv looks a variable up in env (the last one wins, as in exec).
func getenv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
