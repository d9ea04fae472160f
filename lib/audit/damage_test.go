package audit

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fullTmpfs mounts a small tmpfs on a temporary folder (root only: CI runs
// as root) and returns the folder and a func that fills every free byte of
// it with a filler file, returning a func that frees the space again.
func fullTmpfs(t *testing.T) (dir string, fill func() (free func())) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root (CI runs as root)")
	}
	dir = t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	fill = func() func() {
		t.Helper()
		filler := filepath.Join(dir, "filler")
		f, err := os.OpenFile(filler, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, 4096)
		for {
			if _, err := f.Write(buf); err != nil {
				break
			}
		}
		for {
			if _, err := f.Write(buf[:1]); err != nil {
				break
			}
		}
		return func() { os.Remove(filler) }
	}
	return dir, fill
}

// paddedLine is a valid event line of exactly n bytes with its newline.
func paddedLine(t *testing.T, kind string, n int) string {
	t.Helper()
	head := `{"time":"2026-01-01T00:00:00Z","kind":"` + kind + `"`
	pad := n - len(head) - len("}\n")
	if pad < 0 {
		t.Fatalf("line of %d bytes is too short for %s", n, kind)
	}
	return head + strings.Repeat(" ", pad) + "}\n"
}

// TestWriteWholeOrNothing: on a full file system a record is written whole
// or not at all. A short write is taken back, so the next record, once
// there is room, is not glued to a partial one and lost.
func TestWriteWholeOrNothing(t *testing.T) {
	dir, fill := fullTmpfs(t)
	path := filepath.Join(dir, FileName)
	// The first record ends 40 bytes before a page boundary: a longer
	// record on a full tmpfs is written short (40 bytes, then ENOSPC).
	if err := os.WriteFile(path, []byte(paddedLine(t, "ask.spoken", 4096-40)), 0o600); err != nil {
		t.Fatal(err)
	}
	l := openT(t, path, 1<<20, 1)
	free := fill()
	err := l.Write(Event{Kind: "ask.reserved", PeerPID: 12345, Duration: time.Second})
	if err == nil {
		t.Fatal("Write on a full file system = nil, want an error")
	}
	if !l.Failing() {
		t.Error("Failing() = false after a failed write")
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 4096-40 {
		t.Fatalf("after the failed write the log is %v bytes (%v), want %d: a partial record was left", fi.Size(), err, 4096-40)
	}
	free()
	if err := l.Write(Event{Kind: "ask.answered", Count: 3}); err != nil {
		t.Fatalf("Write with room again: %v", err)
	}
	if l.Failing() {
		t.Error("Failing() = true after a write succeeded again")
	}
	got, err := Read(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range got {
		kinds = append(kinds, e.Kind)
	}
	if diff := cmp.Diff([]string{"ask.spoken", "ask.answered"}, kinds); diff != "" {
		t.Errorf("events after a full disk (-want +got):\n%s", diff)
	}
}

// TestOpenEndsPartialLine: a log whose last record was cut (the daemon was
// killed mid-write) gets a newline first, so the next record stands alone.
func TestOpenEndsPartialLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	first := `{"time":"2026-01-01T00:00:00Z","kind":"ask.spoken"}` + "\n"
	if err := os.WriteFile(path, []byte(first+`{"time":"2026-01-01T00:00:01Z","ki`), 0o600); err != nil {
		t.Fatal(err)
	}
	l := openT(t, path, 1<<20, 1)
	if err := l.Write(Event{Kind: "ask.refused", Reason: "budget_exhausted"}); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range got {
		kinds = append(kinds, e.Kind)
	}
	if diff := cmp.Diff([]string{"ask.spoken", KindDamaged, "ask.refused"}, kinds); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestFailingOnOpenError: a log whose file cannot be reopened (its folder
// is gone) reports Failing until a write succeeds.
func TestFailingOnOpenError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, FileName)
	l := openT(t, path, 200, 0) // every second line rotates (reopens)
	if l.Failing() {
		t.Fatal("Failing() on a fresh log")
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o600); err != nil { // a file where the folder was
		t.Fatal(err)
	}
	var err error
	for i := 0; i < 4 && err == nil; i++ {
		err = l.Write(Event{Kind: "ask.spoken", PeerPID: 1000 + i})
	}
	if err == nil || !l.Failing() {
		t.Fatalf("writes with the folder gone: err %v, Failing %v; want an error and true", err, l.Failing())
	}
	if !errors.Is(err, syscall.ENOTDIR) {
		t.Logf("error: %v", err)
	}
}
