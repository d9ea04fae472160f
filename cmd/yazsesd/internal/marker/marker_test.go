package marker

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/yazses/yazses/lib/safesocket"
)

// The crash marker: a start after a start without a clean stop is
// unclean; a clean stop, or a marker of another boot, starts fresh.
func TestMarker(t *testing.T) {
	m := New(t.TempDir(), "", nil)
	step := func(want bool) {
		t.Helper()
		if unclean := m.Unclean(); unclean != want {
			t.Errorf("check = %v; want %v", unclean, want)
		}
		m.written = false // as a new daemon
		if err := m.Write(); err != nil {
			t.Fatal(err)
		}
	}
	step(false) // first start
	step(true)  // killed, started again
	if err := m.Stopped(); err != nil {
		t.Fatal(err)
	}
	step(false) // after a clean stop
	p := filepath.Join(m.dir, Name)
	b, _ := os.ReadFile(p)
	if boot, pid, ok := parseMarker(b); !ok || boot != bootID() || pid != os.Getpid() {
		t.Errorf("marker %q", b)
	}
	// A marker left by another boot (the folder survived a reboot).
	if err := os.WriteFile(p, []byte("boot_id=another-boot\npid=12\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	step(false)
}

// TestMarkerDamagedCountsUnclean: a marker that exists
// but cannot be read as one of another boot counts as an unclean stop
// (fail closed): empty, cut short, garbage, a symlink (dangling, or to a
// well-formed marker of another boot), a folder. Only a well-formed
// marker of another boot, or none, starts fresh.
func TestMarkerDamagedCountsUnclean(t *testing.T) {
	other := filepath.Join(t.TempDir(), "other")
	if err := os.WriteFile(other, []byte("boot_id=another-boot\npid=12\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		make    func(p string) error
		unclean bool
	}{
		{"none", func(string) error { return nil }, false},
		{"another boot", func(p string) error { return os.WriteFile(p, []byte("boot_id=another-boot\npid=12\n"), 0o600) }, false},
		{"this boot", func(p string) error {
			return os.WriteFile(p, []byte("boot_id="+bootID()+"\npid=12\n"), 0o600)
		}, true},
		{"empty", func(p string) error { return os.WriteFile(p, nil, 0o600) }, true},
		{"cut short", func(p string) error { return os.WriteFile(p, []byte("boot_id=another-bo"), 0o600) }, true},
		{"no pid", func(p string) error { return os.WriteFile(p, []byte("boot_id=another-boot\n"), 0o600) }, true},
		{"garbage", func(p string) error { return os.WriteFile(p, []byte("\x00\xff\xfe garbage\n"), 0o600) }, true},
		{"dangling symlink", func(p string) error { return os.Symlink(filepath.Join(filepath.Dir(p), "gone"), p) }, true},
		{"symlink to another boot's marker", func(p string) error { return os.Symlink(other, p) }, true},
		{"folder", func(p string) error { return os.Mkdir(p, 0o700) }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := New(t.TempDir(), "", nil)
			if err := c.make(filepath.Join(m.dir, Name)); err != nil {
				t.Fatal(err)
			}
			if got := m.Unclean(); got != c.unclean {
				t.Errorf("check = %v, want unclean %v", got, c.unclean)
			}
		})
	}
}

// TestWriteFailsClosed: a marker that cannot be written (ENOSPC) is not
// written: Write fails, Failing says why with the cause, and nothing is
// left in the folder, not even the temporary file; the next Write tries
// again, and once it succeeds Failing is empty and Write does nothing
// more (one write per daemon).
func TestWriteFailsClosed(t *testing.T) {
	dir := t.TempDir()
	full, writes := true, 0
	m := New(dir, "", func(name string, data []byte, perm os.FileMode) error {
		writes++
		if full {
			os.WriteFile(name, data[:1], perm) // the disk filled up mid-write
			return &os.PathError{Op: "write", Path: name, Err: syscall.ENOSPC}
		}
		return os.WriteFile(name, data, perm)
	})
	if err := m.Write(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Write on a full disk = %v, want ENOSPC", err)
	}
	if f := m.Failing(); !strings.Contains(f, "crash marker") || !strings.Contains(f, "no space left") {
		t.Errorf("Failing() = %q, want the crash marker and the cause", f)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files left after a failed write: %v", ents)
	}
	full = false
	if err := m.Write(); err != nil {
		t.Fatalf("Write once there is room = %v", err)
	}
	if f := m.Failing(); f != "" {
		t.Errorf("Failing() = %q once written, want empty", f)
	}
	if err := m.Write(); err != nil || writes != 2 {
		t.Errorf("a second Write = %v after %d writes, want nil after 2", err, writes)
	}
	if _, err := os.Stat(filepath.Join(dir, Name)); err != nil {
		t.Errorf("no marker: %v", err)
	}
}

// TestLegacyRemovedOnWrite: an older daemon's marker (in the runtime
// folder) counts for Unclean, and is removed once this marker is written,
// so it is read once; one that cannot be removed is LegacyErr. A legacy
// path that is the marker itself is left alone.
func TestLegacyRemovedOnWrite(t *testing.T) {
	for _, c := range []struct {
		name    string
		make    func(p string) error
		unclean bool
		stays   bool // it cannot be removed
	}{
		{"none", func(string) error { return nil }, false, false},
		{"this boot", func(p string) error {
			return os.WriteFile(p, []byte("boot_id="+bootID()+"\npid=12\n"), 0o600)
		}, true, false},
		{"another boot", func(p string) error {
			return os.WriteFile(p, []byte("boot_id=another-boot\npid=12\n"), 0o600)
		}, false, false},
		{"a folder with a file in it", func(p string) error {
			if err := os.Mkdir(p, 0o700); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(p, "x"), nil, 0o600)
		}, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			legacy := filepath.Join(t.TempDir(), Name)
			if err := c.make(legacy); err != nil {
				t.Fatal(err)
			}
			m := New(t.TempDir(), legacy, nil)
			if got := m.Unclean(); got != c.unclean {
				t.Errorf("Unclean() = %v, want %v", got, c.unclean)
			}
			if err := m.Write(); err != nil {
				t.Fatal(err)
			}
			_, err := os.Lstat(legacy)
			if gone := errors.Is(err, fs.ErrNotExist); gone == c.stays {
				t.Errorf("legacy marker gone = %v after Write, want %v", gone, !c.stays)
			}
			if (m.LegacyErr() != nil) != c.stays {
				t.Errorf("LegacyErr() = %v, want an error %v", m.LegacyErr(), c.stays)
			}
		})
	}
	dir := t.TempDir()
	m := New(dir, filepath.Join(dir, Name), nil)
	if err := m.Write(); err != nil || m.LegacyErr() != nil {
		t.Fatalf("Write = %v, LegacyErr = %v", err, m.LegacyErr())
	}
	if _, err := os.Stat(filepath.Join(dir, Name)); err != nil {
		t.Errorf("the marker, named as its own legacy path, was removed: %v", err)
	}
}

// TestLock: one holder per state folder; a second Lock, from another
// runtime folder, names the first one's pid and socket; once the first
// lets go, the lock can be taken again.
func TestLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	first, err := Lock(dir, "/run/one/yazsesd.sock")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("state folder %v (%v), want mode 0700", st, err)
	}
	_, err = Lock(dir, "/run/two/yazsesd.sock")
	var are *safesocket.AlreadyRunningError
	if !errors.As(err, &are) || are.PID != os.Getpid() || are.Socket != "/run/one/yazsesd.sock" {
		t.Errorf("second Lock = %v, want AlreadyRunningError naming pid %d and /run/one/yazsesd.sock", err, os.Getpid())
	}
	first.Close()
	again, err := Lock(dir, "/run/two/yazsesd.sock")
	if err != nil {
		t.Fatalf("Lock after the first let go = %v", err)
	}
	again.Close()
}
