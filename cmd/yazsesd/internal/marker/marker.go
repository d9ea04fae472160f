// Package marker is the budget's restart state: the single-instance lock
// and the crash marker, both in the state folder ($XDG_STATE_HOME/yazses,
// the audit log's), which every daemon of the user sees whatever its
// runtime folder (XDG_RUNTIME_DIR differs between a login shell, a systemd
// user manager and an MCP host's environment).
//
// The lock. A daemon takes an exclusive flock on lockName there before it
// listens (Lock, over safesocket.Lock), and writes its pid and socket into
// it: a second daemon of the user, whatever its environment, refuses to
// start and names the first (exit 125: a systemd unit does not loop on
// it). The runtime folder keeps its own lock for the socket
// (safesocket.Listen).
//
// The crash marker closes the crash-reset path of the budget. The budget
// lives in memory, in yaz-gate, and a daemon that starts begins a fresh
// one; a daemon that crashed (or was killed, by the kernel's OOM killer
// or anyone) is restarted by its unit, so without a marker a crash would
// hand out a fresh budget. So the daemon writes Name when it starts, with
// the boot's id, and removes it when it stops cleanly. A daemon that finds
// a marker of this boot starts its gate fully spent for the hour, as a
// crashed gate is restarted. The marker holds no history of questions:
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
package marker

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

const (
	// Name is the crash marker's file name.
	Name       = "yazsesd.running"
	lockName   = "yazsesd.lock"
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

// Lock takes the single-instance lock in the state folder dir (created
// 0700), naming socket as ours.
func Lock(dir, socket string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state folder: %w", err)
	}
	f, err := safesocket.Lock(filepath.Join(dir, lockName), socket)
	if err != nil {
		return nil, fmt.Errorf("one daemon per user (lock in %s): %w", dir, err)
	}
	return f, nil
}

// Marker is this daemon's crash marker in a state folder, and whether it
// is written.
//
// Its legacy path is where a daemon from before the marker moved to the
// state folder kept it: the runtime folder (the socket's). A new daemon
// started across an upgrade reads it as well (Unclean), so a kill of the
// old daemon still starts the new one spent, and removes it once its own
// marker is written (Write): it is never read twice.
type Marker struct {
	dir    string
	legacy string // the old marker's path; "" for none
	// writeFile writes the marker's temporary file (os.WriteFile, or a
	// test's full disk).
	writeFile func(name string, data []byte, perm os.FileMode) error

	mu        sync.Mutex
	written   bool
	err       error // why it is not written
	legacyErr error // why the legacy marker is still there (Write)
}

// New returns the marker in the state folder dir; legacy is the path of
// an older daemon's marker ("" for none). writeFile writes its temporary
// file; nil is os.WriteFile.
func New(dir, legacy string, writeFile func(name string, data []byte, perm os.FileMode) error) *Marker {
	if writeFile == nil {
		writeFile = os.WriteFile
	}
	return &Marker{dir: dir, legacy: legacy, writeFile: writeFile}
}

// Unclean reports whether the previous daemon ended uncleanly in this
// boot: its marker, in the state folder or the legacy one, is still there
// and is not proven to be of another boot.
func (m *Marker) Unclean() bool {
	if m.legacy != "" && checkMarker(m.legacy) {
		return true
	}
	return checkMarker(filepath.Join(m.dir, Name))
}

// checkMarker reports whether the marker at p says an unclean stop in
// this boot (see Unclean).
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

// Write writes the marker (a temporary file renamed into place) and
// records whether it is written; once written, it does nothing.
func (m *Marker) Write() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.written {
		return nil
	}
	p := filepath.Join(m.dir, Name)
	tmp := p + ".new"
	body := fmt.Sprintf("boot_id=%s\npid=%d\n", bootID(), os.Getpid())
	err := m.writeFile(tmp, []byte(body), 0o600)
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

// LegacyErr says why the legacy marker could not be removed (Write); nil
// when it was, or there was none.
func (m *Marker) LegacyErr() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.legacyErr
}

// Failing is why the marker is not written ("" when it is).
func (m *Marker) Failing() string {
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

// Stopped removes the marker: this daemon stopped cleanly.
func (m *Marker) Stopped() error {
	if err := os.Remove(filepath.Join(m.dir, Name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("crash marker: %w", err)
	}
	return nil
}
