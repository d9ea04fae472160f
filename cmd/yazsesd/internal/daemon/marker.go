package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/yazses/yazses/lib/safesocket"
)

// The budget's restart state: the single-instance lock and the crash
// marker, both in the state folder ($XDG_STATE_HOME/yazses, the audit
// log's), which every daemon of the user sees whatever its runtime folder
// (XDG_RUNTIME_DIR differs between a login shell, a systemd user manager
// and an MCP host's environment).
//
// The lock. A daemon takes an exclusive flock on lockName there before it
// listens (safesocket.Lock), and writes its pid and socket into it: a
// second daemon of the user, whatever its environment, refuses to start
// and names the first (exit 125: a systemd unit does not loop on it). The
// runtime folder keeps its own lock for the socket (safesocket.Listen).
//
// The crash marker closes the crash-reset path of the budget. The budget
// lives in memory, in yaz-gate, and a daemon that starts begins a fresh
// one; a daemon that crashed (or was killed, by the kernel's OOM killer
// or anyone) is restarted by its unit, so without a marker a crash would
// hand out a fresh budget. So the daemon writes markerName when it starts,
// with the boot's id, and removes it when it stops cleanly. A daemon that
// finds a marker of this boot starts its gate fully spent for the hour, as
// a crashed gate is restarted. The marker holds no history of questions:
// only the boot id and a pid. A marker that cannot be read as one of
// another boot (empty, cut short, garbage, a symlink, not a regular file)
// counts as of this boot: unclean (fail closed).
//
// A daemon that cannot write its marker (the folder is full, say) could
// crash unnoticed, so it speaks no question until the marker is written
// (fail closed): ask_human answers unavailable, reason state_unavailable,
// status says why (state_failing), and each ask_human tries again first.
// Dictation goes on.
//
// A clean stop (SIGTERM, SIGINT) or a reboot starts fresh, as documented.

const (
	markerName = "yazsesd.running"
	lockName   = "yazsesd.lock"
	bootIDPath = "/proc/sys/kernel/random/boot_id"
)

// writeFile writes the marker's temporary file; tests replace it (a full
// disk).
var writeFile = os.WriteFile

// bootID is this boot's id; "" when it cannot be read.
func bootID() string {
	b, err := os.ReadFile(bootIDPath)
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
}

// lockInstance takes the single-instance lock in the state folder dir
// (created 0700), naming socket as ours.
func lockInstance(dir, socket string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state folder: %w", err)
	}
	f, err := safesocket.Lock(filepath.Join(dir, lockName), socket)
	if err != nil {
		return nil, fmt.Errorf("one daemon per user (lock in %s): %w", dir, err)
	}
	return f, nil
}

// marker is this daemon's crash marker in dir, and whether it is written.
//
// legacy is where a daemon from before the marker moved to the state
// folder kept it: the runtime folder (the socket's). A new daemon started
// across an upgrade reads it as well (check), so a kill of the old daemon
// still starts the new one spent, and removes it once its own marker is
// written (write): it is never read twice.
type marker struct {
	dir    string
	legacy string // the old marker's path; "" for none

	mu        sync.Mutex
	written   bool
	err       error // why it is not written
	legacyErr error // why the legacy marker is still there (write)
}

// check reports whether the previous daemon ended uncleanly in this boot:
// its marker, in the state folder or the legacy one, is still there and is
// not proven to be of another boot.
func (m *marker) check() (unclean bool) {
	if m.legacy != "" && checkMarker(m.legacy) {
		return true
	}
	return checkMarker(filepath.Join(m.dir, markerName))
}

// checkMarker reports whether the marker at p says an unclean stop in
// this boot (see check).
func checkMarker(p string) (unclean bool) {
	var st unix.Stat_t
	switch err := unix.Lstat(p, &st); {
	case errors.Is(err, unix.ENOENT):
		return false // a clean stop, or the first start
	case err != nil:
		return true
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return true // a symlink, a folder: not ours
	}
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return true
	}
	defer f.Close()
	b := make([]byte, 256)
	n, _ := f.Read(b)
	prev, pid, ok := parseMarker(b[:n])
	boot := bootID()
	return !ok || pid <= 0 || boot == "" || prev == boot // another boot's: rebooted since
}

// write writes the marker (a temporary file renamed into place) and
// records whether it is written.
func (m *marker) write() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.written {
		return nil
	}
	p := filepath.Join(m.dir, markerName)
	tmp := p + ".new"
	body := fmt.Sprintf("boot_id=%s\npid=%d\n", bootID(), os.Getpid())
	err := writeFile(tmp, []byte(body), 0o600)
	if err == nil {
		if err = os.Rename(tmp, p); err != nil {
			os.Remove(tmp)
		}
	} else {
		os.Remove(tmp)
	}
	if err != nil {
		m.err = fmt.Errorf("the crash marker cannot be written in %s: %w", m.dir, err)
		return m.err
	}
	m.written, m.err = true, nil
	if m.legacy != "" && m.legacy != p { // one folder for both: nothing to remove
		// What the old marker said is in this start now (spent, if it
		// was unclean); this marker stands for this daemon from here.
		if err := os.Remove(m.legacy); err != nil && !errors.Is(err, fs.ErrNotExist) {
			m.legacyErr = fmt.Errorf("the legacy crash marker cannot be removed: %w", err)
		}
	}
	return nil
}

// failing is why the marker is not written ("" when it is).
func (m *marker) failing() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.written || m.err == nil {
		return ""
	}
	return m.err.Error()
}

// parseMarker returns the boot id and pid a marker names; ok is false
// unless it is exactly a marker as write makes it.
func parseMarker(b []byte) (boot string, pid int, ok bool) {
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	if len(lines) != 2 {
		return "", 0, false
	}
	for _, line := range lines {
		k, v, _ := bytes.Cut(line, []byte("="))
		switch string(k) {
		case "boot_id":
			boot = string(v)
		case "pid":
			pid, _ = strconv.Atoi(string(v))
		}
	}
	return boot, pid, boot != "" && pid > 0
}

// stopped removes the marker: this daemon stopped cleanly.
func (m *marker) stopped() error {
	if err := os.Remove(filepath.Join(m.dir, markerName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("crash marker: %w", err)
	}
	return nil
}
