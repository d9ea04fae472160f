package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// The crash marker closes the crash-reset path of the budget. The budget
// lives in memory, in yaz-gate, and a daemon that starts begins a fresh
// one; a daemon that crashed (or was killed, by the kernel's OOM killer
// or anyone) is restarted by its unit, so without a marker a crash would
// hand out a fresh budget. So the daemon writes markerName into its
// runtime folder (the socket's, 0700, this user's, on a tmpfs that a
// reboot empties) when it starts, with the boot's id, and removes it when
// it stops cleanly. A daemon that finds a marker of this boot starts its
// gate fully spent for the hour, as a crashed gate is restarted. The
// marker holds no history of questions: only the boot id and a pid.
//
// A clean stop (SIGTERM, SIGINT) or a reboot starts fresh, as documented.

const (
	markerName = "yazsesd.running"
	bootIDPath = "/proc/sys/kernel/random/boot_id"
)

// bootID is this boot's id; "" when it cannot be read.
func bootID() string {
	b, err := os.ReadFile(bootIDPath)
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
}

// markRunning writes the marker in dir and reports whether the previous
// daemon ended uncleanly in this boot: its marker is still there and names
// this boot. A marker that cannot be read counts as unclean (fail closed).
func markRunning(dir string) (unclean bool, err error) {
	p := filepath.Join(dir, markerName)
	boot := bootID()
	b, rerr := os.ReadFile(p)
	switch {
	case rerr == nil:
		prev, _ := parseMarker(b)
		unclean = prev == boot // an older boot's marker: rebooted since
	case !errors.Is(rerr, fs.ErrNotExist):
		unclean = true
	}
	tmp := p + ".new"
	body := fmt.Sprintf("boot_id=%s\npid=%d\n", boot, os.Getpid())
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		return unclean, fmt.Errorf("crash marker: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return unclean, fmt.Errorf("crash marker: %w", err)
	}
	return unclean, nil
}

// parseMarker returns the boot id and pid a marker names.
func parseMarker(b []byte) (boot string, pid int) {
	for _, line := range bytes.Split(b, []byte("\n")) {
		k, v, _ := bytes.Cut(line, []byte("="))
		switch string(k) {
		case "boot_id":
			boot = string(v)
		case "pid":
			pid, _ = strconv.Atoi(string(v))
		}
	}
	return boot, pid
}

// markStopped removes the marker: this daemon stopped cleanly.
func markStopped(dir string) error {
	if err := os.Remove(filepath.Join(dir, markerName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("crash marker: %w", err)
	}
	return nil
}
